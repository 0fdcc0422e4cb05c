package server_test

import (
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
)

// GET /policies/{name}/retention through the typed client: the policy's
// savesets with retention's verdict, with its rules or with those asked
// for; bad rules are bad_request, an unknown policy not_found.
func TestPolicyRetentionOverTheAPI(t *testing.T) {
	t.Parallel()
	r := startServer(t, t.TempDir(), "")
	r.enroll("c1", "")
	ctx := t.Context()
	if _, err := r.admin.CreateSelection(ctx, api.SelectionCreate{Name: "docs", Client: "c1", Paths: []string{"/srv/docs"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.admin.CreatePolicy(ctx, api.PolicyCreate{Name: "p", Client: "c1", Selection: "docs", KeepGenerations: 2}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		s := &catalog.Saveset{Client: "c1", Selection: "docs", Policy: "p", Level: catalog.LevelFull, Status: catalog.StatusComplete,
			Created: time.Now().Add(-time.Duration(3-i) * time.Hour)}
		if err := r.srv.Env().Catalog.CreateSaveset(s); err != nil {
			t.Fatal(err)
		}
	}
	expired := func(req api.RetentionPreview) int {
		t.Helper()
		ds, err := r.admin.PolicyRetention(ctx, "p", req)
		if err != nil || len(ds) != 3 {
			t.Fatalf("preview %+v: %d decisions, %v; want 3", req, len(ds), err)
		}
		n := 0
		for _, d := range ds {
			if !d.Keep {
				n++
			}
		}
		return n
	}
	if n := expired(api.RetentionPreview{}); n != 1 {
		t.Errorf("with the policy's 2 generations %d expire; want 1", n)
	}
	three, zero := 3, 0
	if n := expired(api.RetentionPreview{KeepGenerations: &three, KeepDays: &zero}); n != 0 {
		t.Errorf("with 3 generations %d expire; want 0", n)
	}
	minus := -1
	_, err := r.admin.PolicyRetention(ctx, "p", api.RetentionPreview{KeepDays: &minus})
	wantCode(t, "keep_days -1", err, api.CodeBadRequest)
	_, err = r.admin.PolicyRetention(ctx, "nope", api.RetentionPreview{})
	wantCode(t, "an unknown policy", err, api.CodeNotFound)
}
