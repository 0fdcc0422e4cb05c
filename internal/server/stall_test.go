package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/agent"
	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/apiclient"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/compress"
)

// A revoked agent exits promptly even while it runs a restore held to a
// low bandwidth limit: the refusal stops its jobs, and Run returns the
// refusal. The saveset stays restorable onto another client.
func TestRevokedMidRestoreAgentExits(t *testing.T) {
	t.Parallel()
	r := startServer(t, t.TempDir(), "")
	home := r.enroll("c1", "")
	_, done := launchAgent(t, home, "c1")
	r.waitOnline("c1", true)
	src := t.TempDir()
	randomFiles(t, src, 16, 256<<10, 31)
	b := r.backupAndCheck(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src}, Compress: "none", FrameSize: 64 << 10})

	// 4 MiB at 64 KiB/s would take over a minute.
	id := r.submit(api.JobRequest{Kind: api.KindRestore, Client: "c1", Saveset: b.SavesetID, To: t.TempDir(), BWLimit: 64 << 10})[0]
	r.waitProgress(id)
	revoked := time.Now()
	if _, err := r.admin.RevokeClient(t.Context(), "c1"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if c := apiclient.Code(err); c != api.CodeForbidden {
			t.Errorf("Run: %v (code %q); want forbidden", err, c)
		}
		t.Logf("Run ended %s after the revocation: %v", time.Since(revoked).Round(time.Millisecond), err)
	case <-time.After(10 * time.Second):
		t.Fatal("the revoked agent's Run did not end within 10s of the revocation, with its restore running")
	}
	if j := r.wait(id); j.State != catalog.StateFailed || !strings.Contains(j.Error, "revoked") {
		t.Errorf("the restore of the revoked agent: %s (%q); want failed because c1 was revoked", j.State, j.Error)
	}

	r.runAgent("c2")
	to := t.TempDir()
	j := r.wait(r.submit(api.JobRequest{Kind: api.KindRestore, Client: "c1", Saveset: b.SavesetID, To: to, ToClient: "c2"})[0])
	if j.State != catalog.StateSucceeded {
		t.Fatalf("restore of c1's saveset onto c2: %s (%s)", j.State, j.Error)
	}
	sameTree(t, src, filepath.Join(to, src))
}

