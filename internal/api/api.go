// Package api holds the wire types of Kura's HTTPS API (/api/v1), shared by
// the server's handlers, the typed client and the agent. docs/api.md
// documents every endpoint with these types.
//
// Stability: fields are only added, never renamed or removed; a client
// ignores fields it does not know. Errors come as an Error body with a
// stable Code.
package api

import (
	"time"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/index"
	"github.com/kura-backup/kura/internal/monitor"
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
)

// Error is the body of every non-2xx answer.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Message }

// ServerInfo answers GET /api/v1/server.
type ServerInfo struct {
	Name          string    `json:"name"`
	Version       string    `json:"version"`
	CAFingerprint string    `json:"ca_fingerprint"`
	Started       time.Time `json:"started"`
	Drives        int       `json:"drives"`
}

// TokenRequest asks for a one-time enrollment token (POST /api/v1/tokens).
type TokenRequest struct {
	Name           string  `json:"name,omitempty"` // the client name it may enroll ("" = any)
	ExpiresSeconds float64 `json:"expires_seconds,omitempty"`
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
}

// EnrollResponse gives the agent its certificate and the server's CA.
type EnrollResponse struct {
	Name    string `json:"name"`
	CertPEM string `json:"cert_pem"`
	CAPEM   string `json:"ca_pem"`
}

// Client is an enrolled agent as the admin sees it.
type Client struct {
	catalog.Client
	Connected bool `json:"connected"`
}

// ClientUpdate changes a client's settings (PATCH /api/v1/clients/NAME).
type ClientUpdate struct {
	BWLimit *int64 `json:"bwlimit,omitempty"` // bytes/s, 0 = none
}

// Job kinds a client can submit.
const (
	KindBackup  = "backup"
	KindRestore = "restore"
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

	// restore
	Saveset   int64     `json:"saveset,omitempty"`
	Latest    bool      `json:"latest,omitempty"`
	At        time.Time `json:"at,omitempty"`
	To        string    `json:"to,omitempty"`        // restore into this folder on the client, or:
	InPlace   bool      `json:"in_place,omitempty"`  // restore to the original places (exactly one of to and in_place)
	ToClient  string    `json:"to_client,omitempty"` // restore onto another client's machine
	Includes  []string  `json:"includes,omitempty"`
	Overwrite string    `json:"overwrite,omitempty"`
	Sync      bool      `json:"sync,omitempty"`
}

// PolicyRun asks for a run of a policy now (POST /api/v1/policies/NAME/run).
type PolicyRun struct {
	Level string `json:"level"` // full (default), diff or incr
}

// JobsSubmitted answers a submission: one job, or one per stream.
type JobsSubmitted struct {
	Jobs []int64 `json:"jobs"`
}

// Job is a job record with its figures (GET /api/v1/jobs/ID).
type Job struct {
	catalog.Job
	Figures monitor.Figures `json:"figures"`
}

// ConsoleRequest runs an admin verb on the server (POST /api/v1/console),
// as `kura ARGS...` would there, with the given client.
type ConsoleRequest struct {
	Args   []string `json:"args"`
	Client string   `json:"client,omitempty"`
}

// ConsoleResponse is what the verb printed and its exit code.
type ConsoleResponse struct {
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	ExitCode int    `json:"exit_code"`
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
}

// RestoreOrder tells an agent what to restore where.
type RestoreOrder struct {
	Saveset   catalog.Saveset `json:"saveset"`
	To        string          `json:"to"`
	InPlace   bool            `json:"in_place,omitempty"` // To is empty: write over the original places
	Includes  []string        `json:"includes,omitempty"`
	Overwrite string          `json:"overwrite,omitempty"`
	Sync      bool            `json:"sync,omitempty"`
	Total     int64           `json:"total"`
	BWLimit   int64           `json:"bwlimit,omitempty"`
}

// BackupEnd is the last message of a backup data stream.
type BackupEnd struct {
	Files   int64  `json:"files"`
	Entries int64  `json:"entries"`
	Host    string `json:"host"`
}

// BackupClose answers the data stream: the final frame table and saveset
// record, for the agent to close its index with.
type BackupClose struct {
	Frames []index.Frame `json:"frames"`
	Meta   []byte        `json:"meta"`
}

// Progress is a running job's figures from the agent.
type Progress struct {
	Files int64  `json:"files"`
	Bytes int64  `json:"bytes"`
	Path  string `json:"path,omitempty"`
}

// RestoreResult ends a restore on the agent.
type RestoreResult struct {
	Outcome engine.RestoreOutcome `json:"outcome"`
	Error   string                `json:"error,omitempty"`
}
