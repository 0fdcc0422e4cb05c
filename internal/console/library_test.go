package console

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/kura-backup/kura/internal/api"
)

// slotHolds reports which tape the library picture shows in slot n ("" when
// none).
func slotHolds(page, attr string, n string) string {
	re := regexp.MustCompile(`(?s)<li class="[^"]*" (?:id="[^"]*" )?` + attr + `="` + n + `">(.*?)</li>`)
	m := re.FindStringSubmatch(page)
	if m == nil {
		return "(no such place)"
	}
	if t := regexp.MustCompile(`data-tape="([^"]+)"`).FindStringSubmatch(m[1]); t != nil {
		return t[1]
	}
	return ""
}

// The library picture shows each tape in its slot; load, unload, export,
// import, label, add tapes and the drive settings change the real library
// and the picture shows the change; erase is a queued job.
func TestLibraryPageActions(t *testing.T) {
	f, lb := newLocalFixture(t)
	ck, csrf := f.signIn("", adminToken)
	if resp := f.do("GET", "/libraries", ck, nil); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/libraries/vtl" {
		t.Errorf("/libraries with one library: %d to %q; want a redirect to /libraries/vtl", resp.StatusCode, resp.Header.Get("Location"))
	}
	pic := f.page(ck, "/libraries/vtl")
	for n, want := range map[string]string{"1": "VT001", "2": "VT002", "4": "VT004"} {
		if got := slotHolds(pic, "data-slot", n); got != want {
			t.Errorf("slot %s shows %q; want %s", n, got, want)
		}
	}
	if got := slotHolds(pic, "data-drive", "1"); got != "" {
		t.Errorf("drive 1 shows %q; want empty", got)
	}
	post := func(path string, form url.Values) {
		t.Helper()
		form.Set("csrf", csrf)
		resp := f.do("POST", path, ck, form)
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("POST %s: %d\n%s", path, resp.StatusCode, readBody(resp))
		}
	}

	post("/tapes/VT002/load", url.Values{"drive": {"1"}})
	if w := field(f.page(ck, "/tapes/VT002"), "tape-where"); w != "drive 1 (home slot 2)" {
		t.Errorf("the loaded tape's page says it is in %q; want drive 1 (home slot 2)", w)
	}
	pic = f.page(ck, "/libraries/vtl")
	if got := slotHolds(pic, "data-drive", "1"); got != "VT002" {
		t.Errorf("after the load drive 1 shows %q; want VT002", got)
	}
	if got := slotHolds(pic, "data-slot", "2"); got != "" || !strings.Contains(pic, `home of <a href="#tape-VT002">VT002</a>`) {
		t.Errorf("after the load slot 2 shows %q; want it empty, the home of VT002", got)
	}
	post("/tapes/VT002/unload", url.Values{})
	if got := slotHolds(f.page(ck, "/libraries/vtl"), "data-slot", "2"); got != "VT002" {
		t.Errorf("after the unload slot 2 shows %q; want VT002", got)
	}

	post("/tapes/VT003/export", url.Values{})
	if got := slotHolds(f.page(ck, "/libraries/vtl"), "data-mail-slot", "1"); got != "VT003" {
		t.Errorf("after the export mail slot 1 shows %q; want VT003", got)
	}
	post("/tapes/VT003/import", url.Values{})
	if tp, err := lb.Tape(t.Context(), "VT003"); err != nil || tp.Slot == 0 {
		t.Errorf("after the import VT003 is %+v, %v; want in a slot", tp, err)
	}

	post("/tapes/VT001/label", url.Values{"pool": {"weekly"}})
	if b := f.page(ck, "/tapes/VT001"); !strings.Contains(b, `<td id="tape-pool">weekly</td>`) {
		t.Errorf("after the label the tape page does not show pool weekly:\n%s", b)
	}

	post("/libraries/vtl/tapes", url.Values{"count": {"2"}})
	if tapes, err := lb.Tapes(t.Context(), api.TapeQuery{Library: "vtl"}); err != nil || len(tapes) != 6 {
		t.Errorf("after adding 2 tapes the library has %d, %v; want 6", len(tapes), err)
	}
	if got := slotHolds(f.page(ck, "/libraries/vtl"), "data-slot", "6"); got != "VT006" {
		t.Errorf("slot 6 shows %q; want the added VT006", got)
	}

	post("/libraries/vtl/drives/2", url.Values{"block_size": {"1MiB"}, "buffer_size": {"32769 KiB"}})
	ds, err := lb.Drives(t.Context(), "vtl")
	if err != nil || len(ds) != 2 || ds[1].BlockSizeBytes != 1<<20 || ds[1].BufferSizeBytes != 32769<<10 {
		t.Errorf("drive 2 after its settings: %+v, %v; want 1 MiB blocks, 32769 KiB buffer", ds, err)
	}
	if b := f.page(ck, "/libraries/vtl"); !strings.Contains(b, "block 1024 KiB · buffer 32769 KiB") {
		t.Error("the picture does not show drive 2's new settings")
	}

	resp := f.do("POST", "/tapes/VT004/erase", ck, url.Values{"csrf": {csrf}, "force": {"on"}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/jobs/201" {
		t.Errorf("erase: %d to %q; want the queued job's monitor", resp.StatusCode, resp.Header.Get("Location"))
	}
	if got := lb.requests(); len(got) != 1 || got[0].Kind != api.KindErase || got[0].Barcode != "VT004" || !got[0].Force {
		t.Errorf("queued %+v; want a forced erase of VT004", got)
	}
}

