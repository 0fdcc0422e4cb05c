// Package compress is Kura's codec table: the compression levels a user
// chooses (none, low, medium, high, auto), the permanent codec IDs that say
// how a frame on media was produced, and the per-frame encoder that turns a
// frame of stream bytes into one standard zstd frame with a content checksum.
//
// Invariants:
//   - Every frame this package produces, whatever the level, is a single
//     standard zstd frame (RFC 8878) with the Content_Checksum flag set, so
//     stock `zstd -dc` decodes and verifies it. Level none writes that frame
//     itself, as Raw_Blocks (see AppendRawFrame).
//   - Codec IDs are stored on media and are permanent: an ID is never reused
//     and never changes meaning. New codecs get new IDs.
//   - Nothing here prints; the Auto controller is pure logic fed with
//     observations, so its decisions are testable.
package compress

import (
	"errors"
	"fmt"
	"strings"
)

// Level is the compression level a user asks for. Level values are not
// stored on media (the Codec is); their names are (in saveset labels), so
// the names are permanent. low < medium < high compare in order of effort.
type Level uint8

const (
	LevelAuto   Level = iota // the zero value: probe each frame; adapt the level to the sink
	LevelNone                // store: a zstd frame of raw blocks
	LevelLow                 // fastest zstd
	LevelMedium              // zstd default-like
	LevelHigh                // best ratio a backup can afford
)

// ErrUnknownLevel is returned by ParseLevel for a name it does not know.
var ErrUnknownLevel = errors.New("compress: unknown level")

var levelNames = [...]string{"auto", "none", "low", "medium", "high"}

// String returns the level's name as ParseLevel accepts it.
// LevelNames returns the names ParseLevel accepts, in Level order.
func LevelNames() []string { return append([]string(nil), levelNames[:]...) }

func (l Level) String() string {
	if int(l) < len(levelNames) {
		return levelNames[l]
	}
	return fmt.Sprintf("level(%d)", uint8(l))
}

// Valid reports whether l is one of the defined levels.
func (l Level) Valid() bool { return int(l) < len(levelNames) }

// ParseLevel parses a level name (case-insensitive). "" means auto.
func ParseLevel(s string) (Level, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return LevelAuto, nil
	}
	for i, n := range levelNames {
		if s == n {
			return Level(i), nil
		}
	}
	return 0, fmt.Errorf("%w %q: want one of none, low, medium, high, auto", ErrUnknownLevel, s)
}

// Codec identifies on media how a frame's bytes were produced. The values
// are permanent: never reuse or renumber one.
type Codec uint8

const (
	// CodecRaw: a zstd frame of Raw_Blocks with content checksum, written by
	// AppendRawFrame (level none, and incompressible frames under auto).
	CodecRaw Codec = 0
	// CodecZstd: a zstd frame with content checksum written by a zstd
	// compressor (klauspost/compress), any level.
	CodecZstd Codec = 1
)

// String returns the codec's name as written in labels.
func (c Codec) String() string {
	switch c {
	case CodecRaw:
		return "zstd-raw"
	case CodecZstd:
		return "zstd"
	}
	return fmt.Sprintf("codec(%d)", uint8(c))
}