// An agent whose network goes dead in the middle of a restore gives the
// job up after the idle limit the server sent with the order, instead of
// waiting on the dead connection; once the network is back it takes the
// next job.
func TestAgentGivesUpOnDeadNetworkMidRestore(t *testing.T) {
	t.Parallel()
	opts := fastOpts
	opts.IdleTimeout = 1500 * time.Millisecond
	r := startServerWith(t, t.TempDir(), "", opts)
	px := startProxy(t, r.addr)
	home := r.enroll("c1", px.url())
	alog := &logWriter{t: t, prefix: "c1: "}
	a, err := agent.Open(agent.Options{Home: home, Log: alog, MinBackoff: 50 * time.Millisecond,
		MaxBackoff: 200 * time.Millisecond, ProgressEvery: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan struct{})
	go func() { defer close(ended); _ = a.Run(ctx) }()
	t.Cleanup(func() { px.cut(); cancel(); <-ended })
	r.waitOnline("c1", true)
	src := t.TempDir()
	randomFiles(t, src, 16, 256<<10, 32)
	b := r.backupAndCheck(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src}, Compress: "none", FrameSize: 64 << 10})

	id := r.submit(api.JobRequest{Kind: api.KindRestore, Client: "c1", Saveset: b.SavesetID, To: t.TempDir(), BWLimit: 64 << 10})[0]
	r.waitProgress(id)
	px.freeze()
	frozen := time.Now()
	want := fmt.Sprintf("job=%d", id)
	deadline := frozen.Add(opts.IdleTimeout + 8*time.Second)
	for {
		var line string
		for _, l := range strings.Split(alog.String(), "\n") {
			if strings.Contains(l, "job failed") && strings.Contains(l, want) {
				line = l
			}
		}
		if line != "" {
			if !strings.Contains(line, agent.ErrIdle.Error()) {
				t.Errorf("the agent's job failed, but not for the dead network: %s", line)
			}
			t.Logf("the agent gave the job up %s after the network died", time.Since(frozen).Round(time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent still waits on the dead network %s after it died", time.Since(frozen).Round(time.Millisecond))
		}
		time.Sleep(20 * time.Millisecond) // polling the agent's log
	}
	if j := r.wait(id); j.State != catalog.StateFailed {
		t.Errorf("the restore over a dead network: %s (%s)", j.State, j.Error)
	}

	px.cut()
	r.waitOnline("c1", true)
	r.restoreAndCheck("c1", b.SavesetID, src)
}

// An agent that stops reading a restore's data does not hold the server's
// handler: it gives up after the idle timeout and breaks the stream, so
// the agent sees damage rather than a clean end.
func TestServerGivesUpOnAgentNotReading(t *testing.T) {
	t.Parallel()
	opts := fastOpts
	opts.IdleTimeout = 1500 * time.Millisecond
	r := startServerWith(t, t.TempDir(), "", opts)
	home, stop := r.runAgent("c1")
	src := t.TempDir()
	randomFiles(t, src, 12, 1<<20, 33) // more than the HTTP/2 windows take
	b := r.backupAndCheck(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src}, Compress: "none"})
	stop()

	// The agent's identity, by hand: take the order, open the data, read nothing.
	c := agentAPI(t, home, r.url)
	id := r.submit(api.JobRequest{Kind: api.KindRestore, Client: "c1", Saveset: b.SavesetID, To: t.TempDir()})[0]
	takeOrder(t, c, id)
	req, err := c.NewRequest(t.Context(), "GET", fmt.Sprintf("/agent/jobs/%d/savesets/%d/data", id, b.SavesetID), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r.waitLogWithin(opts.IdleTimeout+8*time.Second, "agent stopped taking saveset data")
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil {
		t.Errorf("the abandoned data stream ended cleanly after %d bytes; want it broken", n)
	}
	if j := r.wait(id); j.State != catalog.StateFailed {
		t.Errorf("the restore whose agent stopped reading: %s (%s)", j.State, j.Error)
	}
}

// waitLogWithin waits until the server log holds sub.
func (r *rig) waitLogWithin(d time.Duration, sub string) {
	r.t.Helper()
	deadline := time.Now().Add(d)
	for !strings.Contains(r.log.String(), sub) {
		if time.Now().After(deadline) {
			r.t.Fatalf("the server log has no %q after %s", sub, d)
		}
		time.Sleep(10 * time.Millisecond) // polling the log
	}
}

// A frame damaged on its way (a corrupting agent or link) fails the backup
// before it reaches tape: the job's error names the client and the frame,
// the saveset is not complete, no tape file is left complete, and the next
// backup works.
func TestDamagedFrameFailsBackup(t *testing.T) {
	t.Parallel()
	r := startServer(t, t.TempDir(), "")
	home, stop := r.runAgent("c1")
	src := t.TempDir()
	makeTree(t, src, 8, 34)
	first := r.backupAndCheck(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src}})
	stop()
	marks := countMarks(t, r.home)

	// The agent's identity, by hand: take the order, send a good frame and
	// one with a bit flipped.
	c := agentAPI(t, home, r.url)
	id := r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src}, Compress: "none"})[0]
	takeOrder(t, c, id)
	var body bytes.Buffer
	good := compress.AppendRawFrame(nil, bytes.Repeat([]byte("good frame "), 1000))
	bad := compress.AppendRawFrame(nil, bytes.Repeat([]byte("bad frame "), 1000))
	bad[len(bad)/2] ^= 0x10
	end, _ := json.Marshal(api.BackupEnd{Files: 1, Entries: 1, Host: "c1"})
	for _, m := range []struct {
		typ     byte
		payload []byte
	}{{api.MsgFrame, good}, {api.MsgFrame, bad}, {api.MsgEnd, end}} {
		if err := api.WriteMsg(&body, m.typ, m.payload); err != nil {
			t.Fatal(err)
		}
	}
	req, err := c.NewRequest(t.Context(), "POST", fmt.Sprintf("/agent/jobs/%d/data", id), &body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatal("the server took a stream with a damaged frame")
	}
	if !strings.Contains(err.Error(), "frame 1") {
		t.Errorf("the answer to the damaged stream does not name frame 1: %v", err)
	}
	j := r.wait(id)
	if j.State != catalog.StateFailed || !strings.Contains(j.Error, "agent c1") || !strings.Contains(j.Error, "frame 1") {
		t.Errorf("the backup with a damaged frame: %s (%q); want failed, naming agent c1 and frame 1", j.State, j.Error)
	}
	if st := savesetStatus(t, r, j.SavesetID); st == catalog.StatusComplete {
		t.Errorf("its saveset is %q", st)
	}
	if n := countMarks(t, r.home); n != marks {
		t.Errorf("%d complete tape files after the damaged backup; %d before", n, marks)
	}

	r.startAgent(home, "c1")
	r.backupAndCheck(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src}})
	r.restoreAndCheck("c1", first.SavesetID, src)
}

