package bench

import (
	"slices"
	"testing"
)

func TestParseResticVersion(t *testing.T) {
	for in, want := range map[string]resticVersion{
		"restic 0.14.0 compiled with go1.19.8 on linux/amd64":             {0, 14, 0},
		"restic 0.12.1 compiled with go1.15.9 on linux/amd64":             {0, 12, 1},
		"restic 0.17.3-dev (compiled manually) compiled with go1.23 on x": {0, 17, 3},
		"restic v1.0 compiled with go1.30":                                {1, 0, 0},
	} {
		if got, ok := parseResticVersion(in); !ok || got != want {
			t.Errorf("parseResticVersion(%q) = %v, %v; want %v", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "restic", "tar (GNU tar) 1.34", "restic x.y.z", "restic 0", "restic 0.1.2.3"} {
		if v, ok := parseResticVersion(in); ok {
			t.Errorf("parseResticVersion(%q) = %v, want no version", in, v)
		}
	}
	for v, want := range map[resticVersion]bool{{0, 13, 9}: false, {0, 14, 0}: true, {0, 18, 0}: true, {1, 0, 0}: true, {}: false} {
		if got := v.compression(); got != want {
			t.Errorf("%v.compression() = %v, want %v", v, got, want)
		}
	}
}

func TestResticCommandLines(t *testing.T) {
	rc := resticCmd{Repo: "/s/restic-test2-r1", PasswordFile: "/s/restic-test2-r1.password", CacheDir: "/s/restic-test2-r1.cache", Compression: true}
	g := []string{"restic", "--repo", "/s/restic-test2-r1", "--password-file", "/s/restic-test2-r1.password", "--cache-dir", "/s/restic-test2-r1.cache", "--quiet"}
	for _, c := range []struct {
		name      string
		got, want []string
	}{
		{"init", rc.init(), append(slices.Clone(g), "init")},
		{"backup", rc.backup("/data/test2"), append(slices.Clone(g), "--compression", "auto", "backup", "/data/test2")},
		{"restore", rc.restore("/s/restore"), append(slices.Clone(g), "restore", "latest", "--target", "/s/restore")},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
	if rc.level() != "auto" {
		t.Errorf("level = %q, want auto", rc.level())
	}
	rc.Compression = false
	if got := rc.backup("/d"); slices.Contains(got, "--compression") {
		t.Errorf("backup without compression = %q", got)
	}
	// The three command lines must not share a backing array.
	a, b := rc.backup("/a"), rc.restore("/b")
	if a[len(a)-1] != "/a" || b[len(b)-1] != "/b" {
		t.Errorf("command lines alias: %q, %q", a, b)
	}
}
