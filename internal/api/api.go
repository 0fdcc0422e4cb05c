// Package api holds the wire types of Kura's HTTPS API (/api/v1), shared by
// the server's handlers, the typed client and the agent. docs/api.md
// documents every endpoint with these types.
//
// Stability: fields are only added, never renamed or removed; a client
// ignores fields it does not know. Errors come as an Error body with a
// stable Code.
//
// The types here are plain wire types with their own JSON names: the
// package imports nothing of the catalog, the engine, the index or the
// monitor, so a change there cannot change the protocol by accident. The
// server converts its records to these (internal/server/convert.go).
package api

import (
	"encoding/json"
	"net/http"
	"time"
)

// Prefix is the path every endpoint lives under.
const Prefix = "/api/v1"

// Error codes: stable strings a client can act on.
const (
	CodeBadRequest   = "bad_request"   // malformed or invalid input
	CodeUnauthorized = "unauthorized"  // no or wrong credentials
	CodeForbidden    = "forbidden"     // valid credentials, not allowed (a revoked agent, another client's data)
	CodeNotFound     = "not_found"     // no such job, client, saveset
	CodeConflict     = "conflict"      // exists already, or in the wrong state
	CodeTokenUsed    = "token_used"    // an enrollment token that was used already
	CodeTokenExpired = "token_expired" // an enrollment token past its expiry
	CodeInternal     = "internal"      // the server failed; see its log
	CodeStreamFailed = "stream_failed" // a data stream from an agent broke off or was refused
	CodeVerifyFailed = "verify_failed" // a verify found problems (the code of a job's error)
	CodeCorrupt      = "corrupt"       // data read from media is damaged (a block's checksum failed)
)

// Exit codes of the kura CLI that an error code maps to (cmd/kura/main.go
// has the full list).
const (
	ExitFailure = 1 // the command failed
	ExitUsage   = 2 // the command was wrong: bad input, or a name that names nothing
	ExitVerify  = 4 // a verify found problems
)

// CodeInfo is what an error code means to HTTP and to the CLI.
type CodeInfo struct {
	Status int // the HTTP status the server answers with
	Exit   int // the kura CLI's exit code
}

// Codes is the one table of error codes: the server answers each with
// its Status, the CLI exits with its Exit. A code is never renamed or
// removed; docs/api.md lists them.
var Codes = map[string]CodeInfo{
	CodeBadRequest:   {http.StatusBadRequest, ExitUsage},
	CodeNotFound:     {http.StatusNotFound, ExitUsage},
	CodeUnauthorized: {http.StatusUnauthorized, ExitFailure},
	CodeForbidden:    {http.StatusForbidden, ExitFailure},
	CodeConflict:     {http.StatusConflict, ExitFailure},
	CodeTokenUsed:    {http.StatusUnauthorized, ExitFailure},
	CodeTokenExpired: {http.StatusUnauthorized, ExitFailure},
	CodeInternal:     {http.StatusInternalServerError, ExitFailure},
	CodeStreamFailed: {http.StatusBadGateway, ExitFailure},
	CodeVerifyFailed: {http.StatusUnprocessableEntity, ExitVerify},
}

// HTTPStatus returns the HTTP status of an error code (500 for a code
// not in Codes).
func HTTPStatus(code string) int {
	if c, ok := Codes[code]; ok {
		return c.Status
	}
	return http.StatusInternalServerError
}

// ExitCode returns the CLI exit code of an error code (1, failure, for a
// code not in Codes: a newer server's code is never taken for a usage
// error).
func ExitCode(code string) int {
	if c, ok := Codes[code]; ok {
		return c.Exit
	}
	return ExitFailure
}

// Error is the body of every non-2xx answer. Field names the request
// field at fault by its JSON name, when the request failed validation; for
// not_found it names what was not found ("saveset", "library", "tape",
// "drive", "selection", "policy", "client", "job", "copy"), so that a
// client can say where to look; for conflict it names, when it is one of
// the Field* states below, what the user can set right.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`

	cause error // the error it was made from, in process (never sent)
}

