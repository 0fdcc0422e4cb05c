package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/index"
	"github.com/kura-backup/kura/internal/plugin"
	"github.com/kura-backup/kura/internal/private"
	"github.com/kura-backup/kura/internal/stream"
)

// PostgreSQL's WAL archive through an agent (kura wal archive on an
// enrolled agent's machine). Each WAL file is first copied into the
// agent's spool, HOME/agent/walspool/CLUSTER/SEQ-FILE, and synced (file
// and folder): from then on it survives a crash of this machine's
// processes, and kura wal archive exits 0 (PostgreSQL may recycle its
// copy). The spool is then sent in order, oldest first: for each file
// the server runs a backup job of this client (POST /agent/wal), in
// which the running agent reads the file from the spool; once the job
// completed, the file leaves the spool. A file the server could not take
// stays, for the next kura wal archive or kura agent run to send. The
// age of the oldest spooled file is the alarm (kura wal spool, and the
// agent's log).

// Errors of the WAL spool.
var (
	// ErrSpoolConflict: the spool holds another file of the same name
	// (PostgreSQL must never archive two different files under one name).
	ErrSpoolConflict = errors.New("the WAL spool holds a different file of that name")
	// ErrNotSpooled: a job asked for a WAL file the spool does not hold.
	ErrNotSpooled = errors.New("no such WAL file in the spool")
	// ErrWALNotStored: the server's job for a WAL file did not complete.
	ErrWALNotStored = errors.New("the server did not store the WAL file")
	// ErrNoWAL: the server holds no saveset of the WAL file asked for.
	ErrNoWAL = errors.New("the WAL archive holds no such file")
)

const spoolDir = "walspool"

// SpoolDir is the WAL spool of an agent home.
func SpoolDir(home string) string { return filepath.Join(Dir(home), spoolDir) }

// Spooled is one WAL file in the spool.
type Spooled struct {
	Cluster, File string
	Path          string    // the spooled copy
	Since         time.Time // when it was spooled
}

