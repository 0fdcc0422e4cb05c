// Package job is Kura's one job model (issue 11): every long operation —
// backup, restore, verify, copy, prune, catalog backup, tape scan, tape
// erase — runs as a job with the same life, recorded in the catalog, and
// leased there by the process that runs it.
//
// # The model
//
// A job has an ID (the catalog's), a Kind, a State (the catalog's words:
// queued, waiting, running, succeeded, warnings, failed, canceled and
// interrupted), phases with their own figures (monitor.Phase and
// monitor.PhaseFigures), job-wide figures (monitor.Figures), warnings (the
// first catalog.MaxWarnings kept, all counted), a log tail (the last
// catalog.MaxLogLines lines), a context that Cancel cancels, and a lease.
// The package never prints: its events (monitor.Event, plus LogEvent and
// HeartbeatEvent) go to a Sink, which the CLI, the server's event stream,
// metrics and the web console consume.
//
// # Lifecycle
//
// A Registry runs the jobs of one process (one lease holder) on a catalog:
//
//  1. Start records a new job as running with the registry's lease on it,
//     in one catalog transaction (catalog.CreateLeasedJob): a job that was
//     never queued is never seen queued, so no queue picks it up. StartQueued
//     takes a queued or waiting job instead (catalog.AcquireJobLease): it
//     becomes running and leased in one transaction, or the call fails with
//     catalog.ErrLeaseHeld or catalog.ErrNotQueued and nothing changes.
//  2. The job's function runs in its own goroutine with a context derived
//     from the caller's. It records phases, figures, warnings, tapes and log
//     lines through its *Run, and takes drives with Run.TakeDrive (a
//     catalog drive lease owned by the job).
//  3. Meanwhile a heartbeat goroutine, every Options.Heartbeat (an injected
//     ticker), renews the job's lease and its drive leases to now +
//     Options.LeaseTTL (an injected clock) and saves the figures so far in
//     the job's row, so another process reading the catalog sees them.
//  4. The context is cancelled with cause ErrCanceled by Handle.Cancel or
//     Registry.Cancel, ErrCanceled and ErrClosed by Registry.Close, and
//     ErrLeaseLost when the heartbeat finds the lease reclaimed, or cannot
//     renew it before it expires.
//  5. When the function returns, the job's state is decided: nil is
//     succeeded (warnings if any were recorded); an error is failed, or
//     canceled if the context was cancelled, or failed with ErrLeaseLost if
//     the lease was lost; a panic is failed with ErrPanicked. The final row
//     is written and the lease and the job's drive leases released in one
//     transaction (catalog.FinishLeasedJob), only if the registry still
//     holds the lease; otherwise the reclaimer's record stands and the
//     result is interrupted, wrapping ErrLeaseLost.
//
// # The lease protocol and its guarantees
//
// The lease lives in the catalog (table job_leases: job, holder, acquired,
// heartbeat, expires_at), not in a lock file and not in server memory, so a
// restarted server, a second server or a CLI on the same catalog all know
// what runs and who runs it (catalog.LiveJobLeases).
//
//   - No job runs twice. Taking a job is a compare-and-set in one write
//     transaction (SQLite serialises writers across processes): it succeeds
//     only if the job is queued or waiting and no other holder's lease on it
//     is live, and it moves the job to running. A running job is never taken
//     again, even once its lease has expired: it is reclaimed, and a new job
//     is queued if it must run again.
//   - A dead holder is detected within one lease. After kill -9 or a power
//     loss nothing renews the lease; LeaseTTL (3 heartbeats by default:
//     30 s) after the last renewal it has expired, and any process calling
//     Registry.Reclaim (catalog.ReclaimJobs) marks the job
//     interrupted ("lease expired: its holder ... last renewed it at ..."),
//     the saveset of a backup incomplete, and frees its drive leases, in one
//     transaction: two reclaimers never both reclaim a job.
//   - A slow holder is not robbed. An expired lease stays its holder's until
//     someone reclaims it; a holder that was only slow (a stalled disk, a
//     suspended VM) may still renew it or finish, and whichever of the holder
//     and a reclaimer commits first wins. The loser learns it: the holder's
//     renewal or finish fails with catalog.ErrLeaseLost, writes nothing, and
//     its job's context is cancelled.
//   - Drives are exclusive. A drive lease (table drive_leases, one row per
//     library and drive) belongs to one (holder, job) pair until it expires
//     or is released; it is renewed with its job's lease and released with
//     the job's end.
//
// Expiry compares wall-clock times written by different processes: their
// clocks must agree to well within LeaseTTL, which holds on one machine and
// on NTP-synchronised ones.
//
// # Holders, and quick detection on one machine
//
// A process has one holder (Self): "host:pid:start:random", where start is
// the process's start time (field 22 of /proc/PID/stat), so that a PID
// reused by another process never passes for the holder. It is recorded in
// each lease and in the job's catalog.Job.Owner. Waiting a whole LeaseTTL
// is needed only when nobody can tell whether the holder lives: when the
// holder is on this host (same host name), HolderGone checks its process at
// once, and Reclaim takes its jobs before their leases expire if the PID no
// longer runs, is a zombie (killed, not yet reaped), or now names a process
// that started at another time. A holder on another host, or one whose
// process exists as recorded, keeps its live lease: a running job whose
// lease is live is never touched. Options.Gone replaces the check in tests.
//
// # Jobs whose rows their callers write
//
// The engine's jobs record their own figures, phases and log in their
// catalog row; they run under Registry.Hold: the same lease, heartbeat,
// drive leases and reclaim as Start's jobs, with the caller writing the row
// through Held.Update and Held.Finish (which write only while the lease is
// the registry's). All eight kinds begin and end through one pair of
// helpers in internal/engine/jobs.go (beginJob, endJob): one place decides
// a job's end state from its error and writes its end. A server reserves the drive of a queued job with
// Registry.TakeDrive before it starts it; the job's heartbeat then renews
// the drive lease and its end releases it.
//
// # Not yet (issue 11, next steps)
//
// The engine's jobs do not run as Funcs recording through *Run yet (they use
// Hold), and the server does not start queued jobs with StartQueued nor feed
// its event bus from a Sink.
package job