// The states a conflict names in its Field when a client can say what to
// do about them.
const (
	FieldUnregisteredLibrary = "unregistered_library" // the home's library folder is not in the catalog
	FieldNoTape              = "no_tape"              // no writable tape in the library
	FieldNoPoolTape          = "no_pool_tape"         // no writable tape the pool accepts
	FieldTapesOffline        = "tapes_offline"        // the tapes needed are exported
	FieldNotComplete         = "not_complete"         // the saveset named is not complete
	FieldObjectStore         = "object_store"         // the object store refused: credentials, bucket or access
)

func (e *Error) Error() string { return e.Message }

// Unwrap is the error an Error was made from in this process (nil for
// one read from the wire).
func (e *Error) Unwrap() error { return e.cause }

// Wrap makes an Error of code from err, keeping err for errors.Is.
func Wrap(code, field string, err error) *Error {
	return &Error{Code: code, Message: err.Error(), Field: field, cause: err}
}

// ServerInfo answers GET /api/v1/server.
type ServerInfo struct {
	Name          string    `json:"name"`
	Version       string    `json:"version"`
	CAFingerprint string    `json:"ca_fingerprint"`
	Started       time.Time `json:"started"`
	Drives        int       `json:"drives"`
	// Goroutines is the server's goroutine count now (what a benchmark
	// of many agents watches, with its RSS and open files).
	Goroutines int `json:"goroutines"`
}

// TokenRequest asks for a one-time enrollment token (POST /api/v1/tokens).
type TokenRequest struct {
	Name           string  `json:"name,omitempty"` // the client name it may enroll ("" = any)
	ExpiresSeconds float64 `json:"expires_seconds,omitempty"`
	// Node: the token enrolls a storage node (kura node enroll), not an
	// agent.
	Node bool `json:"node,omitempty"`
}

// TokenResponse carries the token text once; the server keeps only its hash.
type TokenResponse struct {
	Token   string    `json:"token"`
	Expires time.Time `json:"expires"`
}

// EnrollRequest is an agent's first call (POST /api/v1/enroll).
type EnrollRequest struct {
	Token string `json:"token"`
	Name  string `json:"name"`
	CSR   []byte `json:"csr"` // DER
	// Kind is what enrolls: "agent" (or "") or "node"; it must be what
	// the token was made for.
	Kind string `json:"kind,omitempty"`
	// DataHosts (a node only) are the names and addresses of the node's
	// data port: its certificate is then also a server certificate for
	// them, and agents send their backups there.
	DataHosts []string `json:"data_hosts,omitempty"`
}

// Kinds of machines that enroll.
const (
	EnrollAgent = "agent"
	EnrollNode  = "node"
)

// Node is an enrolled storage node as the admin sees it: a machine that
// owns libraries and keeps their tapes, connected to the server through the
// tunnel it dials.
type Node struct {
	Name            string    `json:"name"`
	CertSerial      string    `json:"cert_serial"`
	CertFingerprint string    `json:"cert_fingerprint"`
	Enrolled        time.Time `json:"enrolled"`
	Revoked         time.Time `json:"revoked"` // zero while the node is active
	LastSeen        time.Time `json:"last_seen"`
	Address         string    `json:"address"`   // remote address it last connected from
	Connected       bool      `json:"connected"` // its tunnel is up now
	Libraries       []string  `json:"libraries"` // the catalog's libraries that live on it
}

// EnrollResponse gives the agent its certificate and the server's CA.
type EnrollResponse struct {
	Name    string `json:"name"`
	CertPEM string `json:"cert_pem"`
	CAPEM   string `json:"ca_pem"`
}

// Client is an enrolled agent as the admin sees it.
type Client struct {
	Name            string    `json:"name"`
	CertSerial      string    `json:"cert_serial"`
	CertFingerprint string    `json:"cert_fingerprint"` // hex SHA-256 of the certificate DER, lower case
	Enrolled        time.Time `json:"enrolled"`
	Revoked         time.Time `json:"revoked"` // zero while the client is active
	LastSeen        time.Time `json:"last_seen"`
	Address         string    `json:"address"` // remote address it last connected from
	BWLimit         int64     `json:"bwlimit"` // default bytes/s for its jobs; 0 = no limit
	Encrypt         bool      `json:"encrypt"` // its agent encrypts its backups (age)
	Connected       bool      `json:"connected"`
	Kind            string    `json:"kind"` // "agent" (storage nodes are listed by GET /nodes)
	// WALSpools: what its agent last reported of the WAL spools of the
	// PostgreSQL clusters it archives (kura wal archive); none for a
	// client that archives no WAL.
	WALSpools []WALSpool `json:"wal_spools,omitempty"`
}

