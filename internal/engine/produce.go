package engine

import "github.com/kura-backup/kura/internal/producer"

// The producer half of a backup (walk, read, pax, compressed frames, the
// index) lives in internal/producer, so that an agent runs it without the
// engine and its catalog. These names keep the engine's callers as they
// were.
type (
	ProduceSpec   = producer.Spec
	ProduceHooks  = producer.Hooks
	Produced      = producer.Produced
	Producer      = producer.Producer
	LocalProducer = producer.Local
	SpanTarget    = producer.SpanTarget
)

// ErrBadIndex: an index from an untrusted producer does not read back, or
// does not match the stream that went to tape.
var ErrBadIndex = producer.ErrBadIndex
