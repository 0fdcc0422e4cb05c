package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kura-backup/kura/internal/api"
)

// searchHits is how many versions of report-N.odt the fake's savesets
// hold: 150 in saveset 8, then 150 in saveset 7 (newest first).
const searchHits = 150

// Find searches the fake's savesets as the service does: newest first
// when asked, a page of at most Limit, Next "ID:PATH" of a full page's
// last match; only client c1 has savesets.
func (f *fakeBackend) Find(ctx context.Context, q api.FindQuery) (*api.MatchPage, error) {
	f.mu.Lock()
	f.finds = append(f.finds, q)
	f.mu.Unlock()
	var all []api.Match
	ids := []int64{7, 8}
	if q.NewestFirst {
		ids = []int64{8, 7}
	}
	for _, id := range ids {
		for i := range searchHits {
			p := fmt.Sprintf("/home/me/report-%03d.odt", i)
			if q.Client != "" && q.Client != "c1" || !strings.Contains(p, q.Pattern) {
				continue
			}
			all = append(all, api.Match{SavesetID: id, Created: fmt.Sprintf("2026-05-0%d 01:00:00", id-6), Level: "full",
				Entry: api.Entry{Path: p, Type: "file", Size: int64(i), MTime: fmt.Sprintf("2026-04-%02dT09:%02d:00Z", 20+id-7, i%60)}})
		}
	}
	if q.Cursor != "" {
		for i, m := range all {
			if fmt.Sprintf("%d:%s", m.SavesetID, m.Entry.Path) == q.Cursor {
				all = all[i+1:]
				break
			}
		}
	}
	page := &api.MatchPage{Matches: all}
	if q.Limit > 0 && len(all) >= q.Limit {
		page.Matches = all[:q.Limit]
		last := page.Matches[q.Limit-1]
		page.Next = fmt.Sprintf("%d:%s", last.SavesetID, last.Entry.Path)
	}
	return page, nil
}

func (f *fakeBackend) Recipe(ctx context.Context, id int64) (*api.Recipe, error) {
	if id != 7 && id != 8 {
		return nil, &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("no saveset %d", id)}
	}
	return &api.Recipe{SavesetID: id, Recipe: fmt.Sprintf("cat /vtl/KUR001/file-%d | zstd -d | tar -xvf - # <b>", id)}, nil
}

var matchRow = regexp.MustCompile(`(?s)<tr data-saveset="(\d+)">.*?class="found" href="([^"]*)">([^<]+)</a>`)

// The search view finds a name in a client's savesets, newest first, a
// page at a time (each page one Find call of searchPage matches), each
// match linked to the folder that holds it; an operator may search too,
// and a client name that cannot be is refused.
func TestSearchSavesets(t *testing.T) {
	f := newFixture(t)
	f.b.clients = []api.Client{{Name: "c1"}, {Name: "c2"}}
	if err := f.users.Add("olga", "operator password", RoleOperator); err != nil {
		t.Fatal(err)
	}
	ck, _ := f.signIn("olga", "operator password")

	b := body(t, f.do("GET", "/savesets/search", ck, nil))
	if !strings.Contains(b, `id="search-name"`) || !strings.Contains(b, "<option>c2</option>") || strings.Contains(b, `id="matches"`) {
		t.Fatalf("the search page without a name should be the form alone, with the clients:\n%s", b)
	}

	type hit struct {
		id   int64
		path string
	}
	var got []hit
	next := "/savesets/search?client=c1&name=report"
	for pages := 0; next != ""; pages++ {
		if pages > 4 {
			t.Fatal("more pages than 300 matches make")
		}
		resp := f.do("GET", next, ck, nil)
		b := body(t, resp)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", next, resp.StatusCode, b)
		}
		rows := matchRow.FindAllStringSubmatch(b, -1)

		if len(rows) > searchPage {
			t.Fatalf("a page of %d matches; want at most %d", len(rows), searchPage)
		}
		for _, m := range rows {
			id, _ := strconv.ParseInt(m[1], 10, 64)
			if want := fmt.Sprintf("/savesets/%d?path=%%2fhome%%2fme", id); m[2] != want {
				t.Errorf("match %s links to %s; want its folder, %s", m[3], m[2], want)
			}
			got = append(got, hit{id, m[3]})
		}
		next = ""
		if _, rest, ok := strings.Cut(b, `id="next" href="`); ok {
			link, _, _ := strings.Cut(rest, `"`)
			next = strings.ReplaceAll(link, "&amp;", "&")
		}
	}
	if len(got) != 2*searchHits || got[0] != (hit{8, "/home/me/report-000.odt"}) || got[searchHits] != (hit{7, "/home/me/report-000.odt"}) {
		t.Fatalf("the pages show %d matches, first %v, then %v; want %d, saveset 8's before 7's", len(got), got[0], got[min(searchHits, len(got)-1)], 2*searchHits)
	}
	for _, q := range f.b.finds {
		if q.Client != "c1" || q.Pattern != "report" || !q.NewestFirst || q.Limit != searchPage {
			t.Errorf("a page asked the service for %+v; want client c1's savesets, newest first, %d a page", q, searchPage)
		}
	}

	if b := body(t, f.do("GET", "/savesets/search?client=c2&name=report", ck, nil)); !strings.Contains(b, "No saveset of c2 holds a path matching") {
		t.Errorf("a search with no match should say so:\n%s", b)
	}
	if resp := f.do("GET", "/savesets/search?client=..%2fx&name=report", ck, nil); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a search of client ../x: %d; want 400", resp.StatusCode)
	}
}

