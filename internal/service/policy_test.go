package service_test

import (
	"errors"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/service"
)

func newService(t *testing.T) (*service.Local, *engine.Env) {
	t.Helper()
	env, err := engine.Open(filepath.Join(t.TempDir(), "home"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	if err := env.Catalog.CreateSelection(catalog.Selection{Name: "docs", Paths: []string{t.TempDir()}}); err != nil {
		t.Fatal(err)
	}
	return service.New(env), env
}

// wantAPI fails unless err is an *api.Error with code and field.
func wantAPI(t *testing.T, what string, err error, code, field string) {
	t.Helper()
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != code || ae.Field != field {
		t.Errorf("%s: %v (%#v); want code %s, field %q", what, err, ae, code, field)
	}
}

// The next runs are read at the service's clock, in the policy's zone,
// earliest first, a full where full and incremental fall together.
func TestNextRunsAtTheServiceClock(t *testing.T) {
	svc, _ := newService(t)
	now := time.Date(2026, 12, 4, 15, 30, 0, 0, time.UTC) // Saturday 00:30 in Tokyo
	svc.WithClock(func() time.Time { return now })
	if _, err := svc.CreatePolicy(t.Context(), api.PolicyCreate{Name: "nightly", Selection: "docs", FullCron: "0 1 * * 6",
		IncrCron: "0 1 * * *", Zone: "Asia/Tokyo", KeepGenerations: 2}); err != nil {
		t.Fatal(err)
	}
	runs, err := svc.NextRuns(t.Context(), "nightly", 3)
	if err != nil {
		t.Fatal(err)
	}
	tokyo, _ := time.LoadLocation("Asia/Tokyo")
	want := []api.PolicySlot{
		{Time: time.Date(2026, 12, 5, 1, 0, 0, 0, tokyo), Level: "full"},
		{Time: time.Date(2026, 12, 6, 1, 0, 0, 0, tokyo), Level: "incr"},
		{Time: time.Date(2026, 12, 7, 1, 0, 0, 0, tokyo), Level: "incr"},
	}
	if len(runs) != len(want) {
		t.Fatalf("next runs %v; want %v", runs, want)
	}
	for i := range want {
		if !runs[i].Time.Equal(want[i].Time) || runs[i].Level != want[i].Level {
			t.Errorf("next run %d: %v %s; want %v %s", i, runs[i].Time, runs[i].Level, want[i].Time, want[i].Level)
		}
	}
	if _, err := svc.CreatePolicy(t.Context(), api.PolicyCreate{Name: "byhand", Selection: "docs", KeepDays: 3}); err != nil {
		t.Fatal(err)
	}
	if runs, err := svc.NextRuns(t.Context(), "byhand", 5); err != nil || runs == nil || len(runs) != 0 {
		t.Errorf("next runs of a policy without schedules: %v, %v; want []", runs, err)
	}
	_, err = svc.NextRuns(t.Context(), "nightly", 0)
	wantAPI(t, "0 next runs", err, api.CodeBadRequest, "count")
	_, err = svc.NextRuns(t.Context(), "nope", 1)
	wantAPI(t, "next runs of no policy", err, api.CodeNotFound, "policy")
}

// Bad input is bad_request, a name that names nothing not_found, a name
// taken conflict; nothing is recorded; an edit changes only what it sets.
func TestPolicyErrorsAndEdits(t *testing.T) {
	svc, env := newService(t)
	ctx := t.Context()
	p, err := svc.CreatePolicy(ctx, api.PolicyCreate{Name: "daily", Selection: "docs", IncrCron: "0 1 * * *", KeepDays: 7, BWLimit: 2048})
	if err != nil {
		t.Fatal(err)
	}
	if p.Pool != "daily" || p.BWLimitKBps != 2 || p.LastRun != nil {
		t.Errorf("created %+v: want pool daily, 2 KB/s, no last run", p)
	}
	for _, c := range []struct {
		what        string
		req         api.PolicyCreate
		code, field string
	}{
		{"no name", api.PolicyCreate{Selection: "docs", KeepDays: 1}, api.CodeBadRequest, "name"},
		{"a bad schedule", api.PolicyCreate{Name: "p", Selection: "docs", IncrCron: "61 1 * * *", KeepDays: 1}, api.CodeBadRequest, ""},
		{"a bad zone", api.PolicyCreate{Name: "p", Selection: "docs", IncrCron: "0 1 * * *", Zone: "Mars/Olympus", KeepDays: 1}, api.CodeBadRequest, ""},
		{"retention keeping nothing", api.PolicyCreate{Name: "p", Selection: "docs"}, api.CodeBadRequest, ""},
		{"no such selection", api.PolicyCreate{Name: "p", Selection: "nope", KeepDays: 1}, api.CodeBadRequest, ""},
		{"no such library", api.PolicyCreate{Name: "p", Selection: "docs", KeepDays: 1, Library: "nowhere"}, api.CodeNotFound, "library"},
		{"a name taken", api.PolicyCreate{Name: "daily", Selection: "docs", KeepDays: 1}, api.CodeConflict, "name"},
	} {
		_, err := svc.CreatePolicy(ctx, c.req)
		wantAPI(t, c.what, err, c.code, c.field)
	}
	if ps, err := svc.Policies(ctx); err != nil || len(ps) != 1 {
		t.Errorf("policies after refusals: %v, %v; want daily alone", ps, err)
	}

	keep, zero := 4, int64(0)
	got, err := svc.EditPolicy(ctx, "daily", api.PolicyEdit{KeepGenerations: &keep, BWLimit: &zero})
	if err != nil {
		t.Fatal(err)
	}
	want := *p
	want.KeepGenerations, want.BWLimitKBps = 4, 0
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("edited\n%+v\nwant\n%+v", *got, want)
	}
	bad := "61 * * * *"
	_, err = svc.EditPolicy(ctx, "daily", api.PolicyEdit{IncrCron: &bad})
	wantAPI(t, "an edit to a bad schedule", err, api.CodeBadRequest, "")
	if p, _ := env.Catalog.Policy("daily"); p.IncrCron != "0 1 * * *" {
		t.Errorf("a refused edit changed the schedule to %q", p.IncrCron)
	}
	_, err = svc.EditPolicy(ctx, "nope", api.PolicyEdit{KeepGenerations: &keep})
	wantAPI(t, "an edit of no policy", err, api.CodeNotFound, "policy")
	wantAPI(t, "removing no policy", svc.RemovePolicy(ctx, "nope"), api.CodeNotFound, "policy")
	if err := svc.RemovePolicy(ctx, "daily"); err != nil {
		t.Fatal(err)
	}
	_, err = svc.Policy(ctx, "daily")
	wantAPI(t, "a removed policy", err, api.CodeNotFound, "policy")
}

// A run is queued as the policy's backup job; without a queue it is a
// conflict, and a bad level is refused before the policy is looked up.
func TestRunPolicyQueuesThePolicyJob(t *testing.T) {
	svc, _ := newService(t)
	ctx := t.Context()
	if _, err := svc.CreatePolicy(ctx, api.PolicyCreate{Name: "daily", Selection: "docs", KeepDays: 7, Pool: "p1", Verify: true}); err != nil {
		t.Fatal(err)
	}
	_, err := svc.RunPolicy(ctx, "daily", "")
	wantAPI(t, "a run without a queue", err, api.CodeConflict, "")
	if !errors.Is(err, service.ErrNoQueue) {
		t.Errorf("a run without a queue: %v is not ErrNoQueue", err)
	}
	var got []api.JobRequest
	svc.WithQueue(func(r api.JobRequest) ([]int64, error) { got = append(got, r); return []int64{7}, nil })
	ids, err := svc.RunPolicy(ctx, "daily", "")
	if err != nil || !reflect.DeepEqual(ids, []int64{7}) {
		t.Fatalf("run: %v, %v", ids, err)
	}
	want := api.JobRequest{Kind: api.KindBackup, Selection: "docs", Level: "full", Compress: "", Verify: true, Policy: "daily", Pool: "p1"}
	if len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Errorf("queued %+v; want %+v", got, want)
	}
	_, err = svc.RunPolicy(ctx, "nope", "weekly")
	wantAPI(t, "a run at level weekly", err, api.CodeBadRequest, "level")
	_, err = svc.RunPolicy(ctx, "nope", "incr")
	wantAPI(t, "a run of no policy", err, api.CodeNotFound, "policy")
}

