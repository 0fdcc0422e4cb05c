package catalog

import (
	"errors"
	"testing"
)

func TestMoveLibrary(t *testing.T) { onBoth(t, testMoveLibrary) }

func testMoveLibrary(t *testing.T) {
	c, _ := openTemp(t)
	must(t, c.AddLibrary(Library{Name: "a", Dir: "/old/a", Created: t0}))
	must(t, c.AddTape("KUR001", "a"))
	must(t, c.MoveLibrary("a", "/new/a"))
	if l, err := c.Library("a"); err != nil || l.Dir != "/new/a" || !l.Created.Equal(t0) {
		t.Fatalf("after MoveLibrary: %+v, %v", l, err)
	}
	if lib, err := c.TapeLibrary("KUR001"); err != nil || lib != "a" {
		t.Errorf("the library's tapes after a move: %q, %v", lib, err)
	}
	if err := c.MoveLibrary("zz", "/x"); !errors.Is(err, ErrNotFound) {
		t.Errorf("MoveLibrary of an unknown library: %v, want ErrNotFound", err)
	}
	if err := c.MoveLibrary("a", ""); !errors.Is(err, ErrInvalid) {
		t.Errorf("MoveLibrary to no folder: %v, want ErrInvalid", err)
	}
}
