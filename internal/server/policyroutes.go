package server

import (
	"net/http"
	"strconv"

	"github.com/kura-backup/kura/internal/api"
)

// policyRoutes are the backup policies, through the service layer
// (internal/service), which does the same work for the CLI's local mode.
// A policy on a server backs up a client: the server's own machine has no
// agent for its scheduler to run.
func (s *Server) policyRoutes() []route {
	return []route{
		call("GET", "/policies", http.StatusOK, func(r *http.Request) (any, error) {
			return s.svc.Policies(r.Context())
		}),
		call("POST", "/policies", http.StatusCreated, func(r *http.Request) (any, error) {
			req, err := body[api.PolicyCreate](r)
			if err != nil {
				return nil, err
			}
			if req.Client == "" {
				return nil, errPolicyClient
			}
			return s.svc.CreatePolicy(r.Context(), req)
		}),
		call("GET", "/policies/{name}", http.StatusOK, func(r *http.Request) (any, error) {
			return s.svc.Policy(r.Context(), r.PathValue("name"))
		}),
		call("PATCH", "/policies/{name}", http.StatusOK, func(r *http.Request) (any, error) {
			req, err := body[api.PolicyEdit](r)
			if err != nil {
				return nil, err
			}
			p, err := s.svc.Policy(r.Context(), r.PathValue("name"))
			if err != nil {
				return nil, err
			}
			if p.Client == "" {
				return nil, errPolicyClient
			}
			return s.svc.EditPolicy(r.Context(), p.Name, req)
		}),
		call("DELETE", "/policies/{name}", http.StatusNoContent, func(r *http.Request) (any, error) {
			return nil, s.svc.RemovePolicy(r.Context(), r.PathValue("name"))
		}),
		call("GET", "/policies/{name}/next", http.StatusOK, func(r *http.Request) (any, error) {
			count := 1
			if v := r.URL.Query().Get("count"); v != "" {
				n, err := strconv.Atoi(v)
				if err != nil {
					return nil, badField("count", "must be 1 to %d, not %q", api.MaxNextRuns, v)
				}
				count = n
			}
			return s.svc.NextRuns(r.Context(), r.PathValue("name"), count)
		}),
		call("GET", "/policies/{name}/retention", http.StatusOK, func(r *http.Request) (any, error) {
			var req api.RetentionPreview
			for field, to := range map[string]**int{"keep_generations": &req.KeepGenerations, "keep_days": &req.KeepDays} {
				if v := r.URL.Query().Get(field); v != "" {
					n, err := strconv.Atoi(v)
					if err != nil {
						return nil, badField(field, "must be a whole number, not %q", v)
					}
					*to = &n
				}
			}
			return s.svc.PolicyRetention(r.Context(), r.PathValue("name"), req)
		}),
		call("POST", "/policies/{name}/run", http.StatusAccepted, func(r *http.Request) (any, error) {
			req, err := body[api.PolicyRun](r)
			if err != nil {
				return nil, err
			}
			ids, err := s.svc.RunPolicy(r.Context(), r.PathValue("name"), req.Level)
			if err != nil {
				return nil, err
			}
			return api.JobsSubmitted{Jobs: ids}, nil
		}),
	}
}

// errPolicyClient refuses a policy of the server's own machine.
var errPolicyClient = &api.Error{Code: api.CodeBadRequest, Field: "client",
	Message: "a policy on a server needs --client NAME: the client whose selection it backs up"}