// Bad input on the library pages is a 4xx page that says what is wrong,
// and changes nothing.
func TestLibraryBadInput(t *testing.T) {
	f, lb := newLocalFixture(t)
	ck, csrf := f.signIn("", adminToken)
	for _, c := range []struct {
		path   string
		form   url.Values
		status int
		says   string
	}{
		{"/tapes/VT001/load", url.Values{"drive": {"one"}}, 400, "not a whole number"},
		{"/tapes/VT001/load", url.Values{"drive": {"0"}}, 400, "which drive"},
		{"/tapes/VT001/load", url.Values{"drive": {"9"}}, 0, "drive"},
		{"/tapes/VT001/label", url.Values{"pool": {""}}, 400, "pool"},
		{"/tapes/NOPE01/unload", url.Values{}, 404, "NOPE01"},
		{"/tapes/VT001/unload", url.Values{}, 0, "VT001"},
		{"/tapes/VT001/shred", url.Values{}, 404, "no tape action"},
		{"/libraries/vtl/tapes", url.Values{"count": {"0"}}, 400, "count"},
		{"/libraries/vtl/tapes", url.Values{"count": {"many"}}, 400, "not a whole number"},
		{"/libraries/vtl/drives/1", url.Values{"block_size": {"lots"}}, 400, "not a size"},
		{"/libraries/vtl/drives/1", url.Values{"block_size": {"1KiB"}}, 400, "block"},
		{"/libraries/vtl/drives/1", url.Values{}, 400, "block_size"},
		{"/libraries/nowhere/drives/1", url.Values{"block_size": {"256KiB"}}, 404, "nowhere"},
	} {
		c.form.Set("csrf", csrf)
		resp := f.do("POST", c.path, ck, c.form)
		b := readBody(resp)
		if resp.StatusCode < 400 || resp.StatusCode >= 500 || (c.status != 0 && resp.StatusCode != c.status) || !strings.Contains(b, c.says) {
			t.Errorf("POST %s %v: %d; want %d saying %q\n%s", c.path, c.form, resp.StatusCode, c.status, c.says, errorMessage(b))
		}
	}
	if resp := f.do("GET", "/libraries/nowhere", ck, nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /libraries/nowhere: %d; want 404", resp.StatusCode)
	}
	tapes, err := lb.Tapes(t.Context(), api.TapeQuery{Library: "vtl"})
	if err != nil || len(tapes) != 4 {
		t.Fatalf("tapes %v, %v", tapes, err)
	}
	for _, tp := range tapes {
		if tp.Drive != 0 || tp.Pool != "" {
			t.Errorf("after the refused changes %s is %+v; want in its slot, scratch", tp.Barcode, tp)
		}
	}
}