// SpoolWAL copies WAL file src, named file in WAL archive cluster, into
// home's spool and syncs it: when it returns nil the file is durably
// spooled. A file spooled already with the same content is not spooled
// twice (PostgreSQL retries an archive_command that did not answer).
func SpoolWAL(home, cluster, file, src string, now time.Time) error {
	if err := plugin.ValidWALName(cluster + "/" + file); err != nil {
		return err
	}
	dir := filepath.Join(SpoolDir(home), cluster)
	if err := private.MkdirAll(dir); err != nil {
		return err
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if old, err := findSpooled(dir, file); err == nil {
		b, err := os.ReadFile(old)
		if err != nil {
			return err
		}
		if string(b) != string(data) {
			return fmt.Errorf("%w: %s/%s (%s)", ErrSpoolConflict, cluster, file, old)
		}
		return nil
	} else if !errors.Is(err, ErrNotSpooled) {
		return err
	}
	p := filepath.Join(dir, fmt.Sprintf("%020d-%s", now.UnixNano(), file))
	tmp := p + ".tmp"
	f, err := private.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		return err
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// findSpooled is the spooled copy of file in a cluster's spool folder.
func findSpooled(dir, file string) (string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	for _, e := range ents {
		if _, f, ok := strings.Cut(e.Name(), "-"); ok && f == file {
			return filepath.Join(dir, e.Name()), nil
		}
	}
	return "", fmt.Errorf("%w: %s", ErrNotSpooled, file)
}

// SpoolList is home's spooled WAL files, oldest first.
func SpoolList(home string) ([]Spooled, error) {
	root := SpoolDir(home)
	clusters, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Spooled
	for _, c := range clusters {
		if !c.IsDir() || plugin.ValidCluster(c.Name()) != nil {
			continue
		}
		ents, err := os.ReadDir(filepath.Join(root, c.Name()))
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			seq, file, ok := strings.Cut(e.Name(), "-")
			n, err := strconv.ParseInt(seq, 10, 64)
			if !ok || err != nil || plugin.ValidWALName(c.Name()+"/"+file) != nil {
				continue // a .tmp left by a crash, or not ours
			}
			out = append(out, Spooled{Cluster: c.Name(), File: file, Path: filepath.Join(root, c.Name(), e.Name()), Since: time.Unix(0, n).UTC()})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Since.Before(out[j].Since) })
	return out, nil
}

// spooled is the spooled copy of WAL file CLUSTER/FILE (a job's source).
func (a *Agent) spooled(name string) (string, error) {
	if err := plugin.ValidWALName(name); err != nil {
		return "", err
	}
	cluster, file, _ := strings.Cut(name, "/")
	return findSpooled(filepath.Join(SpoolDir(a.opts.Home), cluster), file)
}

// walSendIdle bounds the wait for the server's answer to one WAL file:
// its backup job is queued, takes a drive and runs.
const walSendIdle = 10 * time.Minute

// SendSpool sends the spooled WAL files to the server, oldest first, and
// stops at the first the server does not take (it stays spooled, and so
// do those after it: the archive stays in order). It returns how many
// were sent. One sender at a time: while another process (kura agent
// run, another kura wal archive) sends the spool, it returns 0 at once —
// that one sends in order what is spooled.
func (a *Agent) SendSpool(ctx context.Context) (int, error) {
	unlock, ok, err := lockSpool(a.opts.Home)
	if err != nil || !ok {
		return 0, err
	}
	defer unlock()
	list, err := SpoolList(a.opts.Home)
	if err != nil {
		return 0, err
	}
	if len(list) > 0 {
		// The server hears how it went, whatever happens — also when
		// ctx ran out (kura wal archive's --send-for): on a context of
		// its own, briefly.
		defer func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), spoolReportAfter)
			defer cancel()
			a.ReportSpool(rctx)
		}()
	}
	sent := 0
	for _, s := range list {
		if err := a.sendWAL(ctx, s); err != nil {
			err = fmt.Errorf("sending WAL file %s/%s: %w", s.Cluster, s.File, err)
			if !errors.Is(ctx.Err(), context.Canceled) { // not a stop of this process
				noteSpool(a.opts.Home, s.Cluster, func(st *spoolState) { st.LastError, st.LastErrorAt = err.Error(), time.Now() })
			}
			return sent, err
		}
		if err := os.Remove(s.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return sent, err
		}
		if err := syncDir(filepath.Dir(s.Path)); err != nil {
			return sent, err
		}
		noteSpool(a.opts.Home, s.Cluster, func(st *spoolState) {
			st.LastArchived, st.LastArchivedAt, st.LastError, st.LastErrorAt = s.File, time.Now(), "", time.Time{}
		})
		sent++
	}
	return sent, nil
}

// spoolStateFile, in a cluster's spool folder, keeps how the last sends
// went: what the spool's files cannot say once they are gone.
const spoolStateFile = ".state"

// spoolState is a cluster's spoolStateFile.
type spoolState struct {
	LastArchived   string    `json:"last_archived,omitempty"`
	LastArchivedAt time.Time `json:"last_archived_at"`
	LastError      string    `json:"last_error,omitempty"`
	LastErrorAt    time.Time `json:"last_error_at"`
}

func readSpoolState(home, cluster string) spoolState {
	var st spoolState
	if b, err := os.ReadFile(filepath.Join(SpoolDir(home), cluster, spoolStateFile)); err == nil {
		_ = json.Unmarshal(b, &st) // a torn file reads as no history, never as a failure
	}
	return st
}

// noteSpool changes a cluster's spool state. Only the spool's sender (who
// holds its lock) calls it. The state is a report, not the archive: it is
// replaced atomically but not synced, and a failure to write it is not
// the send's failure.
func noteSpool(home, cluster string, change func(*spoolState)) {
	st := readSpoolState(home, cluster)
	change(&st)
	if len(st.LastError) > api.MaxWALErrorLen {
		st.LastError = st.LastError[:api.MaxWALErrorLen]
	}
	b, _ := json.Marshal(st)
	p := filepath.Join(SpoolDir(home), cluster, spoolStateFile)
	if err := private.WriteFile(p+".tmp", b); err == nil {
		_ = os.Rename(p+".tmp", p)
	}
}

