package server_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/api"
)

// Requests that could only fail later are refused at submit with 400 and a
// message naming the field; nothing is queued.
func TestRequestsValidatedBeforeAccepted(t *testing.T) {
	t.Parallel()
	r := startServer(t, t.TempDir(), "")
	r.enroll("c1", "")
	abs := "/srv/data"
	backup := func(f func(*api.JobRequest)) api.JobRequest {
		req := api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{abs}}
		f(&req)
		return req
	}
	restore := func(f func(*api.JobRequest)) api.JobRequest {
		req := api.JobRequest{Kind: api.KindRestore, Client: "c1", Latest: true, To: abs}
		f(&req)
		return req
	}
	for _, tc := range []struct {
		what, field string
		req         api.JobRequest
	}{
		{"a NUL in a path", "paths", backup(func(q *api.JobRequest) { q.Paths = []string{"/srv/da\x00ta"} })},
		{"an unclean path", "paths", backup(func(q *api.JobRequest) { q.Paths = []string{"/srv//data/"} })},
		{"a NUL in an exclude", "excludes", backup(func(q *api.JobRequest) { q.Excludes = []string{"*.t\x00mp"} })},
		{"frame_size too small", "frame_size", backup(func(q *api.JobRequest) { q.FrameSize = 1024 })},
		{"frame_size too large", "frame_size", backup(func(q *api.JobRequest) { q.FrameSize = 1 << 30 })},
		{"frame_size negative", "frame_size", backup(func(q *api.JobRequest) { q.FrameSize = -1 })},
		{"stream sent by a client", "stream", backup(func(q *api.JobRequest) { q.Stream = 2 })},
		{"stream sent with streams", "stream", backup(func(q *api.JobRequest) { q.Streams, q.Stream = 2, 1 })},
		{"a negative drive", "drive", backup(func(q *api.JobRequest) { q.Drive = -1 })},
		{"a drive the library lacks", "drive", backup(func(q *api.JobRequest) { q.Drive = 99 })},
		{"a label with NUL", "label", backup(func(q *api.JobRequest) { q.Label = "a\x00b" })},
		{"a label too long", "label", backup(func(q *api.JobRequest) { q.Label = strings.Repeat("x", 5000) })},
		{"an unknown library", "library", backup(func(q *api.JobRequest) { q.Library = "nope" })},
		{"a NUL in the restore target", "to", restore(func(q *api.JobRequest) { q.To = "/srv/\x00x" })},
		{"an unclean restore target", "to", restore(func(q *api.JobRequest) { q.To = "/srv/../etc" })},
		{"a restore target with a trailing /", "to", restore(func(q *api.JobRequest) { q.To = "/srv/x/" })},
		{"a NUL in an include", "includes", restore(func(q *api.JobRequest) { q.Includes = []string{"etc/\x00"} })},
		{"a malformed include pattern", "includes", restore(func(q *api.JobRequest) { q.Includes = []string{"etc/[a"} })},
		{"a restore with a negative bwlimit", "bwlimit", restore(func(q *api.JobRequest) { q.BWLimit = -5 })},
		{"a negative saveset", "saveset", restore(func(q *api.JobRequest) { q.Latest, q.Saveset = false, -3 })},
		{"a bad to_client name", "to_client", restore(func(q *api.JobRequest) { q.ToClient = "../c2" })},
		{"a restore with stream", "stream", restore(func(q *api.JobRequest) { q.Stream = 1 })},
	} {
		_, err := r.admin.Submit(t.Context(), tc.req)
		wantField(t, tc.what, err, tc.field)
	}
	if jobs, err := r.admin.Jobs(t.Context(), api.JobFilter{Limit: 100}); err != nil {
		t.Fatal(err)
	} else if len(jobs) != 0 {
		t.Errorf("%d jobs queued from invalid requests", len(jobs))
	}

	// The other POST/PATCH bodies.
	neg := int64(-1)
	_, err := r.admin.UpdateClient(t.Context(), "c1", api.ClientUpdate{BWLimit: &neg})
	wantField(t, "a negative client bwlimit", err, "bwlimit")
	_, err = r.admin.CreateToken(t.Context(), api.TokenRequest{ExpiresSeconds: (31 * 24 * time.Hour).Seconds()})
	wantField(t, "a token for 31 days", err, "expires_seconds")
	_, err = r.admin.CreateToken(t.Context(), api.TokenRequest{Name: "../evil"})
	wantField(t, "a token for ../evil", err, "name")
	_, err = r.admin.RunPolicy(t.Context(), "nope", "weekly")
	wantField(t, "a policy run at level weekly", err, "level")
	_, err = r.admin.Jobs(t.Context(), api.JobFilter{Limit: 20000})
	wantField(t, "a job list of 20000", err, "limit")
	_, err = r.admin.Jobs(t.Context(), api.JobFilter{State: "runing"})
	wantField(t, "a job list in state runing", err, "state")
	_, err = r.admin.Jobs(t.Context(), api.JobFilter{Kind: "Backup; --"})
	wantField(t, "a job list of kind \"Backup; --\"", err, "kind")
}

// wantField: refused as a bad request whose JSON body names the field at
// fault, in "field" and at the start of the message.
func wantField(t *testing.T, what string, err error, field string) {
	t.Helper()
	wantCode(t, what, err, api.CodeBadRequest)
	if err != nil && !strings.HasPrefix(err.Error(), field+":") {
		t.Errorf("%s: %q does not start with the field %q", what, err, field)
	}
	if ae := (*api.Error)(nil); errors.As(err, &ae) && ae.Field != field {
		t.Errorf("%s: the answer's field is %q; want %q", what, ae.Field, field)
	}
}
