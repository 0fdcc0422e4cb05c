package server

import (
	"net/http"
	"strconv"

	"github.com/kura-backup/kura/internal/api"
)

// tapeRoutes are the tape and drive resources: thin adapters from HTTP to
// the service layer (internal/service), which does the same work for the
// CLI's local mode.
func (s *Server) tapeRoutes() []route {
	tape := func(method, path string, fn func(r *http.Request, barcode string) (any, error)) route {
		return call(method, path, http.StatusOK, func(r *http.Request) (any, error) { return fn(r, r.PathValue("barcode")) })
	}
	return []route{
		call("GET", "/tapes", http.StatusOK, func(r *http.Request) (any, error) {
			q := r.URL.Query()
			return s.svc.Tapes(r.Context(), api.TapeQuery{Library: q.Get("library"), Pool: q.Get("pool")})
		}),
		tape("GET", "/tapes/{barcode}", func(r *http.Request, bc string) (any, error) { return s.svc.Tape(r.Context(), bc) }),
		tape("GET", "/tapes/{barcode}/layout", func(r *http.Request, bc string) (any, error) { return s.svc.TapeLayout(r.Context(), bc) }),
		tape("POST", "/tapes/{barcode}/export", func(r *http.Request, bc string) (any, error) { return s.svc.ExportTape(r.Context(), bc) }),
		tape("POST", "/tapes/{barcode}/import", func(r *http.Request, bc string) (any, error) { return s.svc.ImportTape(r.Context(), bc) }),
		tape("POST", "/tapes/{barcode}/label", func(r *http.Request, bc string) (any, error) {
			req, err := body[api.TapeLabelRequest](r)
			if err != nil {
				return nil, err
			}
			return s.svc.LabelTape(r.Context(), bc, req)
		}),
		tape("POST", "/tapes/{barcode}/load", func(r *http.Request, bc string) (any, error) {
			req, err := body[api.TapeLoad](r)
			if err != nil {
				return nil, err
			}
			return s.svc.LoadTape(r.Context(), bc, req)
		}),
		tape("POST", "/tapes/{barcode}/unload", func(r *http.Request, bc string) (any, error) { return s.svc.UnloadTape(r.Context(), bc) }),
		call("POST", "/libraries/{name}/tapes", http.StatusCreated, func(r *http.Request) (any, error) {
			req, err := body[api.TapeAdd](r)
			if err != nil {
				return nil, err
			}
			return s.svc.AddTapes(r.Context(), r.PathValue("name"), req)
		}),
		call("GET", "/drives", http.StatusOK, func(r *http.Request) (any, error) { return s.svc.Drives(r.Context(), "") }),
		call("GET", "/libraries/{name}/drives", http.StatusOK, func(r *http.Request) (any, error) {
			return s.svc.Drives(r.Context(), r.PathValue("name"))
		}),
		call("PATCH", "/libraries/{name}/drives/{drive}", http.StatusOK, func(r *http.Request) (any, error) {
			n, err := strconv.Atoi(r.PathValue("drive"))
			if err != nil || n < 1 {
				return nil, badField("drive", "drive %q: a drive is named by its number, 1, 2, ...", r.PathValue("drive"))
			}
			req, err := body[api.DriveUpdate](r)
			if err != nil {
				return nil, err
			}
			return s.svc.SetDrive(r.Context(), r.PathValue("name"), n, req)
		}),
	}
}

// driveJob is the running job of this server that holds drive n of library
// lib, or 0.
func (s *Server) driveJob(lib string, n int) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, rj := range s.running {
		if rj.drive != 0 && rj.lib == lib && rj.drive == n {
			return id
		}
	}
	return 0
}
