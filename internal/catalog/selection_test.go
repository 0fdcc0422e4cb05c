package catalog

import (
	"errors"
	"reflect"
	"testing"
)

func TestSelections(t *testing.T) { onBoth(t, testSelections) }

func testSelections(t *testing.T) {
	c, _ := openTemp(t)
	home := Selection{Name: "home", Paths: []string{"/home", "/root"}, Excludes: []string{"*.o", "cache/"}, Created: t0}
	etc := Selection{Name: "etc", Paths: []string{"/etc"}, Created: t0}
	remote := Selection{Name: "home", Client: "db1", Paths: []string{"/srv"}, Created: t0}
	for _, s := range []Selection{home, etc, remote} {
		must(t, c.CreateSelection(s))
	}
	if err := c.CreateSelection(Selection{Name: "home", Paths: []string{"/x"}}); !errors.Is(err, ErrExists) {
		t.Errorf("CreateSelection twice: %v, want ErrExists", err)
	}
	if err := c.CreateSelection(Selection{Paths: []string{"/x"}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("CreateSelection without name: %v, want ErrInvalid", err)
	}

	got, err := c.Selection("", "home")
	must(t, err)
	if !reflect.DeepEqual(got, home) {
		t.Errorf("Selection(home) = %+v, want %+v", got, home)
	}
	got, err = c.Selection("db1", "home")
	must(t, err)
	if !reflect.DeepEqual(got, remote) {
		t.Errorf("Selection(db1, home) = %+v, want %+v", got, remote)
	}
	if _, err := c.Selection("db2", "home"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Selection of another client: %v, want ErrNotFound", err)
	}

	local, err := c.Selections("")
	must(t, err)
	if want := []Selection{etc, home}; !reflect.DeepEqual(local, want) {
		t.Errorf("Selections(\"\") = %+v, want %+v", local, want)
	}
	if none, err := c.Selections("nobody"); err != nil || len(none) != 0 {
		t.Errorf("Selections(nobody) = %v, %v", none, err)
	}

	must(t, c.RemoveSelection("", "home"))
	if _, err := c.Selection("", "home"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Selection after remove: %v, want ErrNotFound", err)
	}
	if err := c.RemoveSelection("", "home"); !errors.Is(err, ErrNotFound) {
		t.Errorf("RemoveSelection twice: %v, want ErrNotFound", err)
	}
	if _, err := c.Selection("db1", "home"); err != nil {
		t.Errorf("removing the local selection removed db1's: %v", err)
	}
}
