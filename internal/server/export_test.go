package server

// RestoreBytesSent is the saveset bytes the server has sent to agents for
// restores and agent verifies (the path through the server, not a storage
// node's data port).
func (s *Server) RestoreBytesSent() int64 { return s.dataSent.Load() }