// WALSpool is one PostgreSQL cluster's WAL spool on an agent, as the agent
// last reported it; the times are the server's.
type WALSpool struct {
	Cluster        string    `json:"cluster"`
	Files          int       `json:"files"`            // WAL files waiting for the server
	Oldest         string    `json:"oldest,omitempty"` // the oldest of them
	OldestSince    time.Time `json:"oldest_since"`     // when it was spooled; zero when none waits
	LastArchived   string    `json:"last_archived,omitempty"`
	LastArchivedAt time.Time `json:"last_archived_at"`     // zero when none was sent yet
	LastError      string    `json:"last_error,omitempty"` // why the last send failed, until one succeeds
	LastErrorAt    time.Time `json:"last_error_at"`
	Reported       time.Time `json:"reported"` // when the agent reported this
}

// WALBehindAfter is how long the oldest spooled WAL file may wait before
// the spool counts as falling behind (kura wal spool --warn-after, kura
// client list and show): fifteen of the agent's one-minute send periods,
// and kura wal spool's default.
const WALBehindAfter = 15 * time.Minute

// Behind reports whether the spool's oldest file has waited longer than
// after at now.
func (s WALSpool) Behind(now time.Time, after time.Duration) bool {
	return s.Files > 0 && !s.OldestSince.IsZero() && now.Sub(s.OldestSince) > after
}

// ClientUpdate changes a client's settings (PATCH /api/v1/clients/NAME).
type ClientUpdate struct {
	BWLimit *int64 `json:"bwlimit,omitempty"` // bytes/s, 0 = none
	Encrypt *bool  `json:"encrypt,omitempty"` // its new backups encrypted on its agent, or not
}

// Job kinds a client can submit. The names are the catalog's, so a job
// reads the same in the jobs list whoever started it.
const (
	KindBackup  = "backup"
	KindRestore = "restore"
	KindVerify  = "verify"  // check a saveset (or one of its copies): saveset, level, copy
	KindCopy    = "copy"    // copy a saveset to another library: saveset, library, drive, verify
	KindPrune   = "prune"   // apply retention (a dry run is not a job)
	KindCatalog = "catalog" // back up the catalog to a tape: library, drive
	KindScan    = "scan"    // rebuild catalog records from a tape: barcode, drive
	KindErase   = "erase"   // erase a tape: barcode, force, drive
)

