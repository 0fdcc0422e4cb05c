package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/home"
	"github.com/kura-backup/kura/internal/private"
	"github.com/kura-backup/kura/internal/retention"
	"github.com/kura-backup/kura/internal/units"
)

// SavesetDecision is retention's verdict on one saveset, with what an
// admin needs to read it.
type SavesetDecision struct {
	retention.Decision
	Policy  string    `json:"policy"`
	Client  string    `json:"client"`
	Level   string    `json:"level"`
	Status  string    `json:"status"`
	Created time.Time `json:"created"`
}

// Rule codes for savesets retention does not judge.
const (
	RuleAdHoc         = "ad-hoc"         // not made by a policy: never expired automatically
	RuleNoPolicy      = "policy-removed" // its policy was removed: kept until erased by hand
	RuleAlreadyExpiry = retention.RuleAlreadyExpired
)

// Retention decides, for every saveset in the catalog, whether it is kept
// or expired and which rule decided, at time now. It changes nothing.
func (e *Env) Retention(now time.Time) ([]SavesetDecision, error) {
	return e.retention(now, "", retention.Rules{})
}

// RetentionPreview is Retention with policy's rules replaced by rules
// (what its savesets would become if the policy kept that), for the
// savesets of that policy only. It changes nothing. The rules are not
// validated: rules that keep nothing are judged as retention judges them
// (every saveset kept, rule invalid-rules), so a preview never expires
// more than a prune would.
func (e *Env) RetentionPreview(policy string, rules retention.Rules, now time.Time) ([]SavesetDecision, error) {
	all, err := e.retention(now, policy, rules)
	if err != nil {
		return nil, err
	}
	out := []SavesetDecision{}
	for _, d := range all {
		if d.Policy == policy {
			out = append(out, d)
		}
	}
	return out, nil
}

