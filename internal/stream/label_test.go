package stream

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func testLabel() Label {
	return Label{SavesetID: 42, JobID: 7, Client: "web1", Host: "store", Selection: "etc",
		Paths: []string{"/etc", "/home/ü"}, Level: "full", Created: time.Unix(1700000000, 5).UTC(),
		Part: 1, PrevBarcode: "KURA001L9", Codec: "zstd", FrameSize: DefaultFrameSize, Label: "weekly\nfull"}
}

func TestLabelRoundTrip(t *testing.T) {
	l := testLabel()
	f := LabelFrame(l)
	r := bytes.NewReader(append(bytes.Clone(f), "NEXT"...))
	got, err := ReadLabelFrame(r)
	if err != nil {
		t.Fatal(err)
	}
	l.Format, l.Version = LabelFormat, LabelVersion
	if got.Created.Equal(l.Created) {
		got.Created = l.Created
	}
	if !equalLabel(got, l) {
		t.Fatalf("got %+v\nwant %+v", got, l)
	}
	if r.Len() != 4 {
		t.Errorf("ReadLabelFrame read past the frame: %d bytes left", r.Len())
	}
	text := string(f[8:])
	for _, want := range []string{"KURA SAVESET LABEL", "Saveset 42", Recipe([]string{"FILE"}), `weekly\nfull`} {
		if !strings.Contains(text, want) {
			t.Errorf("label text lacks %q", want)
		}
	}
}

func equalLabel(a, b Label) bool {
	return reflect.DeepEqual(a, b)
}

func TestLabelErrors(t *testing.T) {
	good := LabelFrame(testLabel())
	hdr := func(magic, n uint32) []byte {
		b := binary.LittleEndian.AppendUint32(nil, magic)
		return binary.LittleEndian.AppendUint32(b, n)
	}
	flip := func(i int) []byte { b := bytes.Clone(good); b[i] ^= 1; return b }
	jsonAt := bytes.Index(good, []byte(`"saveset_id"`))
	cases := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, ErrNotLabel},
		{"zstd frame", []byte{0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0, 0}, ErrNotLabel},
		{"other skippable", append(hdr(0x184D2A50, 4), "abcd"...), ErrNotLabel},
		{"too large", hdr(LabelMagic, MaxLabelSize+1), ErrLabelTooLarge},
		{"huge", hdr(LabelMagic, 0xFFFFFFFF), ErrLabelTooLarge},
		{"short", good[:len(good)-10], ErrLabelDamaged},
		{"json bit flip", flip(jsonAt + 2), ErrLabelDamaged},
		{"checksum flip", flip(bytes.Index(good, []byte("xxh3=")) + 6), ErrLabelDamaged},
		{"foreign text", append(hdr(LabelMagic, 5), "hello"...), ErrNotLabel},
	}
	for _, c := range cases {
		if _, err := ReadLabelFrame(bytes.NewReader(c.in)); !errors.Is(err, c.want) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.want)
		}
	}
}

func TestLabelTooManyPathsIsCut(t *testing.T) {
	l := testLabel()
	for i := 0; i < 100000; i++ {
		l.Paths = append(l.Paths, strings.Repeat("p", 40))
	}
	f := LabelFrame(l)
	if len(f) > 8+MaxLabelSize {
		t.Fatalf("label frame %d bytes", len(f))
	}
	got, err := ReadLabelFrame(bytes.NewReader(f))
	if err != nil || len(got.Paths) == 0 || len(got.Paths) >= len(l.Paths) {
		t.Fatalf("paths %d of %d, err %v", len(got.Paths), len(l.Paths), err)
	}
}

