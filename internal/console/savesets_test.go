package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/api"
)

// The fake's savesets: 7, a full of client c1 kept by its policy, and 8,
// an incremental on it. Saveset 8's tree is / → /data → /data/sub (a
// folder) and dataFiles files; /data/sub holds one file.
const dataFiles = 2500

func (f *fakeBackend) Savesets(ctx context.Context, q api.SavesetQuery) ([]api.SavesetInfo, error) {
	t0 := time.Date(2026, 5, 1, 1, 0, 0, 0, time.UTC)
	return []api.SavesetInfo{
		{ID: 7, Client: "c1", Level: "full", Status: "complete", Created: t0, Files: 10, SourceBytes: 4 << 20, MediaBytes: 1 << 20},
		{ID: 8, Client: "c1", Level: "incr", BaseID: 7, Status: "complete", Created: t0.Add(24 * time.Hour), Files: dataFiles + 4, SourceBytes: 3 << 20, MediaBytes: 2 << 20},
	}, nil
}

func (f *fakeBackend) Retention(ctx context.Context, q api.SavesetQuery) ([]api.RetentionDecision, error) {
	return []api.RetentionDecision{
		{ID: 7, Keep: true, Rule: "keep-generations", Reason: "the base of incremental 8"},
		{ID: 8, Keep: true, Rule: "keep-generations", Reason: "generation 1 of 3"},
	}, nil
}

func (f *fakeBackend) Saveset(ctx context.Context, id int64) (*api.SavesetInfo, error) {
	sets, _ := f.Savesets(ctx, api.SavesetQuery{})
	for _, ss := range sets {
		if ss.ID == id {
			return &ss, nil
		}
	}
	return nil, &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("no saveset %d", id)}
}

// Entries pages the fake tree as the service does: after the cursor, at
// most Limit entries, Next the last path of a full page.
func (f *fakeBackend) Entries(ctx context.Context, q api.EntriesQuery) (*api.EntryPage, error) {
	f.mu.Lock()
	f.listings = append(f.listings, q)
	f.mu.Unlock()
	var all []api.Entry
	switch q.Path {
	case "", "/":
		all = []api.Entry{{Path: "/data", Type: "dir", Mode: "0755"}}
	case "/data":
		all = []api.Entry{{Path: "/data/sub", Type: "dir", Mode: "0755"}}
		for i := range dataFiles {
			all = append(all, api.Entry{Path: fmt.Sprintf("/data/f%04d.txt", i), Type: "file", Mode: "0644", Size: int64(i)})
		}
	case "/data/sub":
		all = []api.Entry{{Path: "/data/sub/x.txt", Type: "file", Mode: "0644", Size: 5}}
	case "/home/me": // where the search's matches are (search_test.go)
		all = []api.Entry{{Path: "/home/me/report-010.odt", Type: "file", Mode: "0644", Size: 10}}
	default:
		return nil, &api.Error{Code: api.CodeNotFound, Message: "saveset holds no " + q.Path}
	}
	if q.Cursor != "" {
		i := slices.IndexFunc(all, func(e api.Entry) bool { return e.Path == q.Cursor })
		all = all[i+1:]
	}
	page := &api.EntryPage{Entries: all}
	if q.Limit > 0 && len(all) >= q.Limit {
		page.Entries = all[:q.Limit]
		page.Next = all[q.Limit-1].Path
	}
	return page, nil
}

// Submit queues a job: it gets the next ID and shows in the job monitor.
func (f *fakeBackend) Submit(ctx context.Context, req api.JobRequest) ([]int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.submitted = append(f.submitted, req)
	id := int64(100 + len(f.submitted))
	f.jobs = append(f.jobs, api.Job{ID: id, Kind: req.Kind, State: "queued", Client: req.Client})
	return []int64{id}, nil
}

func (f *fakeBackend) requests() []api.JobRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.submitted)
}

var entryName = regexp.MustCompile(`<(?:span class="file"|a class="dir" href="[^"]*")>([^<]+)</`)

// The savesets page lists each saveset with its level, its base, size,
// ratio and retention's reason, newest first, each linked to its browse
// view.
func TestSavesetsPage(t *testing.T) {
	f := newFixture(t)
	ck, _ := f.signIn("", adminToken)
	resp := f.do("GET", "/savesets", ck, nil)
	b := body(t, resp)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /savesets: %d %s", resp.StatusCode, b)
	}
	i7, i8 := strings.Index(b, `data-saveset="7"`), strings.Index(b, `data-saveset="8"`)
	if i7 < 0 || i8 < 0 || i8 > i7 {
		t.Fatalf("the savesets page lists 7 at %d and 8 at %d; want both, newest first", i7, i8)
	}
	row8 := b[i8:i7]
	for _, want := range []string{`href="/savesets/8"`, "<td>incr</td>", `href="/savesets/7">7</a>`, "3.00 MiB", "1.50:1",
		"kept: keep-generations – generation 1 of 3"} {
		if !strings.Contains(row8, want) {
			t.Errorf("saveset 8's row lacks %q:\n%s", want, row8)
		}
	}
	if !strings.Contains(b[i7:], "the base of incremental 8") || !strings.Contains(b[i7:], "4.00:1") {
		t.Errorf("saveset 7's row lacks its ratio or retention reason:\n%s", b[i7:])
	}
}