// A run at level scheduled takes the level of the policy's next run at the
// service's clock (full where a full and an incremental fall together),
// and full for a policy without schedules.
func TestRunPolicyAtItsScheduledLevel(t *testing.T) {
	svc, _ := newService(t)
	ctx := t.Context()
	now := time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC) // a Monday
	svc.WithClock(func() time.Time { return now })
	var got []string
	svc.WithQueue(func(r api.JobRequest) ([]int64, error) {
		got = append(got, r.Level)
		return []int64{int64(len(got))}, nil
	})
	for _, p := range []api.PolicyCreate{
		{Name: "nightly", Selection: "docs", KeepDays: 7, FullCron: "0 1 * * 6", IncrCron: "0 1 * * *", Zone: "UTC"},
		{Name: "byhand", Selection: "docs", KeepDays: 7},
	} {
		if _, err := svc.CreatePolicy(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	run := func(name string) {
		t.Helper()
		if _, err := svc.RunPolicy(ctx, name, api.LevelScheduled); err != nil {
			t.Fatalf("run %s at its scheduled level: %v", name, err)
		}
	}
	run("nightly") // next: Tuesday's incremental
	now = time.Date(2026, 5, 8, 12, 0, 0, 0, time.UTC)
	run("nightly") // next: Saturday 01:00, full and incremental: the full
	run("byhand")
	if want := []string{"incr", "full", "full"}; !reflect.DeepEqual(got, want) {
		t.Errorf("levels queued %v; want %v", got, want)
	}
}

// The job filter: a state not known is bad input; a plan's auto inputs on
// a catalog without history are a conflict naming the input.
func TestJobFilterAndPlanErrors(t *testing.T) {
	svc, _ := newService(t)
	ctx := t.Context()
	_, err := svc.Jobs(ctx, api.JobFilter{State: "runing"})
	wantAPI(t, "state runing", err, api.CodeBadRequest, "state")
	if jobs, err := svc.Jobs(ctx, api.JobFilter{Kind: "some_new_kind"}); err != nil || jobs == nil || len(jobs) != 0 {
		t.Errorf("jobs of a kind none has: %v, %v; want []", jobs, err)
	}
	_, err = svc.Job(ctx, 99)
	wantAPI(t, "job 99", err, api.CodeNotFound, "job")

	req := api.PlanRequest{ThroughputAuto: true, WindowSeconds: 8 * 3600, CapacityBytes: 1 << 40, Reserve: 0.3}
	_, err = svc.Plan(ctx, req)
	wantAPI(t, "a plan of throughput auto without history", err, api.CodeConflict, "throughput_auto")
	if !errors.Is(err, service.ErrNoHistory) {
		t.Errorf("%v is not ErrNoHistory", err)
	}
	req.ThroughputAuto, req.ThroughputBytesPerSecond = false, 25<<20
	p, err := service.Plan(req, nil)
	if err != nil || p.Generations != 2 || len(p.Reasons) == 0 {
		t.Errorf("a plan of given figures without a catalog: %+v, %v", p, err)
	}
	req.CapacityBytes = 0
	_, err = service.Plan(req, nil)
	wantAPI(t, "a plan without capacity", err, api.CodeBadRequest, "")
}

// The retention preview judges the policy's own savesets, with its rules
// or with those asked for in their place, and changes nothing: three
// daily fulls kept two generations expire the oldest; asked for three,
// none; another policy's saveset is not in the preview.
func TestPolicyRetentionPreview(t *testing.T) {
	svc, env := newService(t)
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	svc.WithClock(func() time.Time { return now })
	for _, p := range []api.PolicyCreate{{Name: "daily", Selection: "docs", KeepGenerations: 2}, {Name: "other", Selection: "docs", KeepDays: 1}} {
		if _, err := svc.CreatePolicy(t.Context(), p); err != nil {
			t.Fatal(err)
		}
	}
	var ids []int64
	for i, pol := range []string{"daily", "daily", "daily", "other"} {
		s := &catalog.Saveset{Selection: "docs", Policy: pol, Level: catalog.LevelFull, Status: catalog.StatusComplete,
			Created: now.Add(-time.Duration(4-i) * 24 * time.Hour)}
		if err := env.Catalog.CreateSaveset(s); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
	}
	keep := func(req api.RetentionPreview) map[int64]bool {
		t.Helper()
		ds, err := svc.PolicyRetention(t.Context(), "daily", req)
		if err != nil {
			t.Fatal(err)
		}
		out := map[int64]bool{}
		for _, d := range ds {
			if d.Policy != "daily" || d.Rule == "" || d.Reason == "" {
				t.Errorf("decision %+v: want one of policy daily, with its rule and reason", d)
			}
			out[d.ID] = d.Keep
		}
		return out
	}
	if got, want := keep(api.RetentionPreview{}), map[int64]bool{ids[0]: false, ids[1]: true, ids[2]: true}; !reflect.DeepEqual(got, want) {
		t.Errorf("with the policy's rules: %v; want %v", got, want)
	}
	three := 3
	if got, want := keep(api.RetentionPreview{KeepGenerations: &three}), map[int64]bool{ids[0]: true, ids[1]: true, ids[2]: true}; !reflect.DeepEqual(got, want) {
		t.Errorf("with 3 generations: %v; want %v", got, want)
	}
	if s, err := env.Catalog.Saveset(ids[0]); err != nil || s.Expired {
		t.Errorf("saveset %d after the previews: expired %v, %v; want untouched", ids[0], s != nil && s.Expired, err)
	}
	minus := -1
	_, err := svc.PolicyRetention(t.Context(), "daily", api.RetentionPreview{KeepDays: &minus})
	wantAPI(t, "a negative keep_days", err, api.CodeBadRequest, "keep_days")
	_, err = svc.PolicyRetention(t.Context(), "nope", api.RetentionPreview{})
	wantAPI(t, "the preview of no policy", err, api.CodeNotFound, "policy")
}
