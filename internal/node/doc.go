// Package node is a Kura storage node: a machine that owns libraries and
// their drives, for a server that keeps the catalog and directs every job.
// Each library has its folder in the node's home (HOME/vtl/NAME) and keeps
// its tapes there, in an S3 bucket the node reaches with the credentials
// of its own environment, or on the cartridges of a tape library whose
// changer and drives are the node's devices; the server never touches the
// media or their credentials.
//
// # Roles
//
// The server directs (a Bareos director); the node is its storage daemon.
// The node enrolls like an agent, with a one-time node token (kura token
// create --node): its certificate comes from the server's CA, and the
// catalog records it as a client of kind node, so revoking it refuses its
// certificate from then on. It dials out; the only port it may open is its
// data port (kura node run --data-listen), where agents send backups to
// span sessions (span.go) and read restores with read tickets (read.go).
//
// # The tunnel
//
//	node ──TLS 1.3, client certificate, ALPN http/1.1──► server
//	     GET /api/v1/node/tunnel, Upgrade: kura-node/1
//	     ◄── 101 Switching Protocols
//	then, on that connection: the server is the HTTP/2 client, the node
//	serves the changer protocol (Libraries.Handler); pings every 5 s.
//
// A broken tunnel ends the node's session: every drive it leased is
// released and every tape file it had open is aborted (no filemark, so
// it is incomplete and the next append truncates it), and the node dials
// again with backoff. A refused tunnel (401, 403: revoked, unknown, not a
// node) stops the node.
//
// # The changer protocol
//
// A library of a node is a library.Changer in the server (Remote), whose
// every method is one call to the node; its drives and devices are handles
// the node keeps for the session. So the engine runs backup, restore,
// verify, copy, tape listing and erase on a node's library unchanged.
//
//	GET  /libraries                      the node's libraries
//	POST /libraries                      create a library (folder, S3, tape)
//	GET  /libraries/{lib}[/status|/tapes|/drives]
//	POST /libraries/{lib}/add?n=N        add blank tapes
//	DELETE /libraries/{lib}              remove it and its tapes
//	POST /libraries/{lib}/drives/{n}     drive settings
//	POST /libraries/{lib}/tapes/{bc}/{export|import|full|erase|open}
//	POST /libraries/{lib}/acquire?drive=N        → a drive handle
//	POST /drives/{h}/{load|loadwritable|unload|release}
//	GET  /devices/{d}[/files]            label, used, tape files
//	POST /devices/{d}/close
//	POST /devices/{d}/append?tag=T       body: the tape file, streamed
//	GET  /devices/{d}/files/{n}?offset=O the tape file from O, streamed
//	POST /devices/{d}/span               a span session for an agent's backup
//	GET  /spans/{t}/events               its progress, then its result
//	POST /spans/{t}/{close|cancel}
//	POST /libraries/{lib}/read           a read ticket for an agent's restore
//	POST /reads/{t}/cancel
//	POST /agents/{name}/cancel           a revoked client: all its tickets die
//
// Errors are JSON with the codes of the library and tape sentinels they
// wrap (wire.go), so errors.Is sees ErrDriveBusy, ErrEndOfMedia or a
// *tape.CorruptError on the server as it would for a library of its own.
//
// An append answers its headers first — the bytes left before early
// warning and before the end of the tape, so the span writer cuts parts
// exactly as on a local tape — and then reads the body. The file is
// finished (filemark) only when the body ends with the Kura-Written
// trailer naming every byte sent; a body that ends without it, or breaks,
// aborts the file. A read is one streamed answer from an offset, every
// block's CRC checked by the node as it leaves the tape; a failure after
// the headers is sent as the Kura-Error trailer, so the server tells a
// corrupt block from a clean end.
//
// Invariants: the catalog stays with the server (the node keeps only its
// libraries' folders); a tape file is complete on the node exactly when
// its filemark is; a session's end frees everything it held on the node.
package node
