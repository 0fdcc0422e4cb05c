package server

import (
	"net/http"

	"github.com/kura-backup/kura/internal/api"
)

// selectionRoutes are the saved selections, each of one client (the query
// parameter client; "" is the server's own machine).
func (s *Server) selectionRoutes() []route {
	client := func(r *http.Request) string { return r.URL.Query().Get("client") }
	return []route{
		call("GET", "/selections", http.StatusOK, func(r *http.Request) (any, error) {
			return s.svc.Selections(r.Context(), client(r))
		}),
		call("POST", "/selections", http.StatusCreated, func(r *http.Request) (any, error) {
			req, err := body[api.SelectionCreate](r)
			if err != nil {
				return nil, err
			}
			return s.svc.CreateSelection(r.Context(), req)
		}),
		call("GET", "/selections/{name}", http.StatusOK, func(r *http.Request) (any, error) {
			return s.svc.Selection(r.Context(), client(r), r.PathValue("name"))
		}),
		call("DELETE", "/selections/{name}", http.StatusNoContent, func(r *http.Request) (any, error) {
			return nil, s.svc.RemoveSelection(r.Context(), client(r), r.PathValue("name"))
		}),
	}
}
