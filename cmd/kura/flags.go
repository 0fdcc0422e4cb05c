package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kura-backup/kura/internal/compress"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/units"
)

// The one place where the command line's sizes, rates, counts and enums
// are read and checked. Each is a pflag.Value: a bad value fails while
// cobra parses the flags, and the flag error function makes that a usage
// error (exit 2) naming the flag, before any command runs. A flag not
// given keeps its zero value, which the command reads as "the default";
// a value given is never 0 unless 0 is in range (so "--tape-size 0" is
// refused, not taken for the default).

// sizeFlag is a size in bytes ("256KiB", "64GiB") within [min, max].
type sizeFlag struct {
	v        int64
	min, max int64
	// unit, when set, is a multiple the size must be of (a block size in
	// 512-byte sectors).
	unit int64
}

var _ pflag.Value = (*sizeFlag)(nil)

func (f *sizeFlag) Set(s string) error {
	n, err := units.ParseSize(s)
	if err != nil {
		return err
	}
	if n < f.min || n > f.max {
		return fmt.Errorf("want %s to %s", units.FormatSize(f.min), units.FormatSize(f.max))
	}
	if f.unit > 0 && n%f.unit != 0 {
		return fmt.Errorf("want a multiple of %d bytes", f.unit)
	}
	f.v = n
	return nil
}

func (f *sizeFlag) String() string {
	if f.v == 0 {
		return ""
	}
	return units.FormatSize(f.v)
}

func (f *sizeFlag) Type() string { return "size" }

// countFlag is a whole number within [min, max].
type countFlag struct {
	p        *int
	min, max int
}

var _ pflag.Value = (*countFlag)(nil)

func (f *countFlag) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("%q is not a whole number", s)
	}
	if n < f.min || n > f.max {
		return fmt.Errorf("want %d to %d", f.min, f.max)
	}
	*f.p = n
	return nil
}

func (f *countFlag) String() string {
	if f.p == nil {
		return "0"
	}
	return strconv.Itoa(*f.p)
}

func (f *countFlag) Type() string { return "int" }

// enumFlag is one of a few words, matched case-insensitively and kept in
// its canonical (lower-case) spelling.
type enumFlag struct {
	p     *string
	words []string
}

var _ pflag.Value = (*enumFlag)(nil)

func (f *enumFlag) Set(s string) error {
	w, err := oneOf(s, f.words...)
	if err != nil {
		return err
	}
	*f.p = w
	return nil
}

func (f *enumFlag) String() string {
	if f.p == nil {
		return ""
	}
	return *f.p
}

func (f *enumFlag) Type() string { return "string" }

// oneOf returns the word of words that s names, ignoring case and
// surrounding blanks.
func oneOf(s string, words ...string) (string, error) {
	t := strings.TrimSpace(s)
	for _, w := range words {
		if strings.EqualFold(t, w) {
			return w, nil
		}
	}
	return "", fmt.Errorf("unknown value %q: want %s", s, orList(words))
}

// orList writes "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// Constructors that register a checked flag and return where its value lands.

func sizeVar(fs *pflag.FlagSet, name string, min, max int64, usage string) *sizeFlag {
	f := &sizeFlag{min: min, max: max}
	fs.Var(f, name, usage)
	return f
}

// blockSizeVar is a drive's --block-size: 4 KiB to 16 MiB in 512-byte
// sectors.
func blockSizeVar(fs *pflag.FlagSet, usage string) *sizeFlag {
	f := &sizeFlag{min: library.MinBlockSize, max: library.MaxBlockSize, unit: library.BlockSizeUnit}
	fs.Var(f, "block-size", usage)
	return f
}

// intVar registers a count flag: p gets def, or the value given, which
// must be within [min, max]. A default outside the range (0 for "not
// given") can only come from not giving the flag.
func intVar(fs *pflag.FlagSet, p *int, name string, def, min, max int, usage string) {
	*p = def
	fs.Var(&countFlag{p: p, min: min, max: max}, name, usage)
}

// enumVar registers a flag whose value is one of words, in any case; p
// gets the canonical word.
func enumVar(fs *pflag.FlagSet, p *string, name, def string, words []string, usage string) {
	*p = def
	fs.Var(&enumFlag{p: p, words: words}, name, usage)
}

// The enum flags' words.
var (
	backupLevels   = []string{engine.LevelFull, engine.LevelIncr, engine.LevelDiff}
	verifyLevels   = []string{engine.VerifyMedia, engine.VerifyData, engine.VerifySource}
	overwriteWords = []string{engine.OverwriteNever, engine.OverwriteOlder, engine.OverwriteAlways}
	compressWords  = compress.LevelNames()
)
