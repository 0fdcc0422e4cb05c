package api

import (
	"errors"
	"strings"
	"testing"
)

// Each job kind run on the server alone takes its own fields; a missing or
// wrong one, or another kind's, is refused naming the field.
func TestValidateAdminJobKinds(t *testing.T) {
	good := []JobRequest{
		{Kind: KindVerify, Saveset: 3},
		{Kind: KindVerify, Saveset: 3, Level: "media", Copy: 1, Sample: 10},
		{Kind: KindCopy, Saveset: 3, Library: "offsite", Drive: 1, Verify: true},
		{Kind: KindPrune},
		{Kind: KindCatalog},
		{Kind: KindCatalog, Library: "lib", Drive: 2},
		{Kind: KindScan, Barcode: "KUR001"},
		{Kind: KindErase, Barcode: "KUR001", Force: true},
	}
	for _, r := range good {
		if err := r.Validate(); err != nil {
			t.Errorf("%+v: %v", r, err)
		}
	}
	bad := []struct {
		req   JobRequest
		field string
	}{
		{JobRequest{Kind: KindVerify}, "saveset"},
		{JobRequest{Kind: KindVerify, Saveset: 3, Level: "source"}, "level"},
		{JobRequest{Kind: KindVerify, Saveset: 3, Level: "full"}, "level"},
		{JobRequest{Kind: KindVerify, Saveset: 3, Copy: -1}, "copy"},
		{JobRequest{Kind: KindVerify, Saveset: 3, Sample: 101}, "sample"},
		{JobRequest{Kind: KindVerify, Saveset: 3, Paths: []string{"/x"}}, "paths"},
		{JobRequest{Kind: KindCopy, Saveset: 3}, "library"},
		{JobRequest{Kind: KindCopy, Library: "offsite"}, "saveset"},
		{JobRequest{Kind: KindCopy, Saveset: 3, Library: "offsite", Drive: -1}, "drive"},
		{JobRequest{Kind: KindPrune, Saveset: 3}, "saveset"},
		{JobRequest{Kind: KindCatalog, Barcode: "X"}, "barcode"},
		{JobRequest{Kind: KindScan}, "barcode"},
		{JobRequest{Kind: KindScan, Barcode: "A\x00"}, "barcode"},
		{JobRequest{Kind: KindErase, Barcode: "KUR001", Level: "full"}, "level"},
		{JobRequest{Kind: KindErase, Barcode: "KUR001", Client: "no/slash"}, "client"},
		{JobRequest{Kind: KindBackup, Client: "c1", Paths: []string{"/x"}, Force: true}, "force"},
		{JobRequest{Kind: KindRestore, Client: "c1", Latest: true, To: "/x", Barcode: "A"}, "barcode"},
		{JobRequest{Kind: "defrag", Client: "c1"}, "kind"},
	}
	for _, c := range bad {
		err := c.req.Validate()
		var fe *FieldError
		if !errors.As(err, &fe) || !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v; want a field error", c.req, err)
			continue
		}
		if fe.Field != c.field {
			t.Errorf("%+v: field %q (%v); want %q", c.req, fe.Field, err, c.field)
		}
	}
}

// A restore's exact paths are checked like the CLI's --path: clean, not
// empty, no NUL; '*', '?' and '[' are characters of a name.
func TestValidateRestorePaths(t *testing.T) {
	ok := JobRequest{Kind: KindRestore, Client: "c1", Saveset: 3, To: "/x", RestorePaths: []string{"/srv/a*", "srv/b[1]/", "/etc"}}
	if err := ok.Validate(); err != nil {
		t.Errorf("%+v: %v", ok, err)
	}
	for _, p := range []string{"", "/", "/srv//a", "/srv/../etc", "/srv/./a", "/a\x00b"} {
		r := JobRequest{Kind: KindRestore, Client: "c1", Saveset: 3, To: "/x", RestorePaths: []string{p}}
		var fe *FieldError
		if err := r.Validate(); !errors.As(err, &fe) || fe.Field != "restore_paths" {
			t.Errorf("restore_paths %q: %v; want refused naming restore_paths", p, err)
		}
	}
	if err := (&JobRequest{Kind: KindVerify, Saveset: 3, RestorePaths: []string{"/x"}}).Validate(); err == nil {
		t.Error("a verify job took restore_paths")
	}
}

// A WAL spool report is refused, naming the field, when a count or an age
// cannot be right or a field is too long; the cluster and file names are
// the server's to check.
func TestValidateWALSpoolReport(t *testing.T) {
	good := WALSpoolReport{Clusters: []WALSpoolState{
		{Cluster: "main", Files: 2, Oldest: "000000010000000000000003", OldestSeconds: 12.5, LastArchived: "000000010000000000000002", LastArchivedSeconds: 60},
		{Cluster: "other"},
	}}
	if err := good.Validate(); err != nil {
		t.Errorf("%+v: %v", good, err)
	}
	nan := 0.0
	nan = nan / nan
	for _, c := range []struct {
		state WALSpoolState
		field string
	}{
		{WALSpoolState{Cluster: "main", Files: -1}, "clusters[0].files"},
		{WALSpoolState{Cluster: "main", Files: 1}, "clusters[0].oldest"},
		{WALSpoolState{Cluster: "main", Oldest: "000000010000000000000003"}, "clusters[0].oldest"},
		{WALSpoolState{Cluster: "main", OldestSeconds: -1}, "clusters[0].oldest_seconds"},
		{WALSpoolState{Cluster: "main", LastArchivedSeconds: nan}, "clusters[0].last_archived_seconds"},
		{WALSpoolState{Cluster: "main", LastError: string(make([]byte, MaxWALErrorLen+1))}, "clusters[0].last_error"},
		{WALSpoolState{Cluster: string(make([]byte, 200))}, "clusters[0].cluster"},
	} {
		r := WALSpoolReport{Clusters: []WALSpoolState{c.state}}
		var fe *FieldError
		if err := r.Validate(); !errors.As(err, &fe) || fe.Field != c.field || !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v; want a field error on %s", c.state, err, c.field)
		}
	}
	twice := WALSpoolReport{Clusters: []WALSpoolState{{Cluster: "main"}, {Cluster: "main"}}}
	if err := twice.Validate(); err == nil {
		t.Error("a cluster reported twice was accepted")
	}
	many := WALSpoolReport{Clusters: make([]WALSpoolState, MaxWALClusters+1)}
	if err := many.Validate(); err == nil {
		t.Error("too many clusters were accepted")
	}
}

// An agent's goodbye names its run by a short plain word: anything else
// is refused, naming the field.
func TestValidateAgentBye(t *testing.T) {
	for _, run := range []string{"a", "0123456789abcdef", "run_1-2", strings.Repeat("x", MaxAgentRunLen)} {
		if err := (&AgentBye{Run: run}).Validate(); err != nil {
			t.Errorf("run %q: %v", run, err)
		}
	}
	for _, run := range []string{"", strings.Repeat("x", MaxAgentRunLen+1), "a b", "a/b", "ä", "a\x00"} {
		var fe *FieldError
		if err := (&AgentBye{Run: run}).Validate(); !errors.As(err, &fe) || fe.Field != "run" || !errors.Is(err, ErrInvalid) {
			t.Errorf("run %q: %v; want a field error on run", run, err)
		}
	}
}