// JobRequest submits a job (POST /api/v1/jobs). It is stored with the
// job, so a queued job survives a server restart.
type JobRequest struct {
	Kind   string `json:"kind"`
	Client string `json:"client"` // whose data: the agent that backs up, or the owner of the saveset restored

	// backup
	Paths     []string `json:"paths,omitempty"`
	Selection string   `json:"selection,omitempty"`
	Excludes  []string `json:"excludes,omitempty"`
	Level     string   `json:"level,omitempty"`
	Compress  string   `json:"compress,omitempty"`
	Library   string   `json:"library,omitempty"`
	Drive     int      `json:"drive,omitempty"`
	Verify    bool     `json:"verify,omitempty"`
	Label     string   `json:"label,omitempty"`
	FrameSize int      `json:"frame_size,omitempty"`
	BWLimit   int64    `json:"bwlimit,omitempty"` // bytes/s; 0 = the client's default
	Streams   int      `json:"streams,omitempty"` // split over this many drives, at most MaxStreams
	Stream    int      `json:"stream,omitempty"`  // which stream this job is (1-based; set by the server)
	Policy    string   `json:"policy,omitempty"`  // the policy this backup runs for (set by the scheduler or policy run)
	Pool      string   `json:"pool,omitempty"`    // its tape pool
	// Sources are commands and plug-ins the agent runs, storing their
	// output instead of files (instead of paths; the agent must allow
	// them: kura agent run --allow-commands / --allow-plugin).
	Sources  []Source `json:"sources,omitempty"`
	PartSize int      `json:"part_size,omitempty"` // bytes of a command's output per stored part; 0 = 16 MiB

	// restore
	Saveset  int64     `json:"saveset,omitempty"`
	Latest   bool      `json:"latest,omitempty"`
	At       time.Time `json:"at,omitempty"`
	To       string    `json:"to,omitempty"`        // restore into this folder on the client, or:
	InPlace  bool      `json:"in_place,omitempty"`  // restore to the original places (exactly one of to and in_place)
	ToClient string    `json:"to_client,omitempty"` // restore onto another client's machine
	Includes []string  `json:"includes,omitempty"`  // paths or globs (also matched against base names)
	// RestorePaths are exact paths in the saveset (/srv/a* is the file
	// named a*), a folder with everything below it; beside includes, a
	// path is restored when either selects it. Both empty: everything.
	RestorePaths []string `json:"restore_paths,omitempty"`
	Overwrite    string   `json:"overwrite,omitempty"`
	Sync         bool     `json:"sync,omitempty"`
	// Instead of to or in_place: pipe the saveset's one file into a
	// command on the client, or restore a PostgreSQL dump into a new
	// database there (jobs: pg_restore jobs).
	ToCommand string `json:"to_command,omitempty"`
	ToDB      string `json:"to_db,omitempty"`
	Jobs      int    `json:"jobs,omitempty"`
	ToCluster string `json:"to_cluster,omitempty"` // a new folder on the client for a PostgreSQL base backup
	// With to_cluster: recover from this WAL archive (the client's own,
	// kura wal archive on its agent) to at, or to its end; the agent
	// writes restore_command, its own kura wal get unless
	// wal_restore_command is given (which needs --allow-commands there).
	WAL               string `json:"wal,omitempty"`
	WALRestoreCommand string `json:"wal_restore_command,omitempty"`

	// verify (saveset; level media or data), copy (saveset; library is
	// the library copied to), catalog (library), scan and erase
	Copy    int     `json:"copy,omitempty"`    // verify: this copy of the saveset instead of its own tapes
	Sample  float64 `json:"sample,omitempty"`  // verify: percent of the files to check
	Barcode string  `json:"barcode,omitempty"` // scan, erase: the tape
	Force   bool    `json:"force,omitempty"`   // erase: even with unexpired savesets on it (they are expired)
}

// PolicyRun asks for a run of a policy now (POST /api/v1/policies/NAME/run).
type PolicyRun struct {
	Level string `json:"level"` // full (default), diff, incr or scheduled
}

// LevelScheduled asks a policy run for the level of the policy's next
// scheduled run (full for a policy without schedules): the run started
// now stands in for that one, as the scheduler would start it.
const LevelScheduled = "scheduled"

// JobsSubmitted answers a submission: one job, or one per stream.
type JobsSubmitted struct {
	Jobs []int64 `json:"jobs"`
}

// Job is a job record with its figures (GET /api/v1/jobs/ID).
type Job struct {
	ID           int64           `json:"id"`
	Kind         string          `json:"kind"`  // backup, restore, verify, copy, scan, ...
	State        string          `json:"state"` // queued, running, ...
	Client       string          `json:"client"`
	Selection    string          `json:"selection"`
	SavesetID    int64           `json:"saveset_id"`
	Level        string          `json:"level"`
	Started      time.Time       `json:"started"`
	Finished     time.Time       `json:"finished"`
	Files        int64           `json:"files"`
	SourceBytes  int64           `json:"source_bytes"`
	MediaBytes   int64           `json:"media_bytes"`
	AvgRate      float64         `json:"avg_rate"`  // bytes/s
	PeakRate     float64         `json:"peak_rate"` // bytes/s
	Tapes        []string        `json:"tapes"`
	Phases       []Phase         `json:"phases"`
	Warnings     []string        `json:"warnings"` // the first ones
	WarningCount int64           `json:"warning_count"`
	Error        string          `json:"error"`
	Log          []string        `json:"log"` // the last lines
	Owner        string          `json:"owner,omitempty"`
	Request      json.RawMessage `json:"request,omitempty"` // the JobRequest it was submitted with
	Reason       string          `json:"reason,omitempty"`  // why a queued or waiting job has not started
	ParentID     int64           `json:"parent_id,omitempty"`
	Figures      Figures         `json:"figures"`
	// Result is what an ended verify, copy, prune, catalog backup, scan
	// or erase found or did, as JSON of its kind (docs/api.md).
	Result json.RawMessage `json:"result,omitempty"`
	// ErrorCode and ErrorField classify Error as an Error body would (a
	// code of Codes and its field), so that a client can say what to run
	// next; left out when the job has no error or nothing classified it.
	ErrorCode  string `json:"error_code,omitempty"`
	ErrorField string `json:"error_field,omitempty"`
}

