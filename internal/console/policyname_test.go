package console

import (
	"net/http"
	"strings"
	"testing"
)

// A policy may be named new: its page is /policies/new like any other
// policy's, because the create form is at /new/policy. Before such a
// policy exists, /policies/new (a link from before the form moved) leads
// to the form.
func TestPolicyNamedNew(t *testing.T) {
	f, lb := newLocalFixture(t)
	withClient(t, lb)
	ck, csrf := f.signIn("", adminToken)
	if b := f.page(ck, "/policies"); !strings.Contains(b, `href="/new/policy" id="new-policy"`) {
		t.Errorf("the policies page does not link the form at /new/policy")
	}
	resp := f.do("GET", "/policies/new", ck, nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/new/policy" {
		t.Errorf("GET /policies/new without such a policy: %d to %q; want 303 to the form", resp.StatusCode, resp.Header.Get("Location"))
	}
	form := nightly()
	form.Set("name", "new")
	form.Set("csrf", csrf)
	resp = f.do("POST", "/policies", ck, form)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/policies/new" {
		t.Fatalf("create a policy named new: %d to %q\n%s", resp.StatusCode, resp.Header.Get("Location"), errorMessage(readBody(resp)))
	}
	b := f.page(ck, "/policies/new")
	if !strings.Contains(b, `id="calendar"`) || !strings.Contains(b, "edit-policy") || strings.Contains(b, `name="full_cron"`) {
		t.Errorf("/policies/new is not the page of the policy named new")
	}
	if b := f.page(ck, "/new/policy"); !strings.Contains(b, `name="full_cron"`) {
		t.Errorf("/new/policy is not the create form")
	}
	if b := f.page(ck, "/policies/new/edit"); !strings.Contains(b, `value="0 1 * * 6"`) {
		t.Errorf("the edit form of the policy named new does not hold its schedule")
	}
}
