package catalog

// migrations is the catalog schema, one entry per version. Entries are only
// ever appended: a released migration is never edited or removed, because
// catalogs in the field have already run it.
//
// The statements are written once, in the subset of SQL that SQLite and
// PostgreSQL share; dialect.ddl puts in each database's words: {autoid} is
// an integer key whose IDs are never reused (SQLite's AUTOINCREMENT, an
// identity column on PostgreSQL), {rowid} an integer key the database
// numbers; INTEGER is 64 bits on both.
//
// Conventions: times are INTEGER UTC Unix nanoseconds, NULL for "not set";
// lists are JSON text, except the tape parts of a saveset, which are rows of
// saveset_parts so that "savesets on tape X" is an indexed query.
var migrations = [][]string{
	// 1: initial schema.
	{
		`CREATE TABLE libraries (
			name    TEXT PRIMARY KEY,
			dir     TEXT NOT NULL,
			created INTEGER
		)`,
		`CREATE TABLE tapes (
			barcode TEXT PRIMARY KEY,
			library TEXT NOT NULL REFERENCES libraries (name)
		)`,
		`CREATE INDEX tapes_library ON tapes (library)`,
		`CREATE TABLE selections (
			client   TEXT NOT NULL,
			name     TEXT NOT NULL,
			paths    TEXT NOT NULL,
			excludes TEXT NOT NULL,
			created  INTEGER,
			PRIMARY KEY (client, name)
		)`,
		`CREATE TABLE savesets (
			id            {autoid},
			job_id        INTEGER NOT NULL,
			client        TEXT NOT NULL,
			selection     TEXT NOT NULL,
			level         TEXT NOT NULL,
			base_id       INTEGER NOT NULL,
			status        TEXT NOT NULL,
			created       INTEGER,
			finished      INTEGER,
			paths         TEXT NOT NULL,
			label         TEXT NOT NULL,
			files         INTEGER NOT NULL,
			source_bytes  INTEGER NOT NULL,
			media_bytes   INTEGER NOT NULL,
			codec         TEXT NOT NULL,
			library       TEXT NOT NULL,
			index_bytes   INTEGER NOT NULL,
			index_entries INTEGER NOT NULL,
			expired       INTEGER NOT NULL
		)`,
		`CREATE INDEX savesets_client_selection ON savesets (client, selection, created)`,
		`CREATE INDEX savesets_status ON savesets (status)`,
		`CREATE TABLE saveset_parts (
			saveset_id INTEGER NOT NULL REFERENCES savesets (id) ON DELETE CASCADE,
			kind       TEXT NOT NULL,
			seq        INTEGER NOT NULL,
			barcode    TEXT NOT NULL,
			file       INTEGER NOT NULL,
			bytes      INTEGER NOT NULL,
			PRIMARY KEY (saveset_id, kind, seq)
		)`,
		`CREATE INDEX saveset_parts_barcode ON saveset_parts (barcode)`,
		`CREATE TABLE jobs (
			id            {autoid},
			kind          TEXT NOT NULL,
			state         TEXT NOT NULL,
			client        TEXT NOT NULL,
			selection     TEXT NOT NULL,
			saveset_id    INTEGER NOT NULL,
			level         TEXT NOT NULL,
			started       INTEGER,
			finished      INTEGER,
			files         INTEGER NOT NULL,
			source_bytes  INTEGER NOT NULL,
			media_bytes   INTEGER NOT NULL,
			avg_rate      REAL NOT NULL,
			peak_rate     REAL NOT NULL,
			tapes         TEXT NOT NULL,
			phases        TEXT NOT NULL,
			warnings      TEXT NOT NULL,
			warning_count INTEGER NOT NULL,
			error         TEXT NOT NULL,
			log           TEXT NOT NULL
		)`,
		`CREATE INDEX jobs_state ON jobs (state)`,
	},
	// 2: the lock that tells a running job from one whose process died.
	{
		`ALTER TABLE jobs ADD COLUMN owner TEXT NOT NULL DEFAULT ''`,
	},
	// 3: server and agents: enrolled clients, enrollment tokens, and what the
	// server's job queue needs (the job order, why a job waits, streams).
	{
		`CREATE TABLE clients (
			name             TEXT PRIMARY KEY,
			cert_serial      TEXT NOT NULL,
			cert_fingerprint TEXT NOT NULL,
			enrolled         INTEGER,
			revoked          INTEGER,
			last_seen        INTEGER,
			address          TEXT NOT NULL,
			bwlimit          INTEGER NOT NULL
		)`,
		`CREATE TABLE tokens (
			id      {rowid},
			hash    TEXT NOT NULL UNIQUE,
			kind    TEXT NOT NULL,
			name    TEXT NOT NULL,
			created INTEGER,
			expires INTEGER,
			used    INTEGER,
			used_by TEXT NOT NULL
		)`,
		`ALTER TABLE jobs ADD COLUMN request TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE jobs ADD COLUMN reason TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE jobs ADD COLUMN parent_id INTEGER NOT NULL DEFAULT 0`,
		`CREATE INDEX jobs_parent ON jobs (parent_id)`,
	},
	// 4: policies, retention and the life of a tape: which policy made a
	// saveset and why it expired, tape pools, second copies of savesets.
	{
		`CREATE TABLE policies (
			name             TEXT PRIMARY KEY,
			client           TEXT NOT NULL,
			selection        TEXT NOT NULL,
			full_cron        TEXT NOT NULL,
			diff_cron        TEXT NOT NULL,
			incr_cron        TEXT NOT NULL,
			zone             TEXT NOT NULL,
			keep_generations INTEGER NOT NULL,
			keep_days        INTEGER NOT NULL,
			library          TEXT NOT NULL,
			pool             TEXT NOT NULL,
			verify           INTEGER NOT NULL,
			bwlimit          INTEGER NOT NULL,
			compress         TEXT NOT NULL,
			copy_to          TEXT NOT NULL,
			created          INTEGER,
			last_run         INTEGER,
			last_slot        INTEGER
		)`,
		`ALTER TABLE savesets ADD COLUMN policy TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE savesets ADD COLUMN expire_reason TEXT NOT NULL DEFAULT ''`,
		`CREATE INDEX savesets_policy ON savesets (policy)`,
		`ALTER TABLE tapes ADD COLUMN pool TEXT NOT NULL DEFAULT ''`,
		`CREATE TABLE saveset_copies (
			saveset_id INTEGER NOT NULL REFERENCES savesets (id) ON DELETE CASCADE,
			copy       INTEGER NOT NULL,
			library    TEXT NOT NULL,
			created    INTEGER,
			PRIMARY KEY (saveset_id, copy)
		)`,
		`CREATE TABLE settings (
			name  TEXT PRIMARY KEY,
			value TEXT NOT NULL
		)`,
	},
	// 5: leases (issue 11): who runs a job and who holds a drive, with a
	// heartbeat, so that every process on the catalog knows what is running
	// and a job whose holder died can be reclaimed once its lease expires.
	{
		`CREATE TABLE job_leases (
			job_id     INTEGER PRIMARY KEY REFERENCES jobs (id),
			holder     TEXT NOT NULL,
			acquired   INTEGER NOT NULL,
			heartbeat  INTEGER NOT NULL,
			expires_at INTEGER NOT NULL
		)`,
		`CREATE INDEX job_leases_expires ON job_leases (expires_at)`,
		`CREATE TABLE drive_leases (
			library    TEXT NOT NULL,
			drive      INTEGER NOT NULL,
			holder     TEXT NOT NULL,
			job_id     INTEGER NOT NULL,
			acquired   INTEGER NOT NULL,
			heartbeat  INTEGER NOT NULL,
			expires_at INTEGER NOT NULL,
			PRIMARY KEY (library, drive)
		)`,
		`CREATE INDEX drive_leases_job ON drive_leases (job_id)`,
	},
	// 6: a job's result (issue 11): what a verify, copy, prune, catalog
	// backup, tape scan or tape erase found or did, so that a job the
	// server ran prints as it does when run locally.
	{
		`ALTER TABLE jobs ADD COLUMN result TEXT NOT NULL DEFAULT ''`,
	},
	// 7: the kind of a job's error (issue 11): the API's code and field of
	// what went wrong, so that a client shown a job's error can say what to
	// run next as it does for an error it is answered with.
	{
		`ALTER TABLE jobs ADD COLUMN error_code TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE jobs ADD COLUMN error_field TEXT NOT NULL DEFAULT ''`,
	},
	// 8: the leader lease (issue 14): which of the servers sharing a
	// catalog runs the job queue and the scheduler.
	{
		`CREATE TABLE server_leases (
			name       TEXT PRIMARY KEY,
			holder     TEXT NOT NULL,
			acquired   INTEGER NOT NULL,
			heartbeat  INTEGER NOT NULL,
			expires_at INTEGER NOT NULL
		)`,
	},
	// 9: encryption at rest (issue 17): whether a client's agent encrypts
	// its backups, and how a saveset is encrypted ('' none, 'age').
	{
		`ALTER TABLE clients ADD COLUMN encrypt INTEGER NOT NULL DEFAULT 0`,
		`ALTER TABLE savesets ADD COLUMN encryption TEXT NOT NULL DEFAULT ''`,
	},
	// 10: the commands and plug-ins of a selection set (issue 16), as a
	// JSON list ("" for none: a set of paths).
	{
		`ALTER TABLE selections ADD COLUMN sources TEXT NOT NULL DEFAULT ''`,
	},
	// 11: encryption as a policy option (issue 17): the policy's backups
	// are encrypted by the client's agent even if the client is not set to.
	{
		`ALTER TABLE policies ADD COLUMN encrypt INTEGER NOT NULL DEFAULT 0`,
	},
	// 12: storage nodes (issue 14): an enrolled machine is an agent or a
	// storage node ('agent', 'node'), and a library may live on a node
	// (libraries.node, '' for one of the server's own).
	{
		`ALTER TABLE clients ADD COLUMN kind TEXT NOT NULL DEFAULT 'agent'`,
		`ALTER TABLE libraries ADD COLUMN node TEXT NOT NULL DEFAULT ''`,
	},
	// 13: the WAL spools of the agents (issue 16): what each agent last
	// reported of each PostgreSQL cluster's spool, so that the server's
	// alarm survives a restart and shows on every server of the catalog.
	{
		`CREATE TABLE wal_spools (
			client           TEXT NOT NULL,
			cluster          TEXT NOT NULL,
			files            INTEGER NOT NULL,
			oldest           TEXT NOT NULL,
			oldest_since     INTEGER,
			last_archived    TEXT NOT NULL,
			last_archived_at INTEGER,
			last_error       TEXT NOT NULL,
			last_error_at    INTEGER,
			reported         INTEGER NOT NULL,
			PRIMARY KEY (client, cluster)
		)`,
	},
	// 14: the web console's sessions, so that a sign-in
	// outlives a restart of the server and moves to a standby that takes
	// over. hash is the SHA-256 of the session ID in the browser's cookie,
	// never the ID; stamp fingerprints the credential signed in with (a
	// user's password hash, the admin token), so a session ends when that
	// credential is removed or replaced.
	{
		`CREATE TABLE console_sessions (
			hash      TEXT PRIMARY KEY,
			username  TEXT NOT NULL,
			role      TEXT NOT NULL,
			stamp     TEXT NOT NULL,
			created   INTEGER NOT NULL,
			last_used INTEGER NOT NULL,
			expires   INTEGER NOT NULL
		)`,
		`CREATE INDEX console_sessions_expires ON console_sessions (expires)`,
	},
}