// Verify from the saveset's page is a queued job at the chosen level, and
// the page goes to its monitor; an operator, a form without its CSRF
// token and a level the server cannot check are refused and queue nothing.
func TestVerifyFromSavesetPage(t *testing.T) {
	f := newFixture(t)
	if err := f.users.Add("olga", "operator password", RoleOperator); err != nil {
		t.Fatal(err)
	}
	ck, csrf := f.signIn("", adminToken)
	ock, ocsrf := f.signIn("olga", "operator password")
	if b := body(t, f.do("GET", "/savesets/8", ck, nil)); !strings.Contains(b, `id="verify-form"`) || !strings.Contains(b, `<option value="data">`) {
		t.Error("the admin's saveset page has no verify form with the data level")
	}
	if b := body(t, f.do("GET", "/savesets/8", ock, nil)); strings.Contains(b, `id="verify-form"`) {
		t.Error("the operator's saveset page offers a verify")
	}
	for _, c := range []struct {
		what   string
		cookie string
		form   url.Values
		status int
	}{
		{"without the CSRF token", ck, url.Values{"level": {"data"}}, 403},
		{"by an operator", ock, url.Values{"csrf": {ocsrf}, "level": {"data"}}, 403},
		{"at level source", ck, url.Values{"csrf": {csrf}, "level": {"source"}}, 400},
		{"at level everything", ck, url.Values{"csrf": {csrf}, "level": {"everything"}}, 400},
	} {
		if resp := f.do("POST", "/savesets/8/verify", c.cookie, c.form); resp.StatusCode != c.status {
			t.Errorf("a verify %s: %d; want %d", c.what, resp.StatusCode, c.status)
		}
	}
	if got := f.b.requests(); len(got) != 0 {
		t.Fatalf("refused verifies were queued: %+v", got)
	}
	resp := f.do("POST", "/savesets/8/verify", ck, url.Values{"csrf": {csrf}, "level": {"data"}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/jobs/101" {
		t.Fatalf("a verify: %d to %q; want 303 to the job, /jobs/101", resp.StatusCode, resp.Header.Get("Location"))
	}
	if got := f.b.requests(); len(got) != 1 || fmt.Sprint(got[0]) != fmt.Sprint(api.JobRequest{Kind: api.KindVerify, Saveset: 8, Level: "data"}) {
		t.Fatalf("queued %+v; want a data verify of saveset 8", got)
	}
}

// The recipe page shows the stock-tool pipeline of a saveset as text (its
// characters escaped, never markup), and points an incremental to its base.
func TestRecipePage(t *testing.T) {
	f := newFixture(t)
	ck, _ := f.signIn("", adminToken)
	b := body(t, f.do("GET", "/savesets/8", ck, nil))
	if !strings.Contains(b, `href="/savesets/8/recipe"`) {
		t.Error("the saveset page does not link to its recipe")
	}
	resp := f.do("GET", "/savesets/8/recipe", ck, nil)
	b = body(t, resp)
	if resp.StatusCode != http.StatusOK || !strings.Contains(b, `<pre id="recipe">cat /vtl/KUR001/file-8 | zstd -d | tar -xvf - # &lt;b&gt;</pre>`) ||
		!strings.Contains(b, `href="/savesets/7/recipe"`) {
		t.Errorf("the recipe of saveset 8: %d\n%s", resp.StatusCode, b)
	}
	if resp := f.do("GET", "/savesets/9/recipe", ck, nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("the recipe of saveset 9, which is not: %d; want 404", resp.StatusCode)
	}
}
