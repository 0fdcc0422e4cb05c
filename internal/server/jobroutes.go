package server

import (
	"net/http"
	"strconv"

	"github.com/kura-backup/kura/internal/api"
)

// jobRoutes are the job monitor's records, through the service layer
// (internal/service), which does the same work for the CLI's local mode.
func (s *Server) jobRoutes() []route {
	return []route{
		call("GET", "/jobs", http.StatusOK, func(r *http.Request) (any, error) {
			f, err := jobFilter(r)
			if err != nil {
				return nil, err
			}
			return s.svc.Jobs(r.Context(), f)
		}),
		call("GET", "/jobs/{id}", http.StatusOK, func(r *http.Request) (any, error) {
			id, err := pathID(r, "id")
			if err != nil {
				return nil, err
			}
			return s.svc.Job(r.Context(), id)
		}),
	}
}

// jobFilter reads the query of GET /jobs.
func jobFilter(r *http.Request) (api.JobFilter, error) {
	q := r.URL.Query()
	f := api.JobFilter{Kind: q.Get("kind"), State: q.Get("state"), Client: q.Get("client")}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return f, badField("limit", "must be 1 to %d", api.MaxJobLimit)
		}
		f.Limit = n
	}
	return f, nil
}
