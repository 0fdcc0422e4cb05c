package server

import (
	"net/http"
	"strconv"

	"github.com/kura-backup/kura/internal/api"
)

// savesetQuery reads a saveset listing's query parameters.
func savesetQuery(r *http.Request) api.SavesetQuery {
	q := r.URL.Query()
	return api.SavesetQuery{Client: q.Get("client"), Selection: q.Get("selection"), Tape: q.Get("tape"), Status: q.Get("status")}
}

// queryLimit reads a page's limit (absent: 0, the default).
func queryLimit(r *http.Request) (int, error) {
	s := r.URL.Query().Get("limit")
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, badField("limit", "must be a number, not %q", s)
	}
	return n, nil
}

// queryBool reads a true/false query parameter (absent: false).
func queryBool(r *http.Request, name string) (bool, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, badField(name, "must be true or false, not %q", s)
	}
	return b, nil
}

// savesetRoutes are the saveset resources: the listing, retention's
// verdicts, the restore recipe, and the pages of a folder's listing and of
// a search (a large listing is read page by page: the server never builds
// it whole).
func (s *Server) savesetRoutes() []route {
	return []route{
		call("GET", "/savesets", http.StatusOK, func(r *http.Request) (any, error) {
			return s.svc.Savesets(r.Context(), savesetQuery(r))
		}),
		call("GET", "/savesets/retention", http.StatusOK, func(r *http.Request) (any, error) {
			return s.svc.Retention(r.Context(), savesetQuery(r))
		}),
		call("GET", "/savesets/find", http.StatusOK, func(r *http.Request) (any, error) {
			n, err := queryLimit(r)
			if err != nil {
				return nil, err
			}
			q := r.URL.Query()
			newest, err := queryBool(r, "newest_first")
			if err != nil {
				return nil, err
			}
			return s.svc.Find(r.Context(), api.FindQuery{Pattern: q.Get("pattern"), Client: q.Get("client"), NewestFirst: newest,
				Cursor: q.Get("cursor"), Limit: n})
		}),
		call("GET", "/savesets/{id}", http.StatusOK, func(r *http.Request) (any, error) {
			id, err := pathID(r, "id")
			if err != nil {
				return nil, err
			}
			return s.svc.Saveset(r.Context(), id)
		}),
		call("GET", "/savesets/{id}/recipe", http.StatusOK, func(r *http.Request) (any, error) {
			id, err := pathID(r, "id")
			if err != nil {
				return nil, err
			}
			return s.svc.Recipe(r.Context(), id)
		}),
		call("GET", "/savesets/{id}/entries", http.StatusOK, func(r *http.Request) (any, error) {
			id, err := pathID(r, "id")
			if err != nil {
				return nil, err
			}
			n, err := queryLimit(r)
			if err != nil {
				return nil, err
			}
			q := r.URL.Query()
			return s.svc.Entries(r.Context(), api.EntriesQuery{SavesetID: id, Path: q.Get("path"), Cursor: q.Get("cursor"), Limit: n})
		}),
	}
}
