package server_test

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/pki"
)

// scrape GETs /metrics with token as the bearer token and returns the
// status and the body.
func (r *rig) scrape(token string) (int, []byte) {
	r.t.Helper()
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: pki.PinnedTLSConfig(r.srv.CAFingerprint(), nil)}}
	defer c.CloseIdleConnections()
	req, _ := http.NewRequestWithContext(r.t.Context(), "GET", r.url+"/metrics", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(token))
	}
	resp, err := c.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// families parses the Prometheus text format.
func families(t *testing.T, body []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parsing /metrics: %v\n%s", err, body)
	}
	return mfs
}

// value is the value of the series of family name with the labels (name,
// value pairs); ok is false when there is no such series.
func value(mfs map[string]*dto.MetricFamily, name string, labels ...string) (v float64, ok bool) {
	mf := mfs[name]
	if mf == nil {
		return 0, false
	}
next:
	for _, m := range mf.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if have[labels[i]] != labels[i+1] {
				continue next
			}
		}
		switch {
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

// /metrics after real jobs: every family is there, with the values the
// jobs' records and the library say; the names pass the client library's
// lint; the scrape needs the metrics token or the admin token.
func TestMetricsAfterBackups(t *testing.T) {
	t.Parallel()
	r := startServer(t, t.TempDir(), "")
	r.runAgent("c1")
	src := t.TempDir()
	makeTree(t, src, 12, 7)
	before := time.Now()
	j1 := r.backupAndCheck(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src}})
	j2 := r.backupAndCheck(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src}, Level: "incr"})
	j3 := r.backupAndCheck(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src}, Policy: "nightly"})
	failed := r.wait(r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{t.TempDir() + "/missing"}})[0])
	if failed.State != "failed" {
		t.Fatalf("a backup of a missing folder: %s; want failed", failed.State)
	}

	if code, _ := r.scrape(""); code != http.StatusUnauthorized {
		t.Errorf("a scrape without a token: %d; want 401", code)
	}
	if code, _ := r.scrape("kura-metrics-wrong-wrong-wrong-wrong-wrong-wrong"); code != http.StatusUnauthorized {
		t.Errorf("a scrape with a wrong token: %d; want 401", code)
	}
	admin, err := os.ReadFile(r.srv.AdminTokenPath())
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := r.scrape(string(admin)); code != http.StatusOK {
		t.Errorf("a scrape with the admin token: %d; want 200", code)
	}
	tok, err := os.ReadFile(r.srv.MetricsTokenPath())
	if err != nil {
		t.Fatal(err)
	}
	code, body := r.scrape(string(tok))
	if code != http.StatusOK {
		t.Fatalf("a scrape with the metrics token: %d %s", code, body)
	}
	problems, err := promlint.New(bytes.NewReader(body)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	mfs := families(t, body)
	want := func(name string, want float64, labels ...string) {
		t.Helper()
		got, ok := value(mfs, name, labels...)
		if !ok {
			t.Errorf("%s%v: no series", name, labels)
		} else if got != want {
			t.Errorf("%s%v = %v; want %v", name, labels, got, want)
		}
	}
	want("kura_jobs_total", 3, "kind", "backup", "result", "succeeded")
	want("kura_jobs_total", 1, "kind", "backup", "result", "failed")
	want("kura_jobs_running", 0, "kind", "backup")
	want("kura_job_queue_length", 0, "state", "queued")
	want("kura_job_files_total", float64(j1.Files+j2.Files+j3.Files+failed.Files), "kind", "backup")
	want("kura_job_source_bytes_total", float64(j1.SourceBytes+j2.SourceBytes+j3.SourceBytes+failed.SourceBytes), "kind", "backup")
	want("kura_job_media_bytes_total", float64(j1.MediaBytes+j2.MediaBytes+j3.MediaBytes+failed.MediaBytes), "kind", "backup")
	want("kura_job_duration_seconds", 4, "kind", "backup")
	want("kura_drives", 0, "library", "default", "state", "busy")
	want("kura_drives", 2, "library", "default", "state", "free")
	want("kura_agents_connected", 1)
	want("kura_clients_enrolled", 1)
	want("kura_build_info", 1)
	if n, _ := value(mfs, "kura_tapes", "library", "default", "state", "appendable", "pool", "scratch"); n != 1 {
		t.Errorf("appendable scratch tapes of the default library: %v; want 1 (the one both backups wrote)", n)
	}
	last, ok := value(mfs, "kura_client_last_success_timestamp_seconds", "client", "c1")
	if end := float64(j3.Finished.UnixNano()) / 1e9; !ok || last != end || last < float64(before.Unix()) {
		t.Errorf("c1's last success: %v (%v); want %v, the end of its last backup", last, ok, end)
	}
	ss, err := r.admin.Saveset(t.Context(), j3.SavesetID)
	if err != nil {
		t.Fatal(err)
	}
	if at, ok := value(mfs, "kura_policy_last_success_timestamp_seconds", "policy", "nightly"); !ok || at != float64(ss.Finished.UnixNano())/1e9 {
		t.Errorf("nightly's last success: %v (%v); want %v, the end of its saveset", at, ok, ss.Finished)
	}
	if n, _ := value(mfs, "kura_catalog_size_bytes"); n <= 0 {
		t.Errorf("catalog size %v; want more than 0", n)
	}
	if _, ok := mfs["kura_scrape_errors"]; ok {
		t.Errorf("a scrape had errors: %v", mfs["kura_scrape_errors"])
	}
}

// While a backup runs and another waits for its drive, the scrape says
// so: one running, one in the queue, the drive busy.
func TestMetricsWhileRunning(t *testing.T) {
	t.Parallel()
	r := startServer(t, t.TempDir(), "")
	r.runAgent("c1")
	src := t.TempDir()
	randomFiles(t, src, 16, 1<<20, 5)
	// 16 MiB at 128 KiB/s: two minutes, longer than the test on a busy
	// machine, so it ends only canceled. Small frames: progress counts
	// what went out, a frame at a time.
	slow := r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src}, Compress: "none", BWLimit: 128 << 10,
		FrameSize: 64 << 10, Drive: 1})[0]
	r.waitProgress(slow)
	next := r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src}, Drive: 1})[0]
	r.pollJob(next, 10*time.Second, "waits for the drive", func(j *api.Job) bool { return j.State == "waiting" || j.Reason != "queued" })
	tok, err := os.ReadFile(r.srv.MetricsTokenPath())
	if err != nil {
		t.Fatal(err)
	}
	code, body := r.scrape(string(tok))
	if code != http.StatusOK {
		t.Fatalf("scrape: %d %s", code, body)
	}
	mfs := families(t, body)
	if n, _ := value(mfs, "kura_jobs_running", "kind", "backup"); n != 1 {
		t.Errorf("running backups: %v; want 1", n)
	}
	queued, _ := value(mfs, "kura_job_queue_length", "state", "queued")
	waiting, _ := value(mfs, "kura_job_queue_length", "state", "waiting")
	if queued+waiting != 1 {
		t.Errorf("queue length: %v queued + %v waiting; want 1 in all", queued, waiting)
	}
	if n, _ := value(mfs, "kura_drives", "library", "default", "state", "busy"); n != 1 {
		t.Errorf("busy drives: %v; want 1", n)
	}
	if n, _ := value(mfs, "kura_drives", "library", "default", "state", "free"); n != 1 {
		t.Errorf("free drives: %v; want 1", n)
	}
	for _, id := range []int64{next, slow} {
		if _, err := r.admin.Cancel(t.Context(), id); err != nil {
			t.Fatal(err)
		}
		r.wait(id)
	}
}