// retention decides as Retention does, with the rules of policy override
// replaced by with (override "": every policy's own).
func (e *Env) retention(now time.Time, override string, with retention.Rules) ([]SavesetDecision, error) {
	sets, err := e.Catalog.Savesets(catalog.SavesetFilter{})
	if err != nil {
		return nil, err
	}
	policies, err := e.Catalog.Policies()
	if err != nil {
		return nil, err
	}
	rules := map[string]retention.Rules{}
	for _, p := range policies {
		rules[p.Name] = retention.Rules{KeepGenerations: p.KeepGenerations, KeepDays: p.KeepDays}
		if p.Name == override {
			rules[p.Name] = with
		}
	}
	byPolicy := map[string][]retention.Saveset{}
	info := map[int64]*catalog.Saveset{}
	var out []SavesetDecision
	for _, s := range sets {
		info[s.ID] = s
		d := SavesetDecision{Policy: s.Policy, Client: s.Client, Level: s.Level, Status: s.Status, Created: s.Created}
		switch _, known := rules[s.Policy]; {
		case s.Policy == "" && s.Expired:
			d.Decision = retention.Decision{ID: s.ID, Rule: RuleAlreadyExpiry, Reason: "expired: " + orText(s.ExpireReason, "erased by hand")}
		case s.Policy == "":
			d.Decision = retention.Decision{ID: s.ID, Keep: true, Rule: RuleAdHoc,
				Reason: "kept: an ad-hoc backup (not made by a policy) is never expired automatically"}
		case !known && s.Expired:
			d.Decision = retention.Decision{ID: s.ID, Rule: RuleAlreadyExpiry, Reason: "expired: " + orText(s.ExpireReason, "erased by hand")}
		case !known:
			d.Decision = retention.Decision{ID: s.ID, Keep: true, Rule: RuleNoPolicy,
				Reason: fmt.Sprintf("kept: policy %s no longer exists, so nothing expires it (erase its tapes by hand)", s.Policy)}
		default:
			byPolicy[s.Policy] = append(byPolicy[s.Policy], retention.Saveset{ID: s.ID, BaseID: s.BaseID, Level: s.Level,
				Status: s.Status, Policy: s.Policy, Created: s.Created, Expired: s.Expired})
			continue
		}
		out = append(out, d)
	}
	for name, group := range byPolicy {
		for _, dec := range retention.Decide(group, rules[name], now) {
			s := info[dec.ID]
			out = append(out, SavesetDecision{Decision: dec, Policy: name, Client: s.Client, Level: s.Level, Status: s.Status, Created: s.Created})
		}
	}
	walRetention(out, info)
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// RuleWALBeforeBase expires a PostgreSQL WAL file archived before the
// oldest kept base backup of its cluster: no kept base backup can replay
// it (retention.DecideWAL).
const RuleWALBeforeBase = retention.RuleWALBeforeBase

// Saveset paths of PostgreSQL's physical backups
// (plugin.Source.String): a base backup's path is postgresql-cluster, or
// postgresql-cluster:NAME when it names its cluster; a WAL file's is
// postgresql-wal:CLUSTER/FILE.
const (
	baseBackupPath = "postgresql-cluster"
	walPathPrefix  = "postgresql-wal:"
)

// walRetention ties WAL savesets to the base backups they extend
// (retention.DecideWAL): of the WAL savesets the other rules keep only as
// ad-hoc backups, those archived before the oldest kept, complete base
// backup of their own cluster are expired, and the others say which base
// backup keeps them. Base backups and WAL files are known by their paths,
// so those a policy's selection set made count too.
func walRetention(out []SavesetDecision, info map[int64]*catalog.Saveset) {
	var files []retention.WALFile
	var bases []retention.BaseBackup
	at := map[int64]int{}
	for i, d := range out {
		s := info[d.ID]
		if d.Keep && s.Status == catalog.StatusComplete && !s.Expired {
			for _, p := range s.Paths {
				if p == baseBackupPath || strings.HasPrefix(p, baseBackupPath+":") {
					_, cluster, _ := strings.Cut(p, ":")
					bases = append(bases, retention.BaseBackup{ID: s.ID, Client: s.Client, Cluster: cluster, Created: s.Created})
				}
			}
		}
		if !d.Keep || (d.Rule != RuleAdHoc && d.Rule != RuleNoPolicy) || len(s.Paths) != 1 || !strings.HasPrefix(s.Paths[0], walPathPrefix) {
			continue
		}
		cluster, _, ok := strings.Cut(strings.TrimPrefix(s.Paths[0], walPathPrefix), "/")
		if !ok {
			continue
		}
		files = append(files, retention.WALFile{ID: s.ID, Client: s.Client, Cluster: cluster, Created: s.Created})
		at[s.ID] = i
	}
	for _, dec := range retention.DecideWAL(files, bases) {
		out[at[dec.ID]].Decision = dec
	}
}

func orText(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// PruneOptions say how a prune runs.
type PruneOptions struct {
	DryRun bool      // decide and report, change nothing
	Now    time.Time // the moment retention is judged at (zero: the clock)
	// Job is the queued job row a real prune runs as (a server's queue);
	// nil records a new one. A dry run is a query, not a job.
	Job *catalog.Job
}

// PruneResult is what a prune decided and did.
type PruneResult struct {
	Decisions []SavesetDecision `json:"decisions"`
	Expired   []int64           `json:"expired"`  // savesets expired now
	Recycled  []string          `json:"recycled"` // tapes erased and returned to scratch
	Notes     []string          `json:"notes"`
	DryRun    bool              `json:"dry_run"`
}

// Prune applies retention: it expires the savesets the rules no longer
// keep (each with its reason) and returns to scratch, erased, every tape
// whose savesets have all expired. Prunes are serialized by a lock in the
// home, so two at once lose nothing; while a backup runs, tapes are not
// recycled (its first parts may sit on a tape it already left, not yet in
// the catalog), only expiries are recorded.
func (e *Env) Prune(ctx context.Context, opts PruneOptions) (*PruneResult, error) {
	if opts.DryRun {
		return e.prune(ctx, opts)
	}
	job, held, ctx, err := e.beginJob(ctx, opts.Job, catalog.KindPrune, "prune: apply retention")
	if err != nil {
		return nil, err
	}
	defer held.Close()
	phase := e.startPhase(job, "prune")
	res, runErr := e.prune(ctx, opts)
	var result any
	if res != nil {
		result = res
		phase.Files.Add(int64(len(res.Expired)))
		job.Tapes = res.Recycled
		e.logf(job, "%s expired, %s recycled", units.Count(int64(len(res.Expired)), "saveset"), units.Count(int64(len(res.Recycled)), "tape"))
		for _, n := range res.Notes {
			e.logf(job, "note: %s", n)
		}
	}
	return res, e.endJob(job, runErr, jobEnd{phase: phase, result: result})
}

// prune is the work of Prune, and the whole of a dry run.
func (e *Env) prune(ctx context.Context, opts PruneOptions) (*PruneResult, error) {
	unlock, err := e.lockPrune(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	now := opts.Now
	if now.IsZero() {
		now = e.now()
	}
	decisions, err := e.Retention(now)
	if err != nil {
		return nil, err
	}
	if err := canceled(ctx); err != nil {
		return nil, err
	}
	res := &PruneResult{Decisions: decisions, DryRun: opts.DryRun, Expired: []int64{}, Recycled: []string{}, Notes: []string{}}
	expiring := map[int64]bool{}
	for _, d := range decisions {
		if d.Keep || d.Rule == retention.RuleAlreadyExpired {
			continue
		}
		expiring[d.ID] = true
		res.Expired = append(res.Expired, d.ID)
		if opts.DryRun {
			continue
		}
		if err := ctx.Err(); err != nil {
			// Each expiry stands on its own: the ones made stay, with their reasons.
			res.Expired = res.Expired[:len(res.Expired)-1]
			return res, err
		}
		if err := e.Catalog.ExpireSaveset(d.ID, d.Reason); err != nil {
			return res, err
		}
		_ = os.Remove(filepath.Join(home.IndexDir(e.Home), fmt.Sprintf("%d.idx", d.ID)))
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	running, err := e.runningBackups()
	if err != nil {
		return res, err
	}
	if running > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%s running: tapes are recycled by the next prune", units.Count(int64(running), "backup")))
		return res, nil
	}
	recycle, err := e.recyclable(expiring)
	if err != nil {
		return res, err
	}
	for _, bc := range recycle {
		if opts.DryRun {
			res.Recycled = append(res.Recycled, bc)
			continue
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if _, err := e.EraseTape(bc, false); err != nil {
			res.Notes = append(res.Notes, fmt.Sprintf("tape %s not recycled: %v", bc, err))
			continue
		}
		if err := e.Catalog.SetTapePool(bc, catalog.ScratchPool); err != nil {
			return res, err
		}
		res.Recycled = append(res.Recycled, bc)
	}
	return res, nil
}

// recyclable lists the tapes whose every saveset is expired (or about to
// be: expiring), and that hold at least one.
func (e *Env) recyclable(expiring map[int64]bool) ([]string, error) {
	libs, err := e.Catalog.Libraries()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range libs {
		lib, err := e.Changer(l.Name)
		if err != nil {
			continue // a library folder that is gone: nothing to recycle there
		}
		tapes, err := lib.Tapes()
		if err != nil {
			return nil, err
		}
		for _, t := range tapes {
			if t.Files == 0 || t.MailSlot > 0 {
				continue
			}
			sets, err := e.Catalog.Savesets(catalog.SavesetFilter{Barcode: t.Barcode})
			if err != nil {
				return nil, err
			}
			if len(sets) == 0 {
				continue // holds nothing the catalog knows: leave it to an admin
			}
			all := true
			for _, s := range sets {
				all = all && (s.Expired || expiring[s.ID])
			}
			if all {
				out = append(out, t.Barcode)
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// runningBackups counts backup and copy jobs that run: running, with a
// live lease, once the jobs of dead holders are reclaimed.
func (e *Env) runningBackups() (int, error) {
	if _, err := e.ReclaimDeadJobs(); err != nil {
		return 0, err
	}
	leases, err := e.Catalog.LiveJobLeases(e.Jobs.Options().Clock.Now())
	if err != nil {
		return 0, err
	}
	n := 0
	for _, l := range leases {
		j, err := e.Catalog.Job(l.JobID)
		if err != nil {
			return 0, err
		}
		if j.State == catalog.StateRunning && (j.Kind == catalog.KindBackup || j.Kind == catalog.KindCopy) {
			n++
		}
	}
	return n, nil
}

// runDir holds the home's prune lock.
func (e *Env) runDir() string { return filepath.Join(e.Home, "run") }

// lockPrune takes the home's prune lock, waiting for another prune.
func (e *Env) lockPrune(ctx context.Context) (func(), error) {
	if err := private.MkdirAll(e.runDir()); err != nil {
		return nil, err
	}
	f, err := private.OpenFile(filepath.Join(e.runDir(), "prune.lock"), os.O_CREATE|os.O_RDWR)
	if err != nil {
		return nil, err
	}
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if err != unix.EWOULDBLOCK {
			f.Close()
			return nil, fmt.Errorf("prune lock: %w", err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for another prune: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond): // another process holds the lock
		}
	}
}