// The shell must see exactly the file names Recipe was given.
func TestRecipeQuoting(t *testing.T) {
	names := []string{"plain.kura", "with space", "it's", `$HOME`, "a;rm -rf x", "-dash", "tab\there", "ü", "`x`"}
	r := Recipe(names)
	const tail = " | zstd -dc | tar --delay-directory-restore --xattrs --xattrs-include='*' -xpf -"
	if !strings.HasPrefix(r, "cat ") || !strings.HasSuffix(r, tail) {
		t.Fatalf("recipe %q", r)
	}
	args := strings.TrimSuffix(strings.TrimPrefix(r, "cat "), tail)
	out, err := exec.Command("sh", "-c", `for a in `+args+`; do printf '%s\n' "$a"; done`).Output()
	if err != nil {
		t.Fatal(err)
	}
	want := append([]string(nil), names...)
	want[5] = "./-dash"
	if got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n"); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("shell saw %q\nwant %q", got, want)
	}
}

// TestRecipeS3KeepsCredentialsOffTheCommandLine: the S3 recipe, run by sh
// with a curl that records what it is given, hands curl the access key,
// secret and session token on its standard input (a config file), never
// as arguments, which every user on the machine sees in ps; without a
// session token no token header is sent.
func TestRecipeS3KeepsCredentialsOffTheCommandLine(t *testing.T) {
	for _, token := range []string{"", "session-T0KEN"} {
		bin, out := t.TempDir(), t.TempDir()
		fake := "#!/bin/sh\nprintf '%s\\n' \"$@\" >> " + out + "/argv\ncat >> " + out + "/config\n"
		if err := os.WriteFile(filepath.Join(bin, "curl"), []byte(fake), 0o755); err != nil {
			t.Fatal(err)
		}
		recipe := RecipeS3([]string{"http://127.0.0.1:9/b/k1", "http://127.0.0.1:9/b/k2"}, "eu-west-1")
		cmd := exec.Command("sh", "-c", recipe)
		cmd.Dir = t.TempDir()
		cmd.Env = []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "AWS_ACCESS_KEY_ID=AKIDEXAMPLE",
			"AWS_SECRET_ACCESS_KEY=s3cr3t/Key+x", "AWS_SESSION_TOKEN=" + token}
		cmd.Run() // zstd finds no data: only what curl was given matters
		argv, err := os.ReadFile(filepath.Join(out, "argv"))
		if err != nil {
			t.Fatalf("curl was not run: %v\n%s", err, recipe)
		}
		config, _ := os.ReadFile(filepath.Join(out, "config"))
		if strings.Contains(string(argv), "s3cr3t") || strings.Contains(string(argv), "AKIDEXAMPLE") || (token != "" && strings.Contains(string(argv), token)) {
			t.Errorf("credentials on curl's command line:\n%s", argv)
		}
		if n := strings.Count(string(config), `user = "AKIDEXAMPLE:s3cr3t/Key+x"`); n != 2 {
			t.Errorf("curl got the credentials %d times on its input, want once per object:\n%s", n, config)
		}
		if got := strings.Count(string(config), "x-amz-security-token: "+token); (token != "") != (got == 2) {
			t.Errorf("session token %q: %d headers on curl's input:\n%s", token, got, config)
		}
		if !strings.Contains(string(argv), "aws:amz:eu-west-1:s3") || !strings.Contains(string(argv), "http://127.0.0.1:9/b/k2") {
			t.Errorf("curl arguments:\n%s", argv)
		}
	}
}

// An encrypted saveset's recipe, from files or from a bucket, decrypts with
// the stock age tool between the parts and zstd.
func TestSealedRecipe(t *testing.T) {
	for _, r := range []string{Recipe([]string{"/t/A/000001.data", "/t/B/000001.data"}), RecipeS3([]string{"http://h/b/000001.data.000001"}, "us-east-1")} {
		got := Sealed(r)
		i, j := strings.Index(got, "| age -d -i "), strings.Index(got, "| zstd -dc |")
		if i < 0 || j < 0 || i > j || strings.Count(got, "age -d") != 1 || !strings.Contains(got, "KURA_KEYS") {
			t.Errorf("Sealed(%q) = %q", r, got)
		}
	}
}
