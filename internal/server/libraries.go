package server

import (
	"net/http"

	"github.com/kura-backup/kura/internal/api"
)

// libraryRoutes are the library resources: thin adapters from HTTP to the
// service layer (internal/service), which does the same work for the
// CLI's local mode.
func (s *Server) libraryRoutes() []route {
	return []route{
		call("GET", "/libraries", http.StatusOK, func(r *http.Request) (any, error) {
			return s.svc.Libraries(r.Context())
		}),
		call("POST", "/libraries", http.StatusCreated, func(r *http.Request) (any, error) {
			req, err := body[api.LibraryCreate](r)
			if err != nil {
				return nil, err
			}
			return s.svc.CreateLibrary(r.Context(), req)
		}),
		call("POST", "/libraries/register", http.StatusOK, func(r *http.Request) (any, error) {
			req, err := body[api.LibraryRegister](r)
			if err != nil {
				return nil, err
			}
			return s.svc.RegisterLibrary(r.Context(), req)
		}),
		call("GET", "/libraries/{name}", http.StatusOK, func(r *http.Request) (any, error) {
			return s.svc.Library(r.Context(), r.PathValue("name"))
		}),
		call("DELETE", "/libraries/{name}", http.StatusNoContent, func(r *http.Request) (any, error) {
			return nil, s.svc.RemoveLibrary(r.Context(), r.PathValue("name"))
		}),
	}
}