// errorMessage is the message of an error page.
func errorMessage(page string) string {
	m := regexp.MustCompile(`(?s)id="error-message">(.*?)</p>`).FindStringSubmatch(page)
	if m == nil {
		return "(not an error page)"
	}
	return m[1]
}

// Operators see the library but change nothing (403); a change without the
// CSRF token is refused.
func TestLibraryOperatorAndCSRF(t *testing.T) {
	f, lb := newLocalFixture(t)
	checkRefusals(t, f, []changeCase{
		{"/tapes/VT001/load", url.Values{"drive": {"1"}}},
		{"/tapes/VT001/export", url.Values{}},
		{"/tapes/VT001/label", url.Values{"pool": {"weekly"}}},
		{"/tapes/VT001/erase", url.Values{"force": {"on"}}},
		{"/libraries/vtl/tapes", url.Values{"count": {"1"}}},
		{"/libraries/vtl/drives/1", url.Values{"block_size": {"1MiB"}}},
	}, func() bool {
		tapes, err := lb.Tapes(t.Context(), api.TapeQuery{Library: "vtl"})
		ds, derr := lb.Drives(t.Context(), "vtl")
		return err == nil && derr == nil && len(tapes) == 4 && tapes[0].Slot == 1 && tapes[0].Pool == "" &&
			ds[0].BlockSizeBytes == 256<<10 && len(lb.requests()) == 0
	})
	op, _ := f.signIn("olga", "operator password")
	b := f.page(op, "/libraries/vtl")
	if slotHolds(b, "data-slot", "1") != "VT001" || strings.Contains(b, "Add tapes") || strings.Contains(b, "Unload") {
		t.Error("the operator's picture: want the tapes and no actions")
	}
	if b := f.page(op, "/tapes/VT001"); strings.Contains(b, `id="load"`) || strings.Contains(b, `id="erase"`) {
		t.Error("the operator's tape page offers actions")
	}
}

// With more than one library /libraries lists them, each with its size and
// a link to its picture.
func TestLibrariesList(t *testing.T) {
	f, lb := newLocalFixture(t)
	if _, err := lb.CreateLibrary(t.Context(), api.LibraryCreate{Name: "offsite", Slots: 2, Drives: 1, TapeSizeBytes: 16 << 20, BarcodePrefix: "OF"}); err != nil {
		t.Fatal(err)
	}
	ck, _ := f.signIn("", adminToken)
	b := f.page(ck, "/libraries")
	for _, want := range []string{
		`<tr data-library="vtl"><td><a href="/libraries/vtl">vtl</a></td>`,
		`<tr data-library="offsite"><td><a href="/libraries/offsite">offsite</a></td>`,
	} {
		if !strings.Contains(b, want) {
			t.Errorf("the list has no %s", want)
		}
	}
	if row := regexp.MustCompile(`(?s)<tr data-library="offsite">(.*?)</tr>`).FindString(b); !strings.Contains(row, `<td class="num">2</td><td class="num">1</td><td class="num">1</td>`+"\n"+`<td class="num">2</td><td>16.0 MiB</td>`) {
		t.Errorf("offsite's row does not say 2 slots, 1 drive, 1 mail slot, 2 tapes of 16 MiB:\n%s", row)
	}
	if got := slotHolds(f.page(ck, "/libraries/offsite"), "data-slot", "2"); got != "OF002" {
		t.Errorf("offsite's slot 2 shows %q; want OF002", got)
	}
}
