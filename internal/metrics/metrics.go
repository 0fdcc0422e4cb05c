// Package metrics is the server's Prometheus collector. It holds no
// counters of its own: every value is read at scrape time, from the
// catalog's job records (counts, figures, durations, last successes), from
// the libraries through api.Service (drives, tapes) and from the server's
// live state (agents connected). A restart, a second process writing the
// same home or a job recorded by the CLI cannot make a figure drift.
//
// The families and the alert they are for are in docs/operations.md
// ("Web console and metrics"); docs/monitoring holds example alert rules
// and a Grafana dashboard, checked against Describe by TestMonitoringDocs.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
)

// Source is what the collector reads. Catalog gives the job records;
// Service the libraries, drives and tapes; Connected the names of the
// agents connected now; CatalogFiles the paths whose sizes make the
// catalog's size (the database and its write-ahead log).
type Source struct {
	Catalog      *catalog.Catalog
	Service      api.Service
	Connected    func() []string
	CatalogFiles []string
	Version      string
	// Timeout bounds one scrape's reads (10 s).
	Timeout time.Duration
	// OnError hears why a part of a scrape could not be read (the server
	// logs it); nil ignores it.
	OnError func(part string, err error)
	// Now is the clock the WAL spools' ages are read with (time.Now).
	Now func() time.Time
}

// DurationBuckets are the job duration histogram's bounds, in seconds:
// from a one-minute incremental to a two-day full.
var DurationBuckets = []float64{10, 30, 60, 300, 900, 1800, 3600, 7200, 14400, 28800, 86400, 172800}

// Collector is a prometheus.Collector over a Source.
type Collector struct {
	src Source
}

var _ prometheus.Collector = (*Collector)(nil)

// New makes a collector; register it with a prometheus.Registry.
func New(src Source) *Collector {
	if src.Timeout == 0 {
		src.Timeout = 10 * time.Second
	}
	if src.Now == nil {
		src.Now = time.Now
	}
	return &Collector{src: src}
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	descBuild    = desc("kura_build_info", "The Kura server's version (the value is 1).", "version", "goversion")
	descJobs     = desc("kura_jobs_total", "Jobs that ended, by kind and result (succeeded, warnings, failed, canceled, interrupted).", "kind", "result")
	descRunning  = desc("kura_jobs_running", "Jobs running now, by kind.", "kind")
	descQueue    = desc("kura_job_queue_length", "Jobs queued or waiting (for a drive, a tape or an agent), by state.", "state")
	descFiles    = desc("kura_job_files_total", "Files the ended jobs of each kind handled.", "kind")
	descSource   = desc("kura_job_source_bytes_total", "Source bytes the ended jobs of each kind handled.", "kind")
	descMedia    = desc("kura_job_media_bytes_total", "Bytes the ended jobs of each kind wrote to or read from media (compressed).", "kind")
	descDuration = desc("kura_job_duration_seconds", "Run time of the ended jobs, by kind.", "kind")
	descDrives   = desc("kura_drives", "Drives of each library, busy (held by a job) or free.", "library", "state")
	descTapes    = desc("kura_tapes", "Tapes by library, state (blank, appendable, full, exported, error) and pool (scratch for none).", "library", "state", "pool")
	descAgents   = desc("kura_agents_connected", "Agents connected to the server now.")
	descClients  = desc("kura_clients_enrolled", "Enrolled clients that are not revoked.")
	descLast     = desc("kura_client_last_success_timestamp_seconds", "When the client's newest backup that ended succeeded or with warnings finished (Unix time). A client that never had one has no series.", "client")
	descPolicy   = desc("kura_policy_last_success_timestamp_seconds", "When the policy's newest complete saveset finished (Unix time).", "policy")
	descCatalog  = desc("kura_catalog_size_bytes", "Size of the catalog: the SQLite file and its write-ahead log, or the PostgreSQL database.")
	descErrors   = desc("kura_scrape_errors", "Parts of this scrape that could not be read (1 each); the server log says why.", "part")

	descWALFiles    = desc("kura_wal_spool_segments", "WAL files waiting in the agent's spool for the server, per client and PostgreSQL cluster, as the agent last reported (every minute).", "client", "cluster")
	descWALOldest   = desc("kura_wal_spool_oldest_seconds", "How long the oldest WAL file in the agent's spool has waited (0 when none waits); it grows while the agent is silent.", "client", "cluster")
	descWALArchived = desc("kura_wal_last_archived_timestamp_seconds", "When the agent last sent a WAL file of the cluster that the server stored (Unix time). A cluster that sent none yet has no series.", "client", "cluster")
	descWALFailing  = desc("kura_wal_spool_failing", "1 while the agent's last attempt to send the cluster's spool failed, 0 once a file was sent after it.", "client", "cluster")
)

