package catalog

import (
	"errors"
	"reflect"
	"testing"
)

func TestLibraries(t *testing.T) { onBoth(t, testLibraries) }

func testLibraries(t *testing.T) {
	c, _ := openTemp(t)
	if libs, err := c.Libraries(); err != nil || len(libs) != 0 {
		t.Fatalf("Libraries of an empty catalog: %v, %v", libs, err)
	}
	b := Library{Name: "b", Dir: "/vtl/b", Created: t0}
	a := Library{Name: "a", Dir: "/vtl/a", Created: t0.Add(1)}
	must(t, c.AddLibrary(b))
	must(t, c.AddLibrary(a))
	if err := c.AddLibrary(Library{Name: "a", Dir: "/elsewhere"}); !errors.Is(err, ErrExists) {
		t.Errorf("AddLibrary twice: %v, want ErrExists", err)
	}
	if err := c.AddLibrary(Library{Name: "c"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("AddLibrary without a folder: %v, want ErrInvalid", err)
	}
	libs, err := c.Libraries()
	must(t, err)
	if want := []Library{a, b}; !reflect.DeepEqual(libs, want) {
		t.Errorf("Libraries = %+v, want %+v", libs, want)
	}
	got, err := c.Library("a")
	must(t, err)
	if got != a {
		t.Errorf("Library(a) = %+v, want %+v", got, a)
	}
	if _, err := c.Library("zz"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Library(zz): %v, want ErrNotFound", err)
	}

	// A zero Created is set to the time of adding.
	must(t, c.AddLibrary(Library{Name: "now", Dir: "/now"}))
	if l, _ := c.Library("now"); l.Created.IsZero() {
		t.Error("Created not set by AddLibrary")
	}

	must(t, c.RemoveLibrary("b"))
	if _, err := c.Library("b"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Library after RemoveLibrary: %v, want ErrNotFound", err)
	}
	if err := c.RemoveLibrary("b"); !errors.Is(err, ErrNotFound) {
		t.Errorf("RemoveLibrary twice: %v, want ErrNotFound", err)
	}
}

func TestTapes(t *testing.T) { onBoth(t, testTapes) }

func testTapes(t *testing.T) {
	c, _ := openTemp(t)
	must(t, c.AddLibrary(Library{Name: "lib1", Dir: "/1"}))
	must(t, c.AddLibrary(Library{Name: "lib2", Dir: "/2"}))
	must(t, c.AddTape("T1", "lib1"))
	must(t, c.AddTape("T2", "lib2"))
	if err := c.AddTape("T1", "lib2"); !errors.Is(err, ErrExists) {
		t.Errorf("AddTape of a known barcode: %v, want ErrExists", err)
	}
	if err := c.AddTape("T3", "nolib"); !errors.Is(err, ErrNotFound) {
		t.Errorf("AddTape into an unknown library: %v, want ErrNotFound", err)
	}
	if err := c.AddTape("", "lib1"); !errors.Is(err, ErrInvalid) {
		t.Errorf("AddTape without barcode: %v, want ErrInvalid", err)
	}
	for bc, want := range map[string]string{"T1": "lib1", "T2": "lib2"} {
		if got, err := c.TapeLibrary(bc); err != nil || got != want {
			t.Errorf("TapeLibrary(%s) = %q, %v; want %q", bc, got, err, want)
		}
	}
	if _, err := c.TapeLibrary("T3"); !errors.Is(err, ErrNotFound) {
		t.Errorf("TapeLibrary of unknown tape: %v, want ErrNotFound", err)
	}

	// A library that holds tapes cannot be removed.
	if err := c.RemoveLibrary("lib1"); !errors.Is(err, ErrInUse) {
		t.Errorf("RemoveLibrary with tapes: %v, want ErrInUse", err)
	}
	must(t, c.RemoveTape("T1"))
	if _, err := c.TapeLibrary("T1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("TapeLibrary after RemoveTape: %v, want ErrNotFound", err)
	}
	if err := c.RemoveTape("T1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("RemoveTape twice: %v, want ErrNotFound", err)
	}
	must(t, c.RemoveLibrary("lib1"))
	// The barcode is free again.
	must(t, c.AddTape("T1", "lib2"))
}
