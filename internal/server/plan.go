package server

import (
	"net/http"

	"github.com/kura-backup/kura/internal/api"
)

// planRoutes size a backup design, through the service layer
// (internal/service): the auto inputs come from the server's history.
func (s *Server) planRoutes() []route {
	return []route{
		call("POST", "/plan", http.StatusOK, func(r *http.Request) (any, error) {
			req, err := body[api.PlanRequest](r)
			if err != nil {
				return nil, err
			}
			return s.svc.Plan(r.Context(), req)
		}),
	}
}
