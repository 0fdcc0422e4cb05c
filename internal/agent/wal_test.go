package agent

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/apiclient"
)

// The spool has one sender at a time, and a file the server does not
// take stays spooled, in order.
func TestSendSpoolOneSenderAndKeepsUnsent(t *testing.T) {
	home := t.TempDir()
	c, err := apiclient.New("https://127.0.0.1:1", nil, "") // nothing listens there
	if err != nil {
		t.Fatal(err)
	}
	a := &Agent{opts: Options{Home: home}, c: c}
	src := filepath.Join(t.TempDir(), "seg")
	if err := os.WriteFile(src, []byte("wal"), 0o600); err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1000, 0)
	for i, f := range []string{"000000010000000000000002", "000000010000000000000001"} {
		if err := SpoolWAL(home, "main", f, src, t0.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	list, err := SpoolList(home)
	if err != nil || len(list) != 2 || list[0].File != "000000010000000000000002" {
		t.Fatalf("spool in arrival order: %+v, %v", list, err)
	}

	unlock, ok, err := lockSpool(home)
	if err != nil || !ok {
		t.Fatalf("lock: %v %v", ok, err)
	}
	if n, err := a.SendSpool(context.Background()); n != 0 || err != nil {
		t.Errorf("with another sender at work SendSpool should return 0, nil: %d, %v", n, err)
	}
	unlock()
	if n, err := a.SendSpool(context.Background()); n != 0 || err == nil {
		t.Errorf("with the server unreachable SendSpool should fail: %d, %v", n, err)
	}
	if list, _ := SpoolList(home); len(list) != 2 {
		t.Errorf("unsent files must stay spooled: %+v", list)
	}
}
