package server

import (
	"net/http"
)

// catalogCopyRoutes find the catalog's own backups on tape, through the
// service layer (internal/service).
func (s *Server) catalogCopyRoutes() []route {
	return []route{
		call("GET", "/catalog/backups", http.StatusOK, func(r *http.Request) (any, error) {
			return s.svc.CatalogCopies(r.Context(), r.URL.Query()["vtl_dir"])
		}),
	}
}
