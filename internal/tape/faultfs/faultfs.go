// Package faultfs wraps a tape.FS and injects write and sync faults: ENOSPC,
// EIO and short writes, after a number of bytes or on the Nth write or sync.
package faultfs

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/kura-backup/kura/internal/tape"
)

// Op is the file operation a Rule fails.
type Op int

const (
	Write Op = iota // File.Write
	Sync            // File.Sync
)

// Rule says when to fail. Exactly one trigger is used: AfterBytes if
// positive, else the Nth matching operation (1-based).
type Rule struct {
	// Match selects files whose base name ends with it ("" = every file),
	// e.g. ".data" or ".crc".
	Match string
	Op    Op
	// AfterBytes fails every matching write that would take the bytes
	// written to matching files past AfterBytes (a full disk stays full).
	AfterBytes int64
	// Nth fails only the Nth matching operation.
	Nth int
	// Err is the error returned, e.g. syscall.ENOSPC or syscall.EIO. With
	// Short and a nil Err the write is short without an error.
	Err error
	// Short writes part of the data before failing: up to AfterBytes, or
	// half of it for an Nth rule.
	Short bool
}

// FS is a tape.FS with faults.
type FS struct {
	inner tape.FS

	mu       sync.Mutex
	rules    []Rule
	bytes    []int64 // per rule: bytes written to matching files
	count    []int   // per rule: matching operations so far
	injected int
}

var _ tape.FS = (*FS)(nil)

// New wraps inner with rules.
func New(inner tape.FS, rules ...Rule) *FS {
	return &FS{inner: inner, rules: rules, bytes: make([]int64, len(rules)), count: make([]int, len(rules))}
}

// Injected is the number of faults injected so far.
func (f *FS) Injected() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.injected
}

// decide returns how many of n bytes to pass through and the error to
// return, for an operation on name.
func (f *FS) decide(op Op, name string, n int) (int, error, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	base := filepath.Base(name)
	for i, r := range f.rules {
		if r.Op != op || !strings.HasSuffix(base, r.Match) {
			continue
		}
		f.count[i]++
		switch {
		case r.AfterBytes > 0:
			if f.bytes[i]+int64(n) > r.AfterBytes {
				pass := 0
				if r.Short {
					pass = int(max(0, r.AfterBytes-f.bytes[i]))
				}
				f.bytes[i] += int64(pass)
				f.injected++
				return pass, r.Err, true
			}
			f.bytes[i] += int64(n)
		case r.Nth > 0 && f.count[i] == r.Nth:
			pass := 0
			if r.Short {
				pass = n / 2
			}
			f.injected++
			return pass, r.Err, true
		}
	}
	return n, nil, false
}

func (f *FS) OpenFile(name string, flag int, perm os.FileMode) (tape.File, error) {
	file, err := f.inner.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f, name: name}, nil
}

func (f *FS) Remove(name string) error                     { return f.inner.Remove(name) }
func (f *FS) Rename(oldpath, newpath string) error         { return f.inner.Rename(oldpath, newpath) }
func (f *FS) MkdirAll(path string, perm os.FileMode) error { return f.inner.MkdirAll(path, perm) }
func (f *FS) Stat(name string) (os.FileInfo, error)        { return f.inner.Stat(name) }
func (f *FS) SyncDir(dir string) error                     { return f.inner.SyncDir(dir) }

type faultFile struct {
	tape.File
	fs   *FS
	name string
}

func (ff *faultFile) Write(p []byte) (int, error) {
	pass, ferr, hit := ff.fs.decide(Write, ff.name, len(p))
	if !hit {
		return ff.File.Write(p)
	}
	n, err := ff.File.Write(p[:pass])
	if err != nil {
		return n, err
	}
	if ferr == nil && pass == len(p) {
		ferr = io.ErrShortWrite
	}
	return n, wrap("write", ff.name, ferr)
}

func (ff *faultFile) Sync() error {
	if _, ferr, hit := ff.fs.decide(Sync, ff.name, 0); hit {
		if ferr == nil {
			ferr = errors.New("injected sync failure")
		}
		return wrap("sync", ff.name, ferr)
	}
	return ff.File.Sync()
}

func wrap(op, name string, err error) error {
	if err == nil {
		return nil
	}
	return &os.PathError{Op: op, Path: name, Err: err}
}