// SpoolReport is the state of home's WAL spools, as the server is told
// it: for each cluster that ever spooled a file, the files waiting and
// the oldest one's age, and how the last sends went. ok is false when
// this home never spooled WAL (there is nothing to report).
func SpoolReport(home string, now time.Time) (rep api.WALSpoolReport, ok bool, err error) {
	root := SpoolDir(home)
	clusters, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return rep, false, nil
	}
	if err != nil {
		return rep, false, err
	}
	list, err := SpoolList(home)
	if err != nil {
		return rep, false, err
	}
	secs := func(t time.Time) float64 {
		if t.IsZero() || t.After(now) {
			return 0
		}
		return now.Sub(t).Seconds()
	}
	rep.Clusters = []api.WALSpoolState{}
	for _, c := range clusters {
		if !c.IsDir() || plugin.ValidCluster(c.Name()) != nil || len(rep.Clusters) == api.MaxWALClusters {
			continue
		}
		st := readSpoolState(home, c.Name())
		cs := api.WALSpoolState{Cluster: c.Name(), LastError: st.LastError, LastErrorSeconds: secs(st.LastErrorAt)}
		if plugin.ValidWALName(c.Name()+"/"+st.LastArchived) == nil {
			cs.LastArchived, cs.LastArchivedSeconds = st.LastArchived, secs(st.LastArchivedAt)
		}
		for _, s := range list { // oldest first
			if s.Cluster == c.Name() {
				if cs.Files == 0 {
					cs.Oldest, cs.OldestSeconds = s.File, secs(s.Since)
				}
				cs.Files++
			}
		}
		rep.Clusters = append(rep.Clusters, cs)
	}
	return rep, true, nil
}

// spoolReportIdle bounds a spool report's call; spoolReportAfter the
// report after a send, which may come when its caller's time is up.
const (
	spoolReportIdle  = 30 * time.Second
	spoolReportAfter = 5 * time.Second
)

// ReportSpool tells the server the state of this agent's WAL spools
// (POST /agent/walspool): its alarm, kura client list and /metrics. A
// home that never spooled WAL reports nothing. A failed report is
// logged; the next one says it all again.
func (a *Agent) ReportSpool(ctx context.Context) {
	rep, ok, err := SpoolReport(a.opts.Home, time.Now())
	if err == nil && ok {
		err = a.post(ctx, "/agent/walspool", rep, spoolReportIdle)
	}
	if err != nil && ctx.Err() == nil {
		a.log.Debug("could not report the WAL spool to the server", "err", err)
	}
}

func (a *Agent) sendWAL(ctx context.Context, s Spooled) error {
	b, _ := json.Marshal(api.WALArchive{Cluster: s.Cluster, File: s.File})
	rc, err := a.call(ctx, "POST", "/agent/wal", "application/json", strings.NewReader(string(b)), walSendIdle, true)
	if err != nil {
		return err
	}
	defer rc.Close()
	var j api.Job
	if err := json.NewDecoder(io.LimitReader(rc, api.MaxJSONMsg)).Decode(&j); err != nil {
		return fmt.Errorf("the server's answer: %w", err)
	}
	if (j.State != "succeeded" && j.State != "warnings") || j.SavesetID == 0 {
		return fmt.Errorf("%w: job %d %s: %s", ErrWALNotStored, j.ID, j.State, j.Error)
	}
	return nil
}