// Describe sends every family's description.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descBuild, descJobs, descRunning, descQueue, descFiles, descSource, descMedia,
		descDuration, descDrives, descTapes, descAgents, descClients, descLast, descPolicy, descCatalog, descErrors,
		descWALFiles, descWALOldest, descWALArchived, descWALFailing} {
		ch <- d
	}
}

// Collect reads the sources and sends the metrics. A part that cannot be
// read is left out and counted in kura_scrape_errors; the rest is sent.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.src.Timeout)
	defer cancel()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	failed := func(part string, err error) {
		if err != nil {
			gauge(descErrors, 1, part)
			if c.src.OnError != nil {
				c.src.OnError(part, err)
			}
		}
	}
	gauge(descBuild, 1, c.src.Version, runtime.Version())
	failed("jobs", c.jobs(gauge, counter))
	failed("durations", c.durations(ch))
	failed("last_success", c.lastSuccess(gauge))
	failed("libraries", c.libraries(ctx, gauge))
	failed("clients", c.clients(gauge))
	failed("catalog_size", c.catalogSize(gauge))
	failed("wal_spools", c.walSpools(gauge))
}

// walSpools are the agents' WAL spools, as last reported (the catalog's
// wal_spools), of the clients not revoked.
func (c *Collector) walSpools(gauge sendFunc) error {
	spools, err := c.src.Catalog.WALSpools("")
	if err != nil || len(spools) == 0 {
		return err
	}
	cs, err := c.src.Catalog.Clients()
	if err != nil {
		return err
	}
	revoked := map[string]bool{}
	for _, cl := range cs {
		revoked[cl.Name] = !cl.Revoked.IsZero()
	}
	now := c.src.Now()
	for _, s := range spools {
		if revoked[s.Client] {
			continue
		}
		oldest := 0.0
		if s.Files > 0 && !s.OldestSince.IsZero() {
			oldest = max(0, now.Sub(s.OldestSince).Seconds())
		}
		gauge(descWALFiles, float64(s.Files), s.Client, s.Cluster)
		gauge(descWALOldest, oldest, s.Client, s.Cluster)
		if !s.LastArchivedAt.IsZero() {
			gauge(descWALArchived, float64(s.LastArchivedAt.UnixNano())/1e9, s.Client, s.Cluster)
		}
		failing := 0.0
		if s.LastError != "" {
			failing = 1
		}
		gauge(descWALFailing, failing, s.Client, s.Cluster)
	}
	return nil
}

type sendFunc func(d *prometheus.Desc, v float64, labels ...string)

// ended is whether a job state is final.
func ended(state string) bool {
	switch state {
	case catalog.StateQueued, catalog.StateWaiting, catalog.StateRunning:
		return false
	}
	return true
}

func (c *Collector) jobs(gauge, counter sendFunc) error {
	ts, err := c.src.Catalog.JobTallies()
	if err != nil {
		return err
	}
	type sums struct{ files, source, media float64 }
	perKind := map[string]*sums{}
	running := map[string]float64{}
	queue := map[string]float64{catalog.StateQueued: 0, catalog.StateWaiting: 0}
	for _, t := range ts {
		switch {
		case t.State == catalog.StateRunning:
			running[t.Kind] += float64(t.Count)
		case !ended(t.State):
			queue[t.State] += float64(t.Count)
		default:
			counter(descJobs, float64(t.Count), t.Kind, t.State)
			s := perKind[t.Kind]
			if s == nil {
				s = &sums{}
				perKind[t.Kind] = s
			}
			s.files += float64(t.Files)
			s.source += float64(t.SourceBytes)
			s.media += float64(t.MediaBytes)
		}
		if _, ok := running[t.Kind]; !ok {
			running[t.Kind] = 0 // every kind seen has a running series, 0 when idle
		}
	}
	for kind, n := range running {
		gauge(descRunning, n, kind)
	}
	for state, n := range queue {
		gauge(descQueue, n, state)
	}
	for kind, s := range perKind {
		counter(descFiles, s.files, kind)
		counter(descSource, s.source, kind)
		counter(descMedia, s.media, kind)
	}
	return nil
}

