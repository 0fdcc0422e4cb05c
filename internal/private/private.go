// Package private creates the folders and files Kura keeps: everything under
// a Kura home (catalog, index cache, run locks, server keys, tokens and logs,
// the agent's home) and under a library folder (configuration, inventory,
// tapes) is the owner's alone — folders DirMode, files FileMode — because a
// catalog and a tape hold the names and contents of every file backed up.
//
// The modes are given at creation, so they never depend on a later chmod
// (the umask can only take bits away). Check tells whether an existing
// folder lets its group or others in, for a warning at start-up.
package private

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

const (
	// DirMode is the mode of every folder Kura creates.
	DirMode fs.FileMode = 0o700
	// FileMode is the mode of every file Kura creates.
	FileMode fs.FileMode = 0o600
)

// MkdirAll creates dir and any missing parents with DirMode. Folders that
// exist already keep their mode (Check reports them).
func MkdirAll(dir string) error { return os.MkdirAll(dir, DirMode) }

// OpenFile is os.OpenFile with FileMode for a file it creates.
func OpenFile(name string, flag int) (*os.File, error) { return os.OpenFile(name, flag, FileMode) }

// WriteFile is os.WriteFile with FileMode.
func WriteFile(name string, data []byte) error { return os.WriteFile(name, data, FileMode) }

// WriteFileDurable writes data to name whole or not at all: into name.tmp
// with FileMode, synced, then renamed over name, so a crash leaves either
// the old file or the new one (an enrolled home's key, certificate and
// configuration).
func WriteFileDurable(name string, data []byte) error {
	tmp := name + ".tmp"
	f, err := OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}

// Touch creates name empty with FileMode if it does not exist, so that a
// file made by someone else's code (SQLite's catalog, its -wal and -shm,
// which take the database file's mode) starts private.
// A file that exists is not opened at all (it may be read-only to us).
func Touch(name string) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, FileMode)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return f.Close()
}

// Check returns a warning when the folder dir (a Kura home or a library)
// can be read or entered by its group or by others, and "" when it cannot
// or does not exist.
func Check(dir string) string {
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return ""
	}
	if m := fi.Mode().Perm(); m&0o077 != 0 {
		abs, _ := filepath.Abs(dir)
		return fmt.Sprintf("%s is open to other users (mode %04o); it holds backed-up data: chmod 700 %s", abs, m, abs)
	}
	return ""
}
