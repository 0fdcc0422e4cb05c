package api

import (
	"context"
	"strings"
	"time"

	"github.com/kura-backup/kura/internal/rules"
)

// SelectionService is the saved selections of paths to back up, each of
// one client ("" is the server's own machine): /selections.
type SelectionService interface {
	Selections(ctx context.Context, client string) ([]Selection, error)
	Selection(ctx context.Context, client, name string) (*Selection, error)
	CreateSelection(ctx context.Context, req SelectionCreate) (*Selection, error)
	// RemoveSelection deletes a selection; its savesets stay.
	RemoveSelection(ctx context.Context, client, name string) error
}

func init() {
	wireTypes = append(wireTypes, Selection{}, SelectionCreate{})
}

// Selection is a saved selection (`kura selection list/show --json`).
type Selection struct {
	Name     string    `json:"name"`
	Client   string    `json:"client"`
	Paths    []string  `json:"paths"`
	Excludes []string  `json:"excludes"`
	Sources  []Source  `json:"sources,omitempty"` // commands and plug-ins, instead of paths
	Created  time.Time `json:"created"`
}

// SelectionCreate saves a selection (POST /selections).
type SelectionCreate struct {
	Name     string   `json:"name"`
	Client   string   `json:"client,omitempty"`
	Paths    []string `json:"paths"` // absolute, on the client
	Excludes []string `json:"excludes,omitempty"`
	Sources  []Source `json:"sources,omitempty"` // instead of paths: commands and plug-ins
}

// Validate checks a selection to save.
func (r *SelectionCreate) Validate() error {
	if r.Name == "" {
		return bad("name", "a selection needs a name")
	}
	if r.Client != "" {
		if err := rules.ClientName(r.Client); err != nil {
			return bad("client", "%v", err)
		}
	}
	if len(r.Sources) > 0 {
		if len(r.Paths) > 0 || len(r.Excludes) > 0 {
			return bad("sources", "a selection holds paths or sources, not both")
		}
		for _, s := range r.Sources {
			if s.Kind == "" || strings.IndexByte(s.Command, 0) >= 0 || strings.IndexByte(s.Name, 0) >= 0 {
				return bad("sources", "each source needs a kind, and no NUL bytes")
			}
		}
		return nil
	}
	if len(r.Paths) == 0 {
		return bad("paths", "a selection needs at least one path, or sources")
	}
	for _, p := range r.Paths {
		if err := clientPath("paths", p); err != nil {
			return err
		}
	}
	for _, x := range r.Excludes {
		if err := rules.ExcludePattern(x); err != nil {
			return bad("excludes", "%v", err)
		}
	}
	return nil
}
