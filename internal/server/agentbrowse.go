package server

import (
	"io"
	"net/http"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/stream"
)

// An agent browses its own client's savesets (kura agent ls, find): the
// server cannot read an encrypted saveset's index, the agent holding the
// key can. An agent sees only its own client's complete savesets, outside
// any job: their records, indexes and data, to list, search and verify
// them (writing files is a restore: a job).

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

// ownSaveset is the record of one of the calling client's savesets.
func (s *Server) ownSaveset(r *http.Request, client string) (*catalog.Saveset, error) {
	id, err := pathID(r, "ss")
	if err != nil {
		return nil, err
	}
	ss, err := engine.EnvStore{Env: s.env}.Saveset(id)
	if err != nil {
		return nil, err
	}
	if ss.Client != client {
		s.log.Warn("refused: agent asked for another client's saveset", "client", client, "saveset", id)
		return nil, apiErr(api.CodeForbidden, "saveset %d is not client %s's", id, client)
	}
	return ss, nil
}

// agentOwnTicket is agentSavesetTicket for one of the calling client's
// savesets outside a job (kura agent verify): a read ticket when the
// saveset's tapes are on a storage node with a data port. No job holds it:
// it is used once, dies unused after a while on the node, and dies with
// every other ticket of the client when the client is revoked.
func (s *Server) agentOwnTicket(w http.ResponseWriter, r *http.Request, client string) error {
	ss, err := s.ownSaveset(r, client)
	if err != nil {
		return err
	}
	part, off, err := dataLocation(r, ss)
	if err != nil {
		return err
	}
	tk, _, err := s.readTicket(client, ss, part, off)
	if err != nil {
		return err
	}
	return writeJSON(w, tk)
}

// agentOwnData streams one of the calling client's savesets' media bytes
// from a location (?part=P&offset=O) to the end of its data (kura agent
// verify), each write bounded by the idle timeout.
func (s *Server) agentOwnData(w http.ResponseWriter, r *http.Request, client string) error {
	ss, err := s.ownSaveset(r, client)
	if err != nil {
		return err
	}
	part, off, err := dataLocation(r, ss)
	if err != nil {
		return err
	}
	src, err := engine.EnvStore{Env: s.env}.Data(ss)
	if err != nil {
		return err
	}
	rc, err := src.OpenAt(stream.Location{Part: part, Offset: off})
	if err != nil {
		return err
	}
	defer rc.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	out := &idleWriter{w: w, rc: http.NewResponseController(w), idle: s.opts.IdleTimeout}
	defer out.finish()
	n, err := io.Copy(out, rc)
	s.dataSent.Add(n)
	if err != nil {
		// Headers are gone: cut the stream so the agent sees it broken.
		s.log.Warn("sending saveset data to its agent", "client", client, "saveset", ss.ID, "err", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}

// agentOwnIndex sends the index of one of the calling client's savesets.
func (s *Server) agentOwnIndex(w http.ResponseWriter, r *http.Request, client string) error {
	ss, err := s.ownSaveset(r, client)
	if err != nil {
		return err
	}
	f, st, err := s.sendIndexFile(w, ss)
	if err != nil {
		return err
	}
	defer f.Close()
	http.ServeContent(w, r, "", st.ModTime(), f)
	return nil
}
