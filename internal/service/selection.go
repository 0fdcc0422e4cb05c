package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/plugin"
)

// Selection converts a saved selection.
func Selection(s catalog.Selection) api.Selection {
	out := api.Selection{Name: s.Name, Client: s.Client, Paths: nonNil(s.Paths), Excludes: nonNil(s.Excludes), Created: s.Created}
	for _, x := range s.Sources {
		out.Sources = append(out.Sources, api.Source(x))
	}
	return out
}

// selectionErr names the selection in err; one that is not there is a
// not-found error about a selection.
func selectionErr(name string, err error) error {
	if errors.Is(err, catalog.ErrNotFound) {
		return Err(engine.Missing("selection", "no selection %q", name))
	}
	return Err(fmt.Errorf("selection %q: %w", name, err))
}

func (l *Local) Selections(ctx context.Context, client string) ([]api.Selection, error) {
	sels, err := l.env.Catalog.Selections(client)
	if err != nil {
		return nil, Err(err)
	}
	out := []api.Selection{}
	for _, s := range sels {
		out = append(out, Selection(s))
	}
	return out, nil
}

func (l *Local) Selection(ctx context.Context, client, name string) (*api.Selection, error) {
	s, err := l.env.Catalog.Selection(client, name)
	if err != nil {
		return nil, selectionErr(name, err)
	}
	out := Selection(s)
	return &out, nil
}

func (l *Local) CreateSelection(ctx context.Context, req api.SelectionCreate) (*api.Selection, error) {
	if err := req.Validate(); err != nil {
		return nil, Err(err)
	}
	s := catalog.Selection{Name: req.Name, Client: req.Client, Paths: req.Paths, Excludes: req.Excludes, Created: time.Now()}
	for _, x := range req.Sources {
		if err := plugin.FromAPI([]api.Source{x})[0].Validate(); err != nil {
			return nil, Err(fmt.Errorf("%w: %w", engine.ErrBadOption, err))
		}
		s.Sources = append(s.Sources, catalog.Source(x))
	}
	if err := l.env.Catalog.CreateSelection(s); err != nil {
		return nil, selectionErr(req.Name, err)
	}
	out := Selection(s)
	return &out, nil
}

func (l *Local) RemoveSelection(ctx context.Context, client, name string) error {
	if err := l.env.Catalog.RemoveSelection(client, name); err != nil {
		return selectionErr(name, err)
	}
	return nil
}
