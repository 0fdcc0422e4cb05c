package server

import (
	"net/http"
	"os"
	"strconv"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/engine"
)

// An agent browses its own client's savesets (kura agent ls, find): the
// server cannot read an encrypted saveset's index, the agent holding the
// key can. An agent sees only its own client's complete savesets, outside
// any job, and only their records and indexes (no data: a restore is a job).

// agentOwnSavesets lists the calling client's complete savesets.
func (s *Server) agentOwnSavesets(w http.ResponseWriter, r *http.Request, client string) error {
	sets, err := s.env.Catalog.Savesets(catalog.SavesetFilter{Clients: []string{client}, Statuses: []string{catalog.StatusComplete}})
	if err != nil {
		return err
	}
	out := []api.Saveset{}
	for _, ss := range sets {
		if !ss.Expired {
			out = append(out, APISaveset(ss))
		}
	}
	return writeJSON(w, out)
}

// agentOwnIndex sends the index of one of the calling client's savesets.
func (s *Server) agentOwnIndex(w http.ResponseWriter, r *http.Request, client string) error {
	id, err := pathID(r, "ss")
	if err != nil {
		return err
	}
	ss, err := engine.EnvStore{Env: s.env}.Saveset(id)
	if err != nil {
		return err
	}
	if ss.Client != client {
		s.log.Warn("refused: agent asked for another client's saveset", "client", client, "saveset", id)
		return apiErr(api.CodeForbidden, "saveset %d is not client %s's", id, client)
	}
	p, err := s.env.IndexFile(ss)
	if err != nil {
		return err
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(st.Size(), 10))
	http.ServeContent(w, r, "", st.ModTime(), f)
	return nil
}