// FetchWAL writes WAL file CLUSTER/FILE, from this client's newest
// complete saveset of it, to dst (PostgreSQL's restore_command): the
// file is complete at dst, or dst does not exist.
func (a *Agent) FetchWAL(ctx context.Context, cluster, file, dst string) error {
	name := cluster + "/" + file
	if err := plugin.ValidWALName(name); err != nil {
		return err
	}
	sets, err := a.Savesets(ctx)
	if err != nil {
		return err
	}
	key := plugin.WALSelection(cluster, file)
	var ss *api.Saveset
	for i := range sets {
		if sets[i].Selection == key && (ss == nil || sets[i].ID > ss.ID) {
			ss = &sets[i]
		}
	}
	if ss == nil {
		return fmt.Errorf("%w: %s", ErrNoWAL, name)
	}
	idx, err := a.OpenIndex(ctx, ss.ID)
	if err != nil {
		return err
	}
	defer idx.Close()
	e, ok, err := idx.Lookup(plugin.WALDir + "/" + name)
	if err != nil {
		return err
	}
	if !ok || e.Type != index.TypeFile {
		return fmt.Errorf("%w: saveset %d does not hold %s", ErrNoWAL, ss.ID, name)
	}
	rd, err := a.ownReader(ctx, ss, idx)
	if err != nil {
		return err
	}
	defer rd.Close()
	if err := rd.SeekTo(e.Offset); err != nil {
		return err
	}
	hdr, err := rd.Next()
	if err != nil {
		return err
	}
	if hdr.Path != e.Path || hdr.Size != e.Size {
		return fmt.Errorf("saveset %d: the stream holds %q where the index expects %s", ss.ID, hdr.Path, name)
	}
	tmp := dst + ".kura-tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	h := stream.NewDigest()
	n, err := io.Copy(io.MultiWriter(f, h), rd)
	if err == nil && n != e.Size {
		err = fmt.Errorf("saveset %d: %s is %d bytes, the index says %d", ss.ID, name, n, e.Size)
	}
	if err == nil && stream.SumDigest(h) != e.Digest {
		err = fmt.Errorf("saveset %d: %s does not match its digest", ss.ID, name)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, dst)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// ownReader decodes one of this client's savesets read through the
// server, decrypting an encrypted one.
func (a *Agent) ownReader(ctx context.Context, ss *api.Saveset, idx *index.Reader) (*stream.Reader, error) {
	store := &remoteStore{a: a, ctx: ctx, idle: browseIdle, own: true, tickets: true}
	var src stream.FrameSource = &remoteData{s: store, id: ss.ID}
	if ss.Encryption != "" {
		// Opened now, its label checked against the record: a wrong key or
		// another saveset's data is named before anything is read.
		d := &sealedData{s: store, id: ss.ID, rec: sealedRecordOf(ss)}
		if err := d.open(); err != nil {
			return nil, err
		}
		src = d
	}
	return stream.NewReader(src, idx.Frames(), stream.ReaderOptions{})
}

// spoolEvery is how often kura agent run sends the WAL spool and reports
// it to the server (Options.SpoolEvery).
const spoolEvery = time.Minute

// drainSpool reports and sends the WAL spool until ctx ends; the age of
// the oldest file it could not send is logged as a warning (the agent's
// side of the alarm; the server's is the report).
func (a *Agent) drainSpool(ctx context.Context) {
	t := time.NewTicker(a.opts.SpoolEvery)
	defer t.Stop()
	for {
		// Reported first: while a long backlog is being sent, or another
		// process sends it, the server still hears of it every period.
		a.ReportSpool(ctx)
		if n, err := a.SendSpool(ctx); err != nil && ctx.Err() == nil {
			if list, _ := SpoolList(a.opts.Home); len(list) > 0 {
				a.log.Warn("WAL files wait in the spool", "files", len(list), "oldest", list[0].Cluster+"/"+list[0].File,
					"waiting", time.Since(list[0].Since).Truncate(time.Second).String(), "err", err)
			}
		} else if n > 0 {
			a.log.Info("WAL spool sent", "files", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// recovery is how a cluster restored through this agent recovers from
// its WAL archive: restore_command is this agent's own kura wal get (its
// executable and home), unless the server sent another — a command run
// on this machine, so only with --allow-commands.
func (a *Agent) recovery(r *api.RestoreOrder) (plugin.Recovery, error) {
	rec := plugin.Recovery{Cluster: r.WAL, Command: r.WALRestoreCommand}
	if err := plugin.ValidCluster(r.WAL); err != nil {
		return rec, err
	}
	if r.WALAt != "" {
		t, err := time.Parse(time.RFC3339Nano, r.WALAt)
		if err != nil {
			return rec, fmt.Errorf("%w: the moment to recover to, %q: %v", plugin.ErrBadSource, r.WALAt, err)
		}
		rec.At = t
	}
	if rec.Command != "" {
		if !a.opts.Allow.Commands {
			return rec, fmt.Errorf("%w: a restore_command from the server (start the agent with --allow-commands to accept it)", plugin.ErrNotAllowed)
		}
		return rec, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return rec, err
	}
	rec.Command = shQuote(exe) + " --home " + shQuote(a.opts.Home) + " wal get --cluster " + shQuote(r.WAL) + " %f %p"
	return rec, nil
}

// shQuote quotes s for a POSIX shell.
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// lockSpool takes the spool's sender lock without waiting; ok is false
// when another process holds it.
func lockSpool(home string) (unlock func(), ok bool, err error) {
	dir := SpoolDir(home)
	if err := private.MkdirAll(dir); err != nil {
		return nil, false, err
	}
	f, err := private.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR)
	if err != nil {
		return nil, false, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return func() { f.Close() }, true, nil
}
