// Package home locates Kura's home folder: the embedded catalog, the cached
// saveset indexes, the configuration and the default library.
//
//	$KURA_HOME (default ~/.local/share/kura)
//	├── catalog.db        SQLite catalog
//	├── index/            cached per-saveset index files (also on tape)
//	└── vtl/default/      the default library, created on first backup
package home

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/kura-backup/kura/internal/private"
)

// Dir returns the home folder: $KURA_HOME, or ~/.local/share/kura.
func Dir() (string, error) {
	if d := os.Getenv("KURA_HOME"); d != "" {
		return filepath.Abs(d)
	}
	h, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("cannot find the home folder (set KURA_HOME): %w", err)
	}
	return filepath.Join(h, ".local", "share", "kura"), nil
}

// Ensure creates the home folder and its subfolders if they are missing.
func Ensure(dir string) error {
	for _, d := range []string{dir, IndexDir(dir), filepath.Join(dir, "vtl")} {
		if err := private.MkdirAll(d); err != nil {
			return fmt.Errorf("creating Kura home: %w", err)
		}
	}
	return nil
}

// CatalogPath is the SQLite catalog inside home dir.
func CatalogPath(dir string) string { return filepath.Join(dir, "catalog.db") }

// IndexDir holds the cached per-saveset index files.
func IndexDir(dir string) string { return filepath.Join(dir, "index") }

// LibraryDir is the default folder of a library called name.
func LibraryDir(dir, name string) string { return filepath.Join(dir, "vtl", name) }
