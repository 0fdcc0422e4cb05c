package mtx

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestParseStatusGolden: each fixture parses to its golden inventory, and
// renders back to text that parses the same.
func TestParseStatusGolden(t *testing.T) {
	for _, name := range []string{"two-drives", "no-barcodes", "alternate-tags"} {
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile(filepath.Join("testdata", name+".txt"))
			if err != nil {
				t.Fatal(err)
			}
			s, err := ParseStatus(in)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.MarshalIndent(s, "", "  ")
			got = append(got, '\n')
			golden := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("%s parses to\n%s\nwant\n%s", name, got, want)
			}
			again, err := ParseStatus([]byte(s.String()))
			if err != nil || !reflect.DeepEqual(again, s) {
				t.Errorf("rendered and parsed again: %+v, %v\n%s", again, err, s)
			}
		})
	}
}

// TestParseStatusRefuses: output outside the grammar, or that disagrees
// with its own header, is ErrBadStatus naming the line.
func TestParseStatusRefuses(t *testing.T) {
	good, _ := os.ReadFile(filepath.Join("testdata", "two-drives.txt"))
	noise, _ := os.ReadFile(filepath.Join("testdata", "sense-noise.txt"))
	short, _ := os.ReadFile(filepath.Join("testdata", "short.txt"))
	for name, c := range map[string]struct {
		in   string
		want string
	}{
		"sense noise":        {string(noise), "line 1"},
		"fewer slots":        {string(short), "2 slots"},
		"empty":              {"", "line 1"},
		"drive out of order": {strings.Replace(string(good), "Element 1:Empty", "Element 2:Empty", 1), "drive 2 where 1"},
		"slot out of order":  {strings.Replace(string(good), "Storage Element 5:", "Storage Element 6:", 1), "slot 6 where 5"},
		"drive after slots":  {string(good) + "Data Transfer Element 2:Empty\n", "a drive after the slots"},
		"source past slots":  {strings.Replace(string(good), "Storage Element 3 Loaded", "Storage Element 99 Loaded", 1), "slot 99 of 12"},
		"tag with a space":   {strings.Replace(string(good), "VolumeTag=KUR001L8", "VolumeTag=KUR 01", 1), ""},
		"huge count":         {strings.Replace(string(good), "12 Slots", "99999999 Slots", 1), "counts"},
		"negative number":    {strings.Replace(string(good), "Storage Element 4:", "Storage Element -4:", 1), "slot number"},
		"unknown state":      {strings.Replace(string(good), "Storage Element 5:Empty", "Storage Element 5:Broken", 1), "slot state"},
		"wrong import count": {strings.Replace(string(good), "( 2 Import", "( 1 Import", 1), "import/export"},
	} {
		_, err := ParseStatus([]byte(c.in))
		if !errors.Is(err, ErrBadStatus) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrBadStatus saying %q", name, err, c.want)
		}
	}
}

// fake is a changer that answers status from a fixture and records the
// commands it was given.
type fake struct {
	status string
	ran    []string
}

func (f *fake) run(_ context.Context, args ...string) ([]byte, error) {
	f.ran = append(f.ran, strings.Join(args, " "))
	if args[len(args)-1] == "status" {
		return []byte(f.status), nil
	}
	return nil, nil
}

// TestChanger: load, unload and transfer run mtx with the right words
// after checking a fresh inventory; impossible moves are refused before
// the robot is asked.
func TestChanger(t *testing.T) {
	in, _ := os.ReadFile(filepath.Join("testdata", "two-drives.txt"))
	f := &fake{status: string(in)}
	c := &Changer{Device: "/dev/sg5", Run: f.run}
	ctx := context.Background()
	check := func(err error, want error, ran string) {
		t.Helper()
		if !errors.Is(err, want) && !(want == nil && err == nil) {
			t.Errorf("err %v, want %v", err, want)
		}
		if got := f.ran[len(f.ran)-1]; got != ran {
			t.Errorf("last mtx command %q, want %q", got, ran)
		}
	}
	check(c.Load(ctx, 1, 1), nil, "-f /dev/sg5 load 1 1")
	check(c.Load(ctx, 3, 1), ErrSlotEmpty, "-f /dev/sg5 status")
	check(c.Load(ctx, 1, 0), ErrDriveFull, "-f /dev/sg5 status")
	check(c.Load(ctx, 13, 1), ErrNoSuchElement, "-f /dev/sg5 status")
	check(c.Unload(ctx, 0, 0), nil, "-f /dev/sg5 unload 3 0")
	check(c.Unload(ctx, 1, 0), ErrSlotFull, "-f /dev/sg5 status")
	check(c.Unload(ctx, 5, 1), ErrDriveEmpty, "-f /dev/sg5 status")
	check(c.Transfer(ctx, 11, 5), nil, "-f /dev/sg5 transfer 11 5")
	check(c.Transfer(ctx, 12, 5), ErrSlotEmpty, "-f /dev/sg5 status")
	s, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d, sl := s.Find("KUR003L8"); d != 0 || sl != 0 {
		t.Errorf("Find(KUR003L8) = drive %d, slot %d; want drive 0", d, sl)
	}
	if d, sl := s.Find("KUR011L8"); d != -1 || sl != 11 {
		t.Errorf("Find(KUR011L8) = drive %d, slot %d; want slot 11", d, sl)
	}
	if d, sl := s.Find("NOPE"); d != -1 || sl != 0 {
		t.Errorf("Find(NOPE) = %d, %d", d, sl)
	}
}

// FuzzParseStatus: nothing panics, and whatever parses renders to text
// that parses the same.
func FuzzParseStatus(f *testing.F) {
	for _, name := range []string{"two-drives", "no-barcodes", "alternate-tags", "sense-noise", "short"} {
		b, _ := os.ReadFile(filepath.Join("testdata", name+".txt"))
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseStatus(b)
		if err != nil {
			return
		}
		again, err := ParseStatus([]byte(s.String()))
		if err != nil || !reflect.DeepEqual(again, s) {
			t.Fatalf("round trip: %+v, %v", again, err)
		}
	})
}