// Phase is one phase of a job (scan, backup, index, verify, ...).
type Phase struct {
	Name       string    `json:"name"`
	Start      time.Time `json:"start"`
	End        time.Time `json:"end"`
	Files      int64     `json:"files"`
	Bytes      int64     `json:"bytes"`
	MediaBytes int64     `json:"media_bytes"`
	AvgRate    float64   `json:"avg_rate"`  // bytes/s
	PeakRate   float64   `json:"peak_rate"` // highest 1-second rate, bytes/s
}

// Figures are a job's figures as the job monitor shows them.
type Figures struct {
	JobID            int64          `json:"job_id"`
	SavesetID        int64          `json:"saveset_id"`
	Level            string         `json:"level"`
	Files            int64          `json:"files"`
	SourceBytes      int64          `json:"source_bytes"`
	MediaBytes       int64          `json:"media_bytes"`
	AvgKBps          float64        `json:"avg_kbps"`
	PeakKBps         float64        `json:"peak_kbps"`
	ElapsedSeconds   float64        `json:"elapsed_seconds"`
	CompressionRatio string         `json:"compression_ratio"`
	Tapes            []string       `json:"tapes"`
	Warnings         int64          `json:"warnings"`
	Kind             string         `json:"kind"`
	Status           string         `json:"status"`
	Phases           []PhaseFigures `json:"phases"`
}

// PhaseFigures are the figures of one phase of a job.
type PhaseFigures struct {
	Name             string  `json:"name"`
	Files            int64   `json:"files"`
	SourceBytes      int64   `json:"source_bytes"`
	MediaBytes       int64   `json:"media_bytes"`
	AvgKBps          float64 `json:"avg_kbps"`
	PeakKBps         float64 `json:"peak_kbps"`
	ElapsedSeconds   float64 `json:"elapsed_seconds"`
	CompressionRatio string  `json:"compression_ratio"`
}

// Saveset is a saveset record as an agent restoring it sees it.
type Saveset struct {
	ID           int64     `json:"id"`
	JobID        int64     `json:"job_id"`
	Client       string    `json:"client"`
	Selection    string    `json:"selection"`
	Level        string    `json:"level"`
	BaseID       int64     `json:"base_id"`
	Status       string    `json:"status"`
	Created      time.Time `json:"created"`
	Finished     time.Time `json:"finished"`
	Paths        []string  `json:"paths"`
	Label        string    `json:"label"`
	Files        int64     `json:"files"`
	SourceBytes  int64     `json:"source_bytes"`
	MediaBytes   int64     `json:"media_bytes"`
	Codec        string    `json:"codec"`
	Library      string    `json:"library"`
	Parts        []Part    `json:"parts"`
	IndexPart    Part      `json:"index_part"`
	IndexBytes   int64     `json:"index_bytes"`
	IndexEntries int64     `json:"index_entries"`
	Expired      bool      `json:"expired"`
	Policy       string    `json:"policy,omitempty"`
	ExpireReason string    `json:"expire_reason,omitempty"`
	Copies       []Copy    `json:"copies,omitempty"`
	Encryption   string    `json:"encryption,omitempty"` // "" or "age": data and index encrypted by the client's agent
}

// Part is one tape file of a saveset.
type Part struct {
	Barcode string `json:"barcode"`
	File    int    `json:"file"`
	Bytes   int64  `json:"bytes"`
}

// Copy is a further copy of a saveset's tape files.
type Copy struct {
	Copy      int       `json:"copy"`
	Library   string    `json:"library"`
	Created   time.Time `json:"created"`
	Parts     []Part    `json:"parts"`
	IndexPart Part      `json:"index_part"`
}

// Order is a job order sent to an agent (GET /api/v1/agent/orders).
type Order struct {
	JobID     int64         `json:"job_id"`
	Kind      string        `json:"kind"` // backup or restore
	Backup    *BackupOrder  `json:"backup,omitempty"`
	Restore   *RestoreOrder `json:"restore,omitempty"`
	Issued    time.Time     `json:"issued"`
	IdleLimit float64       `json:"idle_limit_seconds"` // the server gives up after this much silence
}

