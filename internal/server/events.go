package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/monitor"
)

// bus fans job events out to the event streams that follow them. A slow
// follower loses progress events, never the end of the job.
type bus struct {
	mu   sync.Mutex
	subs map[int64]map[chan monitor.Event]struct{}
}

var _ monitor.Sink = (*bus)(nil)

func newBus() *bus { return &bus{subs: map[int64]map[chan monitor.Event]struct{}{}} }

// Event delivers ev to the followers of its job.
func (b *bus) Event(ev monitor.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs[ev.JobID] {
		if ev.Kind == monitor.JobEnded {
			// The end must arrive: wait for room, briefly.
			select {
			case ch <- ev:
			case <-time.After(time.Second):
			}
			continue
		}
		select {
		case ch <- ev:
		default:
		}
	}
}

func (b *bus) subscribe(id int64) (chan monitor.Event, func()) {
	ch := make(chan monitor.Event, 256)
	b.mu.Lock()
	if b.subs[id] == nil {
		b.subs[id] = map[chan monitor.Event]struct{}{}
	}
	b.subs[id][ch] = struct{}{}
	b.mu.Unlock()
	return ch, func() {
		b.mu.Lock()
		delete(b.subs[id], ch)
		if len(b.subs[id]) == 0 {
			delete(b.subs, id)
		}
		b.mu.Unlock()
	}
}

func jobDone(state string) bool {
	switch state {
	case catalog.StateQueued, catalog.StateWaiting, catalog.StateRunning:
		return false
	}
	return true
}

// jobEvents streams a job's events as server-sent events until it ends.
// A job that waits in the queue gets a "queued" event whenever its reason
// changes.
func (s *Server) jobEvents(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	evs, err := s.follow(r.Context(), id)
	if err != nil {
		return err
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	keep := time.NewTicker(5 * time.Second)
	defer keep.Stop()
	for {
		select {
		case ev, ok := <-evs:
			if !ok {
				return nil
			}
			b, _ := json.Marshal(APIEvent(ev))
			if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil || rc.Flush() != nil {
				return nil
			}
		case <-keep.C:
			// Keep proxies from closing the stream.
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil || rc.Flush() != nil {
				return nil
			}
		}
	}
}

// follow is a job's events from the bus, for the API's event stream and
// the web console: a "queued" event first for a job that has not started
// (and again whenever its reason changes), then the job's events, and
// last job_ended with the recorded figures, after which the channel
// closes; it closes too when ctx ends. A job that has ended gets only
// job_ended.
func (s *Server) follow(ctx context.Context, id int64) (<-chan monitor.Event, error) {
	ch, unsub := s.bus.subscribe(id)
	job, err := s.env.Catalog.Job(id)
	if err != nil {
		unsub()
		return nil, err
	}
	out := make(chan monitor.Event, 16)
	go func() {
		defer close(out)
		defer unsub()
		send := func(ev monitor.Event) bool {
			select {
			case out <- ev:
				return true
			case <-ctx.Done():
				return false
			}
		}
		end := func() {
			if j, err := s.env.Catalog.Job(id); err == nil {
				f := s.figures(j)
				send(monitor.Event{Kind: monitor.JobEnded, Time: j.Finished, JobID: id, Message: j.State, Figures: &f})
			}
		}
		if jobDone(job.State) {
			end()
			return
		}
		if !send(monitor.Event{Kind: monitor.Queued, Time: s.opts.Clock.Now(), JobID: id, Message: job.Reason}) {
			return
		}
		check := time.NewTicker(5 * time.Second)
		defer check.Stop()
		reason := job.Reason
		for {
			select {
			case ev := <-ch:
				if ev.Kind == monitor.JobEnded {
					end()
					return
				}
				if !send(ev) {
					return
				}
			case <-check.C:
				// Notice a job that ended without an event (failed before
				// it started) and report changes of a queued job's reason.
				j, err := s.env.Catalog.Job(id)
				if err == nil && jobDone(j.State) {
					end()
					return
				}
				if err == nil && j.Reason != reason {
					reason = j.Reason
					if !send(monitor.Event{Kind: monitor.Queued, Time: s.opts.Clock.Now(), JobID: id, Message: reason}) {
						return
					}
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// figures are the Job Monitor figures of a job record.
func (s *Server) figures(j *catalog.Job) monitor.Figures {
	var ss *catalog.Saveset
	if j.SavesetID != 0 {
		ss, _ = s.env.Catalog.Saveset(j.SavesetID)
	}
	return engine.JobFigures(j, ss)
}

func apiJob(s *Server, j *catalog.Job) api.Job {
	return APIJob(j, s.figures(j))
}
