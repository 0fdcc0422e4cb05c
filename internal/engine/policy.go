package engine

import (
	"errors"
	"fmt"
	"time"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/compress"
	"github.com/kura-backup/kura/internal/retention"
	"github.com/kura-backup/kura/internal/schedule"
)

// PolicySchedules parses a policy's schedules (full, diff, incr) in its
// zone. A policy without any runs only when asked (kura policy run).
func PolicySchedules(p *catalog.Policy) ([]schedule.Entry, error) {
	var out []schedule.Entry
	for _, c := range []struct{ level, expr string }{{LevelFull, p.FullCron}, {LevelDiff, p.DiffCron}, {LevelIncr, p.IncrCron}} {
		if c.expr == "" {
			continue
		}
		s, err := schedule.Parse(c.expr, p.Zone)
		if err != nil {
			return nil, fmt.Errorf("--%s: %w", c.level, err)
		}
		out = append(out, schedule.Entry{Level: c.level, Sched: s})
	}
	return out, nil
}

// NextRun is when a policy's schedules next start a run after now, and at
// which level (zero time: no schedule).
func NextRun(p *catalog.Policy, now time.Time) (time.Time, string) {
	entries, err := PolicySchedules(p)
	if err != nil {
		return time.Time{}, ""
	}
	var when time.Time
	level := ""
	for _, e := range entries {
		t := e.Sched.Next(now)
		if when.IsZero() || t.Before(when) || t.Equal(when) && rankLevel(e.Level) > rankLevel(level) {
			when, level = t, e.Level
		}
	}
	return when, level
}

func rankLevel(l string) int {
	switch l {
	case LevelFull:
		return 3
	case LevelDiff:
		return 2
	case LevelIncr:
		return 1
	}
	return 0
}

// CheckPolicy validates a policy against the catalog: its schedules, its
// retention, its client (enrolled, when clients must be), its selection set
// and libraries. Errors say what is wrong and how to fix it.
func (e *Env) CheckPolicy(p *catalog.Policy, needClient bool) error {
	if err := catalog.ValidClientName(p.Name); err != nil {
		return fmt.Errorf("policy name: %w", err)
	}
	if needClient && p.Client == "" {
		return sayf(ErrPolicyClient, "a policy on a server needs --client NAME")
	}
	if p.Client != "" {
		c, err := e.Catalog.Client(p.Client)
		if errors.Is(err, catalog.ErrNotFound) {
			return Missing("client", "no client named %q is enrolled", p.Client)
		}
		if err != nil {
			return err
		}
		if !c.Revoked.IsZero() {
			return fmt.Errorf("client %s is revoked", p.Client)
		}
	}
	if p.Selection == "" {
		return sayf(ErrPolicySelection, "a policy needs --selection NAME")
	}
	if _, err := e.Catalog.Selection(p.Client, p.Selection); err != nil {
		return &NoSelectionSetError{Client: p.Client, Selection: p.Selection}
	}
	if _, err := PolicySchedules(p); err != nil {
		return err
	}
	if err := (retention.Rules{KeepGenerations: p.KeepGenerations, KeepDays: p.KeepDays}).Validate(); err != nil {
		return err
	}
	if _, err := compress.ParseLevel(p.Compress); err != nil {
		return err
	}
	if p.BWLimit < 0 {
		return errors.New("--bwlimit must not be negative")
	}
	for _, lib := range []string{p.Library, p.CopyTo} {
		if lib == "" {
			continue
		}
		if _, err := e.Catalog.Library(lib); err != nil {
			return Missing("library", "no library named %q", lib)
		}
	}
	if p.CopyTo != "" && (p.CopyTo == p.Library || p.Library == "" && p.CopyTo == DefaultLibrary) {
		return fmt.Errorf("--copy-to %s is the library the backups go to; a copy needs another library", p.CopyTo)
	}
	if p.Pool == "" {
		return errors.New("a policy needs a tape pool")
	}
	if p.Encrypt && p.Client == "" {
		return fmt.Errorf("%w: --encrypt needs a client's agent, and this machine's own backups have none (give --client)", ErrNotSealable)
	}
	return nil
}