// BackupOrder tells an agent what to read and how to send it.
type BackupOrder struct {
	Paths     []string `json:"paths"`
	Excludes  []string `json:"excludes,omitempty"`
	Compress  string   `json:"compress"`
	FrameSize int      `json:"frame_size"`
	BaseID    int64    `json:"base_id,omitempty"` // the base saveset of an incr/diff: fetch its index
	BWLimit   int64    `json:"bwlimit,omitempty"` // bytes/s
	Stream    int      `json:"stream,omitempty"`  // 1-based stream of Streams
	Streams   int      `json:"streams,omitempty"`
	// Encrypt: the agent encrypts the stream and the index (age, after
	// compression) to its own key and to Recipients (the server's recovery
	// recipients), and starts the stream with Label (the saveset label,
	// inside the encryption).
	Encrypt    bool     `json:"encrypt,omitempty"`
	Recipients []string `json:"recipients,omitempty"`
	Label      []byte   `json:"label,omitempty"`
	Sources    []Source `json:"sources,omitempty"` // instead of paths: commands and plug-ins
	PartSize   int      `json:"part_size,omitempty"`
	// DataURL and Ticket: send the stream to this storage node's data
	// port (POST DataURL/api/v1/span/Ticket, the agent's certificate),
	// not to the server; the answer is the same BackupClose.
	DataURL string `json:"data_url,omitempty"`
	Ticket  string `json:"ticket,omitempty"`
}

// Source is a command or plug-in a backup stores the output of (JSON as
// plugin.Source): kind "command" with command and name, or a plug-in
// ("postgresql") with databases or all_databases.
type Source struct {
	Kind         string   `json:"kind"`
	Command      string   `json:"command,omitempty"`
	Name         string   `json:"name,omitempty"`
	Databases    []string `json:"databases,omitempty"`
	AllDatabases bool     `json:"all_databases,omitempty"`
}

// RestoreOrder tells an agent what to restore where.
type RestoreOrder struct {
	Saveset   Saveset  `json:"saveset"`
	To        string   `json:"to"`
	InPlace   bool     `json:"in_place,omitempty"` // To is empty: write over the original places
	Includes  []string `json:"includes,omitempty"`
	Paths     []string `json:"paths,omitempty"` // exact paths in the saveset, taken literally (no globs)
	Overwrite string   `json:"overwrite,omitempty"`
	Sync      bool     `json:"sync,omitempty"`
	Total     int64    `json:"total"`
	BWLimit   int64    `json:"bwlimit,omitempty"`
	ToCommand string   `json:"to_command,omitempty"` // instead of to: a command on the client
	ToDB      string   `json:"to_db,omitempty"`      // instead of to: a new PostgreSQL database
	Jobs      int      `json:"jobs,omitempty"`
	ToCluster string   `json:"to_cluster,omitempty"` // instead of to: a new folder for a PostgreSQL cluster
	// With to_cluster: the WAL archive to recover from, the moment to
	// recover to (RFC 3339; empty: its end) and the restore_command
	// (empty: the agent's own kura wal get).
	WAL               string `json:"wal,omitempty"`
	WALAt             string `json:"wal_at,omitempty"`
	WALRestoreCommand string `json:"wal_restore_command,omitempty"`
	// Tickets: some savesets may live on a storage node with a data port;
	// ask for a ReadTicket before each read of saveset data.
	Tickets bool `json:"tickets,omitempty"`
}

// ReadTicket answers an agent asking where to read saveset data from
// (POST /agent/jobs/{id}/savesets/{ss}/ticket?part=P&offset=O). With a
// DataURL the agent reads the data straight from that storage node's data
// port (GET DataURL/api/v1/read/Ticket, the agent's certificate; used
// once); without one it reads through the server, as always. A read that
// breaks after its headers ends with the TrailerError trailer.
type ReadTicket struct {
	DataURL string   `json:"data_url,omitempty"`
	Ticket  string   `json:"ticket,omitempty"`
	Node    string   `json:"node,omitempty"`
	Library string   `json:"library,omitempty"`
	Tapes   []string `json:"tapes,omitempty"`
}

// TrailerError is the trailer of a data stream from a storage node that
// broke after its headers: an Error as JSON (CodeCorrupt: damaged media).
const TrailerError = "Kura-Error"

