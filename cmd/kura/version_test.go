package main

import (
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/kura-backup/kura/internal/index"
	"github.com/kura-backup/kura/internal/stream"
	"github.com/kura-backup/kura/internal/tape"
)

// TestVersionNamesBuildAndFormats: `kura version` names the Go version and
// the media formats; --json carries them as numbers under snake_case keys.
func TestVersionNamesBuildAndFormats(t *testing.T) {
	k := newKura(t)
	r := k.ok("version")
	for _, want := range []string{"kura ", "commit ", runtime.Version(), "tape label 1", "stream kura-saveset 1", "index 1"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("kura version does not say %q:\n%s", want, r)
		}
	}
	var v versionJSON
	k.json(0, &v, "version", "--json")
	if v.Version == "" || v.Commit == "" || v.GoVersion != runtime.Version() {
		t.Errorf("version --json: %+v", v)
	}
	if v.TapeLabelVersion != tape.LabelVersion || v.TapeChecksumVersion != tape.ChecksumVersion ||
		v.TapeFilemarkVersion != tape.FilemarkVersion || v.StreamFormat != stream.LabelFormat ||
		v.StreamVersion != stream.LabelVersion || v.IndexVersion != index.Version {
		t.Errorf("version --json formats: %+v", v)
	}
	// Nothing is created: version needs no home.
	k.ok("version")
	if _, err := statHome(k); err == nil {
		t.Errorf("kura version created the home %s", k.home)
	}
}

// TestHelpUnknownTopicIsUsage: `kura help bogus` is a usage error (exit 2)
// that names the topic; a real topic still prints its help.
func TestHelpUnknownTopicIsUsage(t *testing.T) {
	k := newKura(t)
	for _, args := range [][]string{{"help", "bogus"}, {"help", "vtl", "bogus"}} {
		r := k.expect(exitUsage, args...)
		if !strings.Contains(r.stderr, "unknown help topic") || !strings.Contains(r.stderr, "bogus") {
			t.Errorf("stderr does not name the unknown topic:\n%s", r)
		}
	}
	r := k.ok("help", "vtl", "list")
	if !strings.Contains(r.stdout, "Usage:") || !strings.Contains(r.stdout, "vtl list") {
		t.Errorf("kura help vtl list:\n%s", r)
	}
}

func statHome(k *kura) (any, error) { return os.Stat(k.home) }
