package library

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// The test binary doubles as a helper process: with KURA_LIBRARY_HOLD=DIR:N
// it acquires drive N of the library in DIR, prints "held", and keeps the
// drive until its stdin closes.
func TestMain(m *testing.M) {
	if v := os.Getenv("KURA_LIBRARY_HOLD"); v != "" {
		os.Exit(holdDrive(v))
	}
	os.Exit(m.Run())
}

func holdDrive(v string) int {
	i := len(v) - 1
	for v[i] != ':' {
		i--
	}
	n, _ := strconv.Atoi(v[i+1:])
	l, err := Open(v[:i])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	d, err := l.Acquire(context.Background(), n)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if _, err := d.Load("KUR001"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("held")
	io.Copy(io.Discard, os.Stdin)
	if err := d.Release(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func TestAcquireAcrossProcesses(t *testing.T) {
	l := newLibrary(t, nil)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "KURA_LIBRARY_HOLD="+l.Config().Dir+":1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		cmd.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "held\n" {
		t.Fatalf("child: %q, %v", line, err)
	}

	// The child holds drive 1: this process cannot have it.
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, err := l.Acquire(ctx, 1); !errors.Is(err, ErrDriveBusy) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire of a drive held by another process: %v", err)
	}
	ds, err := l.Drives()
	if err != nil {
		t.Fatal(err)
	}
	if !ds[0].Busy || ds[0].Barcode != "KUR001" || ds[1].Busy {
		t.Errorf("drives while the child holds drive 1: %+v", ds)
	}
	// Any free drive: drive 2.
	d2, err := l.Acquire(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if d2.Number() != 2 {
		t.Errorf("Acquire(0) gave drive %d, want 2", d2.Number())
	}
	// The tape in the child's drive cannot be taken.
	if _, err := d2.Load("KUR001"); !errors.Is(err, ErrDriveBusy) {
		t.Errorf("Load of a tape in another process's drive: %v", err)
	}
	d2.Release()

	// Once the child lets go, the drive is ours.
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	d1, err := l.Acquire(t.Context(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer d1.Release()
	if d1.Number() != 1 {
		t.Errorf("drive %d", d1.Number())
	}
}

func TestAcquireWaits(t *testing.T) {
	l := newLibrary(t, nil)
	d1, err := l.Acquire(t.Context(), 1)
	if err != nil {
		t.Fatal(err)
	}
	d2, err := l.Acquire(t.Context(), 2)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		d   Drive
		err error
	}
	got := make(chan result, 1)
	go func() {
		d, err := l.Acquire(t.Context(), 0)
		got <- result{d, err}
	}()
	select {
	case r := <-got:
		t.Fatalf("Acquire(0) returned while every drive was held: %+v", r)
	default:
	}
	if err := d2.Release(); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.d.Number() != 2 {
		t.Errorf("waiting Acquire(0) got drive %d, want 2", r.d.Number())
	}
	if err := r.d.Release(); err != nil {
		t.Fatal(err)
	}
	if err := r.d.Release(); !errors.Is(err, ErrReleased) {
		t.Errorf("second Release: %v", err)
	}

	// Giving up: the error names the cause.
	cause := errors.New("job canceled by operator")
	ctx, cancel := context.WithCancelCause(t.Context())
	go func() {
		d, err := l.Acquire(ctx, 1)
		got <- result{d, err}
	}()
	cancel(cause)
	r = <-got
	if !errors.Is(r.err, ErrDriveBusy) || !errors.Is(r.err, cause) {
		t.Errorf("Acquire after cancel: %v", r.err)
	}
	if _, err := l.Acquire(t.Context(), 3); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("Acquire of drive 3: %v", err)
	}
	if err := d1.Release(); err != nil {
		t.Fatal(err)
	}
}