func (c *Collector) durations(ch chan<- prometheus.Metric) error {
	ds, err := c.src.Catalog.EndedJobDurations(DurationBuckets)
	if err != nil {
		return err
	}
	for _, d := range ds {
		b := make(map[float64]uint64, len(DurationBuckets))
		for i, bound := range DurationBuckets {
			b[bound] = d.Buckets[i]
		}
		ch <- prometheus.MustNewConstHistogram(descDuration, d.Count, d.Sum, b, d.Kind)
	}
	return nil
}

// LocalClient is the client label of the jobs of the server machine
// itself (a backup run with the CLI on the server's home).
const LocalClient = "(local)"

func (c *Collector) lastSuccess(gauge sendFunc) error {
	last, err := c.src.Catalog.LastSuccessfulBackups()
	if err != nil {
		return err
	}
	for client, at := range last {
		if client == "" {
			client = LocalClient
		}
		gauge(descLast, float64(at.UnixNano())/1e9, client)
	}
	pols, err := c.src.Catalog.LastPolicyBackups()
	if err != nil {
		return err
	}
	for policy, at := range pols {
		gauge(descPolicy, float64(at.UnixNano())/1e9, policy)
	}
	return nil
}

func (c *Collector) libraries(ctx context.Context, gauge sendFunc) error {
	var errs []error
	drives, err := c.src.Service.Drives(ctx, "")
	errs = append(errs, err)
	type dk struct{ lib, state string }
	dn := map[dk]float64{}
	for _, d := range drives {
		dn[dk{d.Library, "busy"}] += 0
		dn[dk{d.Library, "free"}] += 0
		if d.Busy {
			dn[dk{d.Library, "busy"}]++
		} else {
			dn[dk{d.Library, "free"}]++
		}
	}
	for k, n := range dn {
		gauge(descDrives, n, k.lib, k.state)
	}
	tapes, err := c.src.Service.Tapes(ctx, api.TapeQuery{})
	errs = append(errs, err)
	type tk struct{ lib, state, pool string }
	tn := map[tk]float64{}
	for _, t := range tapes {
		pool := t.Pool
		if pool == "" {
			pool = "scratch"
		}
		tn[tk{t.Library, t.State, pool}]++
	}
	for k, n := range tn {
		gauge(descTapes, n, k.lib, k.state, k.pool)
	}
	return errors.Join(errs...)
}

func (c *Collector) clients(gauge sendFunc) error {
	n := 0.0
	if c.src.Connected != nil {
		n = float64(len(c.src.Connected()))
	}
	gauge(descAgents, n)
	cs, err := c.src.Catalog.Clients()
	if err != nil {
		return err
	}
	enrolled := 0.0
	for _, cl := range cs {
		if cl.Revoked.IsZero() {
			enrolled++
		}
	}
	gauge(descClients, enrolled)
	return nil
}

func (c *Collector) catalogSize(gauge sendFunc) error {
	if c.src.Catalog != nil {
		size, ok, err := c.src.Catalog.DatabaseSize()
		if err != nil {
			return err
		}
		if ok { // PostgreSQL: no files here
			gauge(descCatalog, float64(size))
			return nil
		}
	}
	var size int64
	for _, p := range c.src.CatalogFiles {
		fi, err := os.Stat(p)
		if errors.Is(err, os.ErrNotExist) {
			continue // no write-ahead log right now
		}
		if err != nil {
			return fmt.Errorf("catalog size: %w", err)
		}
		size += fi.Size()
	}
	gauge(descCatalog, float64(size))
	return nil
}
