package service

import (
	"context"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/engine"
)

// CatalogCopy converts a catalog backup found on a tape.
func CatalogCopy(c engine.CatalogCopy) api.CatalogCopy {
	out := api.CatalogCopy{Library: c.Library, LibraryDir: c.LibraryDir, Barcode: c.Barcode, File: c.File,
		Written: c.Written, Bytes: c.Bytes, Error: c.Error}
	if l := c.Label; l != nil {
		out.Label = &api.CatalogLabel{Format: l.Format, Version: l.Version, Created: l.Created, SchemaVersion: l.SchemaVersion,
			Savesets: l.Savesets, LastSavesetID: l.LastSavesetID, JobID: l.JobID, Host: l.Host, Size: l.Size, SHA256: l.SHA256}
		for _, lib := range l.Libraries {
			out.Label.Libraries = append(out.Label.Libraries, api.CatalogLibrary{Name: lib.Name, Dir: lib.Dir})
		}
	}
	return out
}

func (l *Local) CatalogCopies(ctx context.Context, dirs []string) (*api.CatalogCopies, error) {
	copies, notes, err := l.env.FindCatalogBackups(dirs)
	if err != nil {
		return nil, Err(err)
	}
	out := &api.CatalogCopies{Copies: make([]api.CatalogCopy, 0, len(copies)), Notes: append([]string{}, notes...)}
	for _, c := range copies {
		out.Copies = append(out.Copies, CatalogCopy(c))
	}
	return out, nil
}
