package service

import (
	"context"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/library"
)

// LibraryConfig converts a library's configuration.
func LibraryConfig(c library.Config) api.LibraryConfig {
	return api.LibraryConfig{Slots: c.Slots, Drives: c.Drives, MailSlots: c.MailSlots, TapeSizeBytes: c.TapeSize,
		BlockSizeBytes: c.BlockSize, BufferSizeBytes: c.BufferSize, EarlyWarningMarginBytes: c.EarlyWarningMargin,
		BarcodePrefix: c.BarcodePrefix, Media: mediaString(c.Media)}
}

func mediaString(m *library.MediaConfig) string {
	if m == nil {
		return ""
	}
	return m.String()
}

// Drive converts a drive's status.
func Drive(lib string, d library.DriveStatus) api.Drive {
	return api.Drive{Library: lib, Number: d.Number, BlockSizeBytes: d.BlockSize, BufferSizeBytes: d.BufferSize,
		Barcode: d.Barcode, Busy: d.Busy}
}

func slots(in []library.SlotStatus) []api.Slot {
	out := make([]api.Slot, 0, len(in))
	for _, s := range in {
		out = append(out, api.Slot{Number: s.Number, Barcode: s.Barcode, Reserved: s.Reserved})
	}
	return out
}

// summary is a library as a list shows it.
func summary(lib library.Changer) *api.Library {
	c := lib.Config()
	cfg := LibraryConfig(c)
	l := &api.Library{Name: c.Name, Dir: c.Dir, Config: &cfg}
	if t, err := lib.Tapes(); err == nil {
		n := len(t)
		l.Tapes = &n
	}
	return l
}

func (l *Local) Libraries(ctx context.Context) ([]api.Library, error) {
	recs, err := l.env.Catalog.Libraries()
	if err != nil {
		return nil, Err(err)
	}
	out := []api.Library{}
	for _, rec := range recs {
		lib, err := l.env.ChangerOf(rec)
		if err != nil {
			out = append(out, api.Library{Name: rec.Name, Dir: rec.Dir, Node: rec.Node, Error: err.Error()})
			continue
		}
		s := summary(lib)
		s.Name, s.Dir, s.Node = rec.Name, rec.Dir, rec.Node
		out = append(out, *s)
	}
	return out, nil
}

func (l *Local) Library(ctx context.Context, name string) (*api.Library, error) {
	lib, err := l.env.Changer(name)
	if err != nil {
		return nil, Err(err)
	}
	st, err := lib.Status()
	if err != nil {
		return nil, Err(err)
	}
	out := summary(lib)
	if rec, err := l.env.Catalog.Library(out.Name); err == nil {
		out.Node = rec.Node
	}
	out.Slots = slots(st.Slots)
	ms := slots(st.MailSlots)
	out.MailSlots = &ms
	out.Drives = []api.Drive{}
	for _, d := range st.Drives {
		out.Drives = append(out.Drives, Drive(out.Name, d))
	}
	return out, nil
}

func (l *Local) CreateLibrary(ctx context.Context, req api.LibraryCreate) (*api.Library, error) {
	if err := req.Validate(); err != nil {
		return nil, Err(err)
	}
	cfg := library.Config{Name: req.Name, Dir: req.Dir, Slots: req.Slots, Drives: req.Drives,
		TapeSize: req.TapeSizeBytes, BlockSize: req.BlockSizeBytes, BufferSize: req.BufferSizeBytes, BarcodePrefix: req.BarcodePrefix}
	if req.S3 != "" {
		cfg.Media = &library.MediaConfig{Kind: library.MediaS3, URL: req.S3, ChunkSize: req.ChunkSizeBytes}
	}
	if req.Changer != "" {
		cfg.Media = &library.MediaConfig{Kind: library.MediaChanger, Changer: req.Changer, DriveDevices: req.DriveDevices}
	}
	if req.Node != "" {
		lib, err := l.env.CreateNodeLibrary(cfg, req.Node)
		if err != nil {
			return nil, Err(err)
		}
		out := summary(lib)
		out.Node = req.Node
		return out, nil
	}
	lib, err := l.env.CreateChanger(cfg)
	if err != nil {
		return nil, Err(err)
	}
	return summary(lib), nil
}

func (l *Local) RegisterLibrary(ctx context.Context, req api.LibraryRegister) (*api.Library, error) {
	if err := req.Validate(); err != nil {
		return nil, Err(err)
	}
	lib, err := l.env.RegisterLibrary(req.Dir)
	if err != nil {
		return nil, Err(err)
	}
	return summary(lib), nil
}

func (l *Local) RemoveLibrary(ctx context.Context, name string) error {
	return Err(l.env.RemoveLibrary(name))
}