// BackupEnd is the last message of a backup data stream.
type BackupEnd struct {
	Files   int64  `json:"files"`
	Entries int64  `json:"entries"`
	Host    string `json:"host"`
}

// BackupClose answers the data stream: the final frame table and saveset
// record, for the agent to close its index with.
type BackupClose struct {
	Frames []Frame `json:"frames"`
	Meta   []byte  `json:"meta"`
}

// Frame is one entry of a saveset's frame table. Its JSON names are the
// Go names (as they were when the table was sent as index.Frame).
type Frame struct {
	Offset     int64  `json:"Offset"`     // uncompressed start of the frame in the saveset stream
	Size       uint32 `json:"Size"`       // uncompressed bytes
	CSize      uint32 `json:"CSize"`      // compressed bytes on media
	Part       int32  `json:"Part"`       // which tape file holds the frame, from 0
	PartOffset int64  `json:"PartOffset"` // byte offset of the frame within that part
}

// Progress is a running job's figures from the agent.
type Progress struct {
	Files int64  `json:"files"`
	Bytes int64  `json:"bytes"`
	Path  string `json:"path,omitempty"`
}

// RestoreResult ends a restore on the agent.
type RestoreResult struct {
	Outcome RestoreOutcome `json:"outcome"`
	Error   string         `json:"error,omitempty"`
}

// RestoreOutcome is what the agent restored: figures, warnings and what it
// read.
type RestoreOutcome struct {
	To           string   `json:"to"`
	Phase        Phase    `json:"phase"`
	Files        int64    `json:"files"`
	Bytes        int64    `json:"bytes"`
	MediaBytes   int64    `json:"media_bytes"`
	Warnings     []string `json:"warnings"`
	WarningCount int64    `json:"warning_count"`
	Failed       int64    `json:"failed"`  // files lost to damaged media
	Skipped      int64    `json:"skipped"` // existing files kept by the overwrite policy
	Tapes        []string `json:"tapes"`
	Sources      []int64  `json:"sources"` // savesets read, the chosen one included
}

// WALArchive asks the server to store one WAL file from the calling
// agent's spool (POST /agent/wal, kura wal archive on an agent's machine):
// the server runs a backup job of that client, which reads the file from
// its spool, and answers with the job once it ended.
type WALArchive struct {
	Cluster string `json:"cluster"` // the WAL archive's name (kura wal archive --cluster)
	File    string `json:"file"`    // PostgreSQL's %f
}

// AgentBye is an agent's goodbye (POST /agent/bye), sent when kura agent
// run stops cleanly: the server then shows the client offline at once,
// instead of after the grace that covers the gap between two polls (a
// crash or a cut network still takes that grace). Run names the agent run
// that is ending, as its order polls named it (GET /agent/orders?run=RUN):
// a poll of that run reaching the server after the goodbye is refused and
// does not bring the client back online; a poll of a new run does.
type AgentBye struct {
	Run string `json:"run"`
}

// MaxAgentRunLen is the longest agent run name (AgentBye.Run, the run
// parameter of an order poll).
const MaxAgentRunLen = 64

// WALSpoolReport is an agent's report of its WAL spools (POST
// /agent/walspool), sent every minute by kura agent run and after each
// send of kura wal archive. Ages are in seconds by the agent's clock; the
// server turns them into times on its own.
type WALSpoolReport struct {
	Clusters []WALSpoolState `json:"clusters"`
}

// WALSpoolState is one cluster's spool in a WALSpoolReport.
type WALSpoolState struct {
	Cluster             string  `json:"cluster"`
	Files               int     `json:"files"`
	Oldest              string  `json:"oldest,omitempty"`
	OldestSeconds       float64 `json:"oldest_seconds"` // how long the oldest has waited
	LastArchived        string  `json:"last_archived,omitempty"`
	LastArchivedSeconds float64 `json:"last_archived_seconds"` // how long ago it was sent
	LastError           string  `json:"last_error,omitempty"`
	LastErrorSeconds    float64 `json:"last_error_seconds"`
}

// Limits of a WAL spool report.
const (
	MaxWALClusters  = 256  // clusters one agent reports
	MaxWALErrorLen  = 2048 // bytes of a last error
	maxWALNameBytes = 128
)