// A folder of 2,501 entries is browsed in pages of browsePage: each page
// asks the service for one page (never the whole folder), the next-page
// links lead through every entry once and in order, and the last page has
// none. Folders link to their own listing.
func TestBrowsePages(t *testing.T) {
	f := newFixture(t)
	ck, _ := f.signIn("", adminToken)
	var got []string
	next := "/savesets/8?path=/data"
	for pages := 0; next != ""; pages++ {
		if pages > 5 {
			t.Fatal("more pages than a folder of 2,501 entries has")
		}
		resp := f.do("GET", next, ck, nil)
		b := body(t, resp)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", next, resp.StatusCode, b)
		}
		n := 0
		for _, m := range entryName.FindAllStringSubmatch(b, -1) {
			got = append(got, m[1])
			n++
		}
		if n > browsePage {
			t.Fatalf("a page of %d entries; want at most %d", n, browsePage)
		}
		next = ""
		if _, rest, ok := strings.Cut(b, `id="next" href="`); ok {
			link, _, _ := strings.Cut(rest, `"`)
			next = strings.ReplaceAll(link, "&amp;", "&")
		}
	}
	want := []string{"sub/"}
	for i := range dataFiles {
		want = append(want, fmt.Sprintf("f%04d.txt", i))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("the pages list %d names (first %q); want the folder's %d once each, in order", len(got), got[:min(3, len(got))], len(want))
	}
	for _, q := range f.b.listings {
		if q.SavesetID != 8 || q.Path != "/data" || q.Limit != browsePage {
			t.Errorf("a page asked the service for %+v; want saveset 8, /data, %d entries", q, browsePage)
		}
	}
	if len(f.b.listings) != 3 {
		t.Errorf("%d listing calls for 3 pages", len(f.b.listings))
	}
	b := body(t, f.do("GET", "/savesets/8?path=/data/sub", ck, nil))
	if !strings.Contains(b, "x.txt") || !strings.Contains(b, `href="/savesets/8?path=%2fdata"`) {
		t.Errorf("the subfolder's page lacks its file or the way back up:\n%s", b)
	}
	for p, status := range map[string]int{"/savesets/8?path=/nope": 404, "/savesets/9": 404, "/savesets/x": 404} {
		if resp := f.do("GET", p, ck, nil); resp.StatusCode != status {
			t.Errorf("GET %s: %d; want %d", p, resp.StatusCode, status)
		}
	}
}

// A restore of the selected files and folders is a job queued through the
// service (the page goes to its monitor); without the CSRF token, or asked
// by an operator, nothing is queued; a restore with nothing selected or
// without an absolute folder is refused with the reason.
func TestRestoreFromBrowse(t *testing.T) {
	f := newFixture(t)
	if err := f.users.Add("olga", "operator password", RoleOperator); err != nil {
		t.Fatal(err)
	}
	f.b.clients = []api.Client{{Name: "c1"}, {Name: "c2"}}
	ck, csrf := f.signIn("", adminToken)
	ock, ocsrf := f.signIn("olga", "operator password")
	sel := url.Values{"select": {"/data/f0001.txt", "/data/sub"}, "to": {"/srv/restore"}, "to_client": {"c2"}, "overwrite": {"never"}}
	with := func(tok string) url.Values {
		v := url.Values{"csrf": {tok}}
		for k, x := range sel {
			v[k] = x
		}
		return v
	}

	if b := body(t, f.do("GET", "/savesets/8?path=/data", ock, nil)); strings.Contains(b, `name="select"`) || strings.Contains(b, `id="restore"`) {
		t.Error("the operator's browse view offers a restore")
	}
	if b := body(t, f.do("GET", "/savesets/8?path=/data", ck, nil)); !strings.Contains(b, `value="/data/f0001.txt"`) || !strings.Contains(b, `id="restore"`) {
		t.Error("the admin's browse view has no restore form")
	}
	for _, c := range []struct {
		what   string
		cookie string
		form   url.Values
		status int
		says   string
	}{
		{"without the CSRF token", ck, sel, 403, "out of date"},
		{"by an operator", ock, with(ocsrf), 403, "operator"},
		{"with nothing selected", ck, url.Values{"csrf": {csrf}, "to": {"/srv/restore"}}, 400, "select the files"},
		{"into a relative folder", ck, url.Values{"csrf": {csrf}, "select": {"/data/sub"}, "to": {"restore"}}, 400, "to:"},
	} {
		resp := f.do("POST", "/savesets/8/restore", c.cookie, c.form)
		if b := body(t, resp); resp.StatusCode != c.status || !strings.Contains(b, c.says) {
			t.Errorf("a restore %s: %d; want %d saying %q", c.what, resp.StatusCode, c.status, c.says)
		}
	}
	if got := f.b.requests(); len(got) != 0 {
		t.Fatalf("refused restores were queued: %+v", got)
	}

	resp := f.do("POST", "/savesets/8/restore", ck, with(csrf))
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/jobs/101" {
		t.Fatalf("a restore: %d to %q; want 303 to the job, /jobs/101", resp.StatusCode, resp.Header.Get("Location"))
	}
	got := f.b.requests()
	want := api.JobRequest{Kind: api.KindRestore, Client: "c1", Saveset: 8, To: "/srv/restore", ToClient: "c2",
		RestorePaths: []string{"/data/f0001.txt", "/data/sub"}, Overwrite: "never"}
	if len(got) != 1 || fmt.Sprint(got[0]) != fmt.Sprint(want) {
		t.Fatalf("queued %+v; want %+v", got, want)
	}
}

// BenchmarkBrowsePage is the console's side of a browse page: a page of
// browsePage entries of a folder rendered as HTML (the fake service makes
// the folder's 2,501 entries on every call, so this is an upper bound).
// BenchmarkBrowse1M in internal/engine measures the index read it asks for.
func BenchmarkBrowsePage(b *testing.B) {
	f := newFixture(b)
	ck, _ := f.signIn("", adminToken)
	for b.Loop() {
		resp := f.do("GET", "/savesets/8?path=/data&cursor=/data/f0999.txt", ck, nil)
		if resp.StatusCode != http.StatusOK {
			b.Fatal(resp.StatusCode)
		}
	}
}
