package server

import (
	"net/http"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/plugin"
)

// agentWAL stores one WAL file from the calling agent's spool (kura wal
// archive on an agent's machine): a backup job of that client with the
// WAL file as its source, which the agent reads from its spool and
// nowhere else. The answer is the job once it ended; the agent removes
// the file from its spool only when the job completed. A caller that
// gives up cancels the job, so no stale job reads the spool later.
func (s *Server) agentWAL(w http.ResponseWriter, r *http.Request, client string) error {
	var req api.WALArchive
	if err := readJSON(r, &req); err != nil {
		return err
	}
	if err := plugin.ValidWALName(req.Cluster + "/" + req.File); err != nil {
		return badField("file", "%v", err)
	}
	if !s.hub.online(client) {
		return apiErr(api.CodeConflict, "client %s has no agent running (kura agent run) to read its WAL spool", client)
	}
	ids, err := s.Submit(api.JobRequest{Kind: api.KindBackup, Client: client,
		Sources: []api.Source{{Kind: plugin.KindWAL, Name: req.Cluster + "/" + req.File}}})
	if err != nil {
		return err
	}
	id := ids[0]
	evs, err := s.follow(r.Context(), id)
	if err != nil {
		return err
	}
	for range evs {
	}
	if r.Context().Err() != nil {
		_ = s.Cancel(id, "the WAL archiver stopped waiting")
		return r.Context().Err()
	}
	j, err := s.env.Catalog.Job(id)
	if err != nil {
		return err
	}
	return writeJSON(w, apiJob(s, j))
}
