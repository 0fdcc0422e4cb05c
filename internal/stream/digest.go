package stream

import "github.com/zeebo/xxh3"

// A Digest hasher computes the content digest the index stores for every
// file: XXH3-128 of the content as stored in the stream.
type Digest = xxh3.Hasher

// NewDigest returns a hasher for content digests.
func NewDigest() *Digest { return xxh3.New() }

// SumDigest returns the digest of what was written to h.
func SumDigest(h *Digest) [16]byte { return h.Sum128().Bytes() }
