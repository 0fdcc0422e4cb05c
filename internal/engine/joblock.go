package engine

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/private"
)

// A running job holds a lock file in the home's run/ folder for as long as
// its process lives; the job's Owner names the file. Another process that
// finds the job "running" and the lock free knows the process died (killed,
// power loss) and marks the job interrupted and its saveset incomplete, so
// a dead job is never shown as running and its saveset never taken for a
// good one.

type jobLock struct {
	f    *os.File
	path string
}

func (e *Env) runDir() string { return filepath.Join(e.Home, "run") }

// newJobLock creates and locks a fresh lock file; its name goes into the
// job's Owner before the job is recorded.
func (e *Env) newJobLock() (*jobLock, string, error) {
	if err := private.MkdirAll(e.runDir()); err != nil {
		return nil, "", err
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, "", err
	}
	name := fmt.Sprintf("%d-%s.lock", os.Getpid(), hex.EncodeToString(b[:]))
	p := filepath.Join(e.runDir(), name)
	f, err := private.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_RDWR)
	if err != nil {
		return nil, "", err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		os.Remove(p)
		return nil, "", err
	}
	return &jobLock{f: f, path: p}, name, nil
}

// release ends the job's ownership: the file is removed while still locked.
func (l *jobLock) release() {
	if l == nil {
		return
	}
	os.Remove(l.path)
	l.f.Close()
}

// startJob records a new running job owned by this process.
func (e *Env) startJob(job *catalog.Job) (*jobLock, error) {
	l, name, err := e.newJobLock()
	if err != nil {
		return nil, fmt.Errorf("job lock: %w", err)
	}
	job.Owner = name
	save := e.Catalog.CreateJob
	if job.ID != 0 { // a queued job starting
		save = e.Catalog.UpdateJob
	}
	if err := save(job); err != nil {
		l.release()
		return nil, err
	}
	return l, nil
}

// ownerAlive reports whether the process that owns a running job still
// holds its lock.
func (e *Env) ownerAlive(owner string) bool {
	if owner == "" {
		return true // a job from before owners were recorded: leave it alone
	}
	p := filepath.Join(e.runDir(), filepath.Base(owner))
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	if err != nil {
		return true
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return true // held: the owner is running
	}
	os.Remove(p)
	return false
}

// ReapDeadJobs marks running jobs whose process died as interrupted, and
// their running savesets incomplete (however many jobs ran since they
// started). It returns the jobs it marked.
func (e *Env) ReapDeadJobs() ([]int64, error) {
	jobs, err := e.Catalog.FindJobs(catalog.JobFilter{State: catalog.StateRunning})
	if err != nil {
		return nil, err
	}
	var dead []int64
	for _, j := range jobs {
		if j.State != catalog.StateRunning || e.ownerAlive(j.Owner) {
			continue
		}
		j.State = catalog.StateInterrupted
		if j.Error == "" {
			j.Error = "the process running this job died before it ended"
		}
		if j.Finished.IsZero() {
			j.Finished = e.now()
		}
		e.logf(j, "interrupted: its process is gone")
		if err := e.Catalog.UpdateJob(j); err != nil {
			return dead, err
		}
		if j.SavesetID != 0 && j.Kind == catalog.KindBackup {
			if ss, err := e.Catalog.Saveset(j.SavesetID); err == nil && ss.Status == catalog.StatusRunning {
				ss.Status = catalog.StatusIncomplete
				if err := e.Catalog.UpdateSaveset(ss); err != nil {
					return dead, err
				}
			}
		}
		dead = append(dead, j.ID)
	}
	return dead, nil
}