// countMarks counts the filemarks (complete tape files) under a home.
func countMarks(t *testing.T, home string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(home, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasSuffix(p, ".mark") {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// takeOrder polls as the agent of c until the order of job id comes.
func takeOrder(t *testing.T, c *apiclient.Client, id int64) api.Order {
	t.Helper()
	var o api.Order
	for o.JobID != id {
		req, err := c.NewRequest(t.Context(), "GET", "/agent/orders", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = json.NewDecoder(resp.Body).Decode(&o)
		resp.Body.Close()
	}
	return o
}

// An index from the agent that does not read back or does not match the
// stream on tape fails the backup before it goes to tape: the saveset is
// not complete, no index tape file is left complete, and the next backup
// works.
func TestBadIndexFromAgentFailsBackup(t *testing.T) {
	t.Parallel()
	r := startServer(t, t.TempDir(), "")
	home, stop := r.runAgent("c1")
	src := t.TempDir()
	makeTree(t, src, 8, 35)
	first := r.backupAndCheck(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src}})
	stop()
	marks := countMarks(t, r.home)

	c := agentAPI(t, home, r.url)
	id := r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src}, Compress: "none"})[0]
	takeOrder(t, c, id)
	var body bytes.Buffer
	end, _ := json.Marshal(api.BackupEnd{Files: 1, Entries: 1, Host: "c1"})
	if err := api.WriteMsg(&body, api.MsgFrame, compress.AppendRawFrame(nil, []byte("a frame"))); err != nil {
		t.Fatal(err)
	}
	if err := api.WriteMsg(&body, api.MsgEnd, end); err != nil {
		t.Fatal(err)
	}
	req, err := c.NewRequest(t.Context(), "POST", fmt.Sprintf("/agent/jobs/%d/data", id), &body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	req, err = c.NewRequest(t.Context(), "PUT", fmt.Sprintf("/agent/jobs/%d/index", id), strings.NewReader("KURA-IDX but not an index at all"))
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := c.Do(req); err == nil {
		resp.Body.Close()
	}
	j := r.wait(id)
	if j.State != catalog.StateFailed || !strings.Contains(j.Error, "index") {
		t.Errorf("the backup with a bad index: %s (%q); want failed because of its index", j.State, j.Error)
	}
	if st := savesetStatus(t, r, j.SavesetID); st == catalog.StatusComplete {
		t.Errorf("its saveset is %q", st)
	}
	// Its data tape file (good frames) was closed; no index tape file follows it.
	if n := countMarks(t, r.home); n != marks+1 {
		t.Errorf("%d complete tape files after the backup with a bad index; %d before, want one more (its data, no index)", n, marks)
	}

	r.startAgent(home, "c1")
	r.backupAndCheck(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src}})
	r.restoreAndCheck("c1", first.SavesetID, src)
}
