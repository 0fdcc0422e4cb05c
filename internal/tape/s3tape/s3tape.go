package s3tape

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/kura-backup/kura/internal/tape"
	"github.com/kura-backup/kura/internal/units"
)

// Sentinel errors of the object store itself; tape failures use the tape
// package's sentinels (tape.ErrBlank, tape.ErrIncomplete, ...).
var (
	// ErrNoBucket: the bucket does not exist at the endpoint.
	ErrNoBucket = errors.New("bucket does not exist")
	// ErrAccessDenied: the server refused the credentials (wrong key or
	// secret, or no permission on the bucket).
	ErrAccessDenied = errors.New("access denied by the object store")
	// ErrNoCredentials: neither the environment nor a credentials file
	// gives an access key.
	ErrNoCredentials = errors.New("no object store credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_SHARED_CREDENTIALS_FILE (and AWS_PROFILE)")
	// ErrUnavailable: the store did not answer, or kept failing, after
	// the bounded retries.
	ErrUnavailable = errors.New("object store unavailable")

	// errTooBig: an object is longer than its record can be (damage).
	errTooBig = errors.New("object too long for its record")
)

// Defaults. The chunk size follows Bareos' S3 volumes (chunks of tens of
// MiB): big enough that a 64 GiB tape is ~1000 objects, small enough that a
// single-file restore fetches little more than it needs.
const (
	DefaultChunkSize = 64 << 20
	DefaultPartSize  = 8 << 20 // multipart part; S3 wants ≥ 5 MiB but for the last
	MinPartSize      = 5 << 20
	DefaultRetries   = 10
	DefaultLockLease = 10 * time.Minute
)

// Config says where tapes live and how to talk to the store. Credentials
// are never part of it: they come from the environment or a credentials
// file (Credentials is for tests and callers that built their own).
type Config struct {
	Endpoint string // host[:port]
	Insecure bool   // plain HTTP (a store on 127.0.0.1); default HTTPS
	Region   string // empty: the server's default
	Bucket   string
	Prefix   string // folder inside the bucket, no leading or trailing "/"

	// ChunkSize is the size of one chunk object of a tape file; it is
	// rounded down to a multiple of the tape file's block size (at least
	// one block). 0 means DefaultChunkSize.
	ChunkSize int64
	// PartSize is the multipart part size a chunk is uploaded in (the
	// writer's buffer memory); at least MinPartSize. 0 means
	// DefaultPartSize.
	PartSize int
	// Retries bounds the attempts of each request (minio-go backs off
	// 200 ms doubling, at most 1 s, with jitter, between them); 0 means
	// DefaultRetries.
	Retries int
	// LockLease is how long the writer lock holds without renewal; a
	// writer renews it as it uploads. 0 means DefaultLockLease.
	LockLease time.Duration
	// Owner names this writer in the lock object; it must be unique to
	// the process, since a lock of the same owner counts as this one's.
	// Empty means host, process id and a random part.
	Owner string

	// Credentials, when nil, come from AWS_ACCESS_KEY_ID /
	// AWS_SECRET_ACCESS_KEY, else from AWS_SHARED_CREDENTIALS_FILE
	// (default ~/.aws/credentials) and AWS_PROFILE.
	Credentials *credentials.Credentials
	// Transport carries the requests; nil means a transport with bounded
	// dial and response-header timeouts. Tests wrap it to count or fail
	// requests.
	Transport http.RoundTripper
	// Clock stamps labels, filemarks and the lock; nil means time.Now.
	Clock func() time.Time
}

// ParseURL reads a location written as http[s]://HOST[:PORT]/BUCKET[/PREFIX]
// (the form `kura vtl create --s3` takes). It carries no credentials: a
// URL with user information is refused, so a secret cannot end up in a
// command line or a log.
func ParseURL(s string) (Config, error) {
	u, err := url.Parse(s)
	if err != nil {
		return Config{}, fmt.Errorf("object store URL: %w", err)
	}
	if u.User != nil {
		return Config{}, fmt.Errorf("object store URL: credentials do not belong in the URL; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY or a credentials file")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return Config{}, fmt.Errorf("object store URL %q: want http:// or https://HOST/BUCKET[/PREFIX]", s)
	}
	bucket, prefix, _ := strings.Cut(strings.Trim(u.Path, "/"), "/")
	if u.Host == "" || bucket == "" {
		return Config{}, fmt.Errorf("object store URL %q: want %s://HOST/BUCKET[/PREFIX]", s, u.Scheme)
	}
	return Config{Endpoint: u.Host, Insecure: u.Scheme == "http", Bucket: bucket, Prefix: strings.Trim(prefix, "/")}, nil
}

// String describes the configuration for logs: never a credential.
func (c Config) String() string {
	scheme := "https"
	if c.Insecure {
		scheme = "http"
	}
	loc := scheme + "://" + c.Endpoint + "/" + c.Bucket
	if c.Prefix != "" {
		loc += "/" + c.Prefix
	}
	return fmt.Sprintf("%s chunk=%s part=%s", loc, units.FormatSize(c.chunkSize()), units.FormatSize(int64(c.partSize())))
}

func (c Config) chunkSize() int64 {
	if c.ChunkSize <= 0 {
		return DefaultChunkSize
	}
	return c.ChunkSize
}

func (c Config) partSize() int {
	if c.PartSize <= 0 {
		return DefaultPartSize
	}
	return c.PartSize
}

func (c Config) validate() error {
	switch {
	case c.Endpoint == "":
		return errors.New("object store: no endpoint")
	case c.Bucket == "":
		return errors.New("object store: no bucket")
	case c.PartSize != 0 && c.PartSize < MinPartSize:
		return fmt.Errorf("object store: part size %d: want at least %d", c.PartSize, MinPartSize)
	case c.ChunkSize < 0 || c.Retries < 0 || c.LockLease < 0:
		return errors.New("object store: negative chunk size, retries or lease")
	case strings.HasPrefix(c.Prefix, "/") || strings.HasSuffix(c.Prefix, "/"):
		return fmt.Errorf("object store: prefix %q: no leading or trailing /", c.Prefix)
	}
	return nil
}

// store is a connection to one bucket.
type store struct {
	cfg    Config
	core   *minio.Core
	clock  func() time.Time
	owner  string
	prefix string // cfg.Prefix + "/" or ""
	idle   func() // closes the idle connections of a transport of our own
}

func newTransport() *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 2 * time.Minute,
		ExpectContinueTimeout: time.Second,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
	}
}

// connect makes a client and checks the bucket: ErrNoCredentials,
// ErrAccessDenied, ErrNoBucket or ErrUnavailable, never with the secret.
func connect(cfg Config) (*store, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	creds := cfg.Credentials
	if creds == nil {
		creds = credentials.NewChainCredentials([]credentials.Provider{
			&credentials.EnvAWS{},
			&credentials.FileAWSCredentials{},
		})
	}
	v, err := creds.Get()
	if err != nil || v.AccessKeyID == "" || v.SecretAccessKey == "" {
		return nil, ErrNoCredentials
	}
	tr, idle := cfg.Transport, func() {}
	if tr == nil {
		own := newTransport()
		tr, idle = own, own.CloseIdleConnections
	}
	retries := cfg.Retries
	if retries == 0 {
		retries = DefaultRetries
	}
	core, err := minio.NewCore(cfg.Endpoint, &minio.Options{
		Creds:        creds,
		Secure:       !cfg.Insecure,
		Region:       cfg.Region,
		Transport:    tr,
		MaxRetries:   retries,
		BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		return nil, fmt.Errorf("object store %s: %w", cfg.Endpoint, err)
	}
	s := &store{cfg: cfg, core: core, clock: cfg.Clock, owner: cfg.Owner, idle: idle}
	if s.clock == nil {
		s.clock = time.Now
	}
	if s.owner == "" {
		s.owner = defaultOwner()
	}
	if cfg.Prefix != "" {
		s.prefix = cfg.Prefix + "/"
	}
	ok, err := core.BucketExists(context.Background(), cfg.Bucket)
	if err != nil {
		idle()
		return nil, s.wrap("bucket "+cfg.Bucket, err)
	}
	if !ok {
		idle()
		return nil, fmt.Errorf("object store %s: bucket %q: %w", s.where(), cfg.Bucket, ErrNoBucket)
	}
	return s, nil
}

func (s *store) where() string {
	scheme := "https"
	if s.cfg.Insecure {
		scheme = "http"
	}
	return scheme + "://" + s.cfg.Endpoint
}

// deniedCodes are the S3 error codes of a refused key, signature or
// session token (AWS, MinIO, versitygw).
var deniedCodes = map[string]bool{
	"AccessDenied": true, "InvalidAccessKeyId": true, "SignatureDoesNotMatch": true,
	"InvalidClientTokenId": true, "XAdminUserNotFound": true, "XMinioInvalidAccessKeyID": true,
	"InvalidToken": true, "ExpiredToken": true, "TokenRefreshRequired": true,
}

// wrap gives a store error its sentinel. The message of an S3 error names
// the request and the server's code, never the secret key (the signature
// is not part of it).
func (s *store) wrap(what string, err error) error {
	resp := minio.ToErrorResponse(err)
	detail := err.Error()
	if resp.Code != "" {
		detail = resp.Code + ": " + resp.Message
	}
	switch {
	case resp.Code == "NoSuchBucket":
		return fmt.Errorf("object store %s: %s: %w", s.where(), what, ErrNoBucket)
	case deniedCodes[resp.Code] || resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("object store %s: %s: %w (%s)", s.where(), what, ErrAccessDenied, detail)
	case resp.StatusCode >= 500 || resp.Code == "":
		return fmt.Errorf("object store %s: %s: %w (%s)", s.where(), what, ErrUnavailable, detail)
	}
	return fmt.Errorf("object store %s: %s: %s", s.where(), what, detail)
}

func isNotFound(err error) bool {
	r := minio.ToErrorResponse(err)
	return r.Code == "NoSuchKey" || r.StatusCode == http.StatusNotFound
}

func (s *store) get(ctx context.Context, key string, limit int64) ([]byte, error) {
	b, _, err := s.getVersion(ctx, key, limit)
	return b, err
}

// getVersion reads a whole object of at most limit bytes (a longer one is
// errTooBig, not read), and says which version it read: ETag and size.
func (s *store) getVersion(ctx context.Context, key string, limit int64) ([]byte, string, error) {
	body, info, _, err := s.core.GetObject(ctx, s.cfg.Bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, "", err
	}
	defer body.Close()
	if info.Size > limit {
		return nil, "", fmt.Errorf("%w: %s is %d bytes, more than %d", errTooBig, key, info.Size, limit)
	}
	b, err := io.ReadAll(io.LimitReader(body, limit+1))
	if err != nil {
		return nil, "", err
	}
	if int64(len(b)) > limit {
		return nil, "", fmt.Errorf("%w: %s is more than %d bytes", errTooBig, key, limit)
	}
	return b, version(info.ETag, int64(len(b))), nil
}

// version names one version of an object (a listing quotes ETags, a GET
// does not).
func version(etag string, size int64) string {
	return fmt.Sprintf("%s/%d", strings.Trim(etag, `"`), size)
}

func (s *store) put(ctx context.Context, key string, b []byte, opts minio.PutObjectOptions) (minio.UploadInfo, error) {
	return s.core.PutObject(ctx, s.cfg.Bucket, key, bytes.NewReader(b), int64(len(b)), "", "", opts)
}

func (s *store) remove(ctx context.Context, key string) error {
	err := s.core.RemoveObject(ctx, s.cfg.Bucket, key, minio.RemoveObjectOptions{})
	if err != nil && !isNotFound(err) {
		return err
	}
	return nil
}

// object is one listed object.
type object struct {
	key      string
	size     int64
	modified time.Time
	etag     string
}

// list lists every object under prefix, in key order.
func (s *store) list(ctx context.Context, prefix string) ([]object, error) {
	var out []object
	token := ""
	for {
		r, err := s.core.ListObjectsV2(s.cfg.Bucket, prefix, "", token, "", 1000)
		if err != nil {
			return nil, err
		}
		for _, o := range r.Contents {
			out = append(out, object{key: o.Key, size: o.Size, modified: o.LastModified, etag: o.ETag})
		}
		if !r.IsTruncated || r.NextContinuationToken == "" {
			break
		}
		token = r.NextContinuationToken
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out, nil
}

// abortUploads aborts every unfinished multipart upload under prefix.
func (s *store) abortUploads(ctx context.Context, prefix string) error {
	keyMarker, idMarker := "", ""
	for {
		r, err := s.core.ListMultipartUploads(ctx, s.cfg.Bucket, prefix, keyMarker, idMarker, "", 1000)
		if err != nil {
			return err
		}
		for _, u := range r.Uploads {
			if err := s.core.AbortMultipartUpload(ctx, s.cfg.Bucket, u.Key, u.UploadID); err != nil && !isNoUpload(err) {
				return err
			}
		}
		if !r.IsTruncated {
			return nil
		}
		keyMarker, idMarker = r.NextKeyMarker, r.NextUploadIDMarker
	}
}

func isNoUpload(err error) bool {
	return minio.ToErrorResponse(err).Code == "NoSuchUpload"
}

// ---- the tape ----

// Object names inside a tape's folder (doc.go).
const (
	labelName = "label"
	copyName  = "label.copy"
	lockName  = "lock"
)

func fileKey(n int, ext string) string { return fmt.Sprintf("%06d.%s", n, ext) }
func chunkKey(n, k int) string         { return fmt.Sprintf("%06d.data.%06d", n, k) }

// Tape is a virtual cartridge in a bucket: the objects under
// PREFIX/BARCODE/. It implements tape.Device (with tape.Remainer on its
// writers). A Tape is safe for concurrent use; at most one writer is open
// at a time, across processes (the lock object, doc.go).
type Tape struct {
	s    *store
	base string // key prefix of the tape's objects, ending in "/"

	mu     sync.Mutex
	label  tape.Label
	damage error
	used   int64
	w      *writer
	closed bool
	marks  map[string]tape.Filemark // decoded filemarks by key and version (markID)
}

var _ tape.Device = (*Tape)(nil)

func (s *store) tapeBase(barcode string) string { return s.prefix + barcode + "/" }

// Format labels a new tape BARCODE in the bucket. It fails if the tape
// already has a label; objects of a blank tape there are removed. A zero
// EarlyWarning means Capacity.
func Format(cfg Config, l tape.Label) (*Tape, error) {
	s, err := connect(cfg)
	if err != nil {
		return nil, err
	}
	now := s.clock().UTC()
	l, err = tape.NewLabel(l, now)
	if err != nil {
		return nil, fmt.Errorf("format: %w", err)
	}
	t := &Tape{s: s, base: s.tapeBase(l.Barcode), label: l}
	ctx := context.Background()
	lk, err := t.lock(ctx)
	if err != nil {
		return nil, fmt.Errorf("format %s: %w", l.Barcode, err)
	}
	defer lk.release(ctx)
	objs, err := s.list(ctx, t.base)
	if err != nil {
		return nil, s.wrap("format "+l.Barcode, err)
	}
	for _, o := range objs {
		if name := strings.TrimPrefix(o.key, t.base); name == labelName || name == copyName {
			return nil, fmt.Errorf("format %s: already labelled", l.Barcode)
		}
	}
	if err := t.eraseAll(ctx, objs); err != nil {
		return nil, s.wrap("format "+l.Barcode, err)
	}
	if err := t.writeLabel(ctx, l); err != nil {
		return nil, s.wrap("format "+l.Barcode, err)
	}
	return t, nil
}

// Open opens the tape BARCODE: tape.ErrBlank when it has no label,
// tape.ErrBadLabel when both copies are damaged; with one copy damaged it
// opens and LabelDamage says what is wrong.
func Open(cfg Config, barcode string) (*Tape, error) {
	s, err := connect(cfg)
	if err != nil {
		return nil, err
	}
	t := &Tape{s: s, base: s.tapeBase(barcode)}
	ctx := context.Background()
	l, damage, err := t.readLabel(ctx)
	if err != nil {
		return nil, err
	}
	t.label, t.damage = l, damage
	files, err := t.scan(ctx)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		t.used += f.bytes()
	}
	return t, nil
}

func (t *Tape) writeLabel(ctx context.Context, l tape.Label) error {
	b, err := tape.EncodeLabel(l)
	if err != nil {
		return err
	}
	for _, name := range []string{labelName, copyName} {
		if _, err := t.s.put(ctx, t.base+name, b, minio.PutObjectOptions{}); err != nil {
			return err
		}
	}
	t.damage = nil
	return nil
}

// readLabel reads both copies as a folder tape does: the label wins when
// good, the copy stands in when it is not, and damage says which.
func (t *Tape) readLabel(ctx context.Context) (tape.Label, error, error) {
	barcode := strings.TrimSuffix(strings.TrimPrefix(t.base, t.s.prefix), "/")
	one := func(name string) (tape.Label, error) {
		b, err := t.s.get(ctx, t.base+name, tape.MaxLabelBytes)
		if isNotFound(err) {
			return tape.Label{}, fmt.Errorf("%s: %w", name, tape.ErrBlank)
		}
		if err != nil {
			if errors.Is(err, errTooBig) {
				return tape.Label{}, fmt.Errorf("%s: %w: %v", name, tape.ErrBadLabel, err)
			}
			return tape.Label{}, t.s.wrap("read "+name+" of "+barcode, err)
		}
		l, err := tape.DecodeLabel(b)
		if err != nil {
			return tape.Label{}, fmt.Errorf("%s: %w", name, err)
		}
		if l.Barcode != barcode {
			return tape.Label{}, fmt.Errorf("%s: %w: says barcode %q", name, tape.ErrBadLabel, l.Barcode)
		}
		return l, nil
	}
	l1, err1 := one(labelName)
	l2, err2 := one(copyName)
	for _, e := range []error{err1, err2} {
		if e != nil && !errors.Is(e, tape.ErrBlank) && !errors.Is(e, tape.ErrBadLabel) {
			return tape.Label{}, nil, e // the store failed, not the label
		}
	}
	blank1, blank2 := errors.Is(err1, tape.ErrBlank), errors.Is(err2, tape.ErrBlank)
	switch {
	case err1 == nil && err2 == nil:
		if l1 != l2 {
			return l1, fmt.Errorf("%w: label (generation %d) and label.copy (generation %d) disagree; the label is used",
				tape.ErrBadLabel, l1.Generation, l2.Generation), nil
		}
		return l1, nil, nil
	case err1 == nil && blank2:
		return l1, fmt.Errorf("%w: label.copy missing (the label is good)", tape.ErrBadLabel), nil
	case err1 == nil:
		return l1, fmt.Errorf("%w (the label is good)", err2), nil
	case err2 == nil && blank1:
		return l2, fmt.Errorf("%w: label missing (read from label.copy)", tape.ErrBadLabel), nil
	case err2 == nil:
		return l2, fmt.Errorf("%w (read from label.copy)", err1), nil
	case blank1 && blank2:
		return tape.Label{}, nil, fmt.Errorf("tape %s in %s: %w", barcode, t.s.cfg.Bucket, tape.ErrBlank)
	}
	return tape.Label{}, nil, fmt.Errorf("tape %s in %s: %w; %v", barcode, t.s.cfg.Bucket, err1, err2)
}

// LabelDamage reports what was wrong with one copy of the label when the
// tape was opened (or last appended to): nil when both are good, else an
// error wrapping tape.ErrBadLabel. The next Append writes both again.
func (t *Tape) LabelDamage() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.damage
}

// fileObjs are the objects of one tape file.
type fileObjs struct {
	n      int
	chunks []object // in chunk order, 1..K
	crc    bool
	mark   bool
	markID string // the filemark object's ETag and size: its version
}

func (f fileObjs) bytes() int64 {
	var sum int64
	for _, c := range f.chunks {
		sum += c.size
	}
	return sum
}

// parse sorts a tape's object listing into tape files 1..n (n the last one
// with any object); lock and label objects and foreign keys are skipped.
func (t *Tape) parse(objs []object) []fileObjs {
	byNum := map[int]*fileObjs{}
	last := 0
	for _, o := range objs {
		name := strings.TrimPrefix(o.key, t.base)
		num, rest, ok := strings.Cut(name, ".")
		if !ok || len(num) != 6 {
			continue
		}
		n, err := strconv.Atoi(num)
		if err != nil || n < 1 {
			continue
		}
		f := byNum[n]
		if f == nil {
			f = &fileObjs{n: n}
		}
		switch {
		case rest == "crc":
			f.crc = true
		case rest == "mark":
			f.mark = true
			f.markID = version(o.etag, o.size)
		case strings.HasPrefix(rest, "data.") && len(rest) == len("data.")+6:
			if _, err := strconv.Atoi(rest[len("data."):]); err != nil {
				continue
			}
			f.chunks = append(f.chunks, o) // keys sort, so chunks come in order
		default:
			continue
		}
		byNum[n] = f
		last = max(last, n)
	}
	files := make([]fileObjs, 0, last)
	for n := 1; n <= last; n++ {
		if f := byNum[n]; f != nil {
			files = append(files, *f)
		} else {
			files = append(files, fileObjs{n: n})
		}
	}
	return files
}

func (t *Tape) scan(ctx context.Context) ([]fileObjs, error) {
	objs, err := t.s.list(ctx, t.base)
	if err != nil {
		return nil, t.s.wrap("list tape "+t.label.Barcode, err)
	}
	return t.parse(objs), nil
}

// Label returns the tape's label as last read or written.
func (t *Tape) Label() tape.Label {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.label
}

// Used is the data bytes of every tape file, an incomplete one included,
// plus what the open writer has accepted.
func (t *Tape) Used() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	u := t.used
	if t.w != nil {
		u += t.w.Written()
	}
	return u
}

// Files lists the tape files in order; a last one without a filemark is
// FileIncomplete. A damaged filemark is a *tape.CorruptError.
func (t *Tape) Files() ([]tape.FileInfo, error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, tape.ErrClosed
	}
	l := t.label
	t.mu.Unlock()
	ctx := context.Background()
	files, err := t.scan(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]tape.FileInfo, 0, len(files))
	for _, f := range files {
		fi, _, err := t.info(ctx, l, f)
		if err != nil {
			return nil, err
		}
		out = append(out, fi)
	}
	return out, nil
}

// maxCachedMarks bounds the filemarks a Tape keeps decoded.
const maxCachedMarks = 100000

// info describes a tape file, and returns its filemark if it has one. A
// filemark is fetched once per version: the listing's ETag and size say
// when it changed (a relabel, another process), so Files() on a tape of
// many tape files costs one LIST.
func (t *Tape) info(ctx context.Context, l tape.Label, f fileObjs) (tape.FileInfo, *tape.Filemark, error) {
	if !f.mark {
		fi := tape.FileInfo{Number: f.n, Status: tape.FileIncomplete, Bytes: f.bytes(), BlockSize: l.BlockSize}
		fi.Blocks = (fi.Bytes + int64(fi.BlockSize) - 1) / int64(fi.BlockSize)
		if k := len(f.chunks); k > 0 {
			fi.Written = f.chunks[k-1].modified.UTC()
		}
		return fi, nil, nil
	}
	name := fileKey(f.n, "mark")
	t.mu.Lock()
	m, ok := t.marks[name+"@"+f.markID]
	t.mu.Unlock()
	if ok {
		return m.Info(), &m, nil
	}
	b, id, err := t.s.getVersion(ctx, t.base+name, tape.MaxFilemarkBytes)
	if err != nil && !errors.Is(err, errTooBig) {
		return tape.FileInfo{}, nil, t.s.wrap(fmt.Sprintf("tape %s: filemark %d", l.Barcode, f.n), err)
	}
	if err == nil {
		m, err = tape.DecodeFilemark(b)
		if err == nil && m.Number != f.n {
			err = fmt.Errorf("filemark: %w: says tape file %d", tape.ErrCorrupt, m.Number)
		}
	}
	if err != nil {
		if !errors.Is(err, tape.ErrCorrupt) && !errors.Is(err, tape.ErrTruncated) {
			err = fmt.Errorf("%w: %v", tape.ErrCorrupt, err)
		}
		return tape.FileInfo{}, nil, &tape.CorruptError{Library: l.Library, Barcode: l.Barcode, File: f.n, Block: -1, Err: err}
	}
	t.mu.Lock()
	if t.marks == nil || len(t.marks) > maxCachedMarks {
		t.marks = map[string]tape.Filemark{}
	}
	t.marks[name+"@"+id] = m // the version read, which may be newer than the listing's
	t.mu.Unlock()
	return m.Info(), &m, nil
}

// erase removes tape file f: filemark first, then checksums, then chunks
// from the last, so that a failure half way leaves an incomplete tape
// file, never a false complete one.
func (t *Tape) erase(ctx context.Context, f fileObjs) error {
	keys := []string{fileKey(f.n, "mark"), fileKey(f.n, "crc")}
	for k := len(f.chunks) - 1; k >= 0; k-- {
		keys = append(keys, strings.TrimPrefix(f.chunks[k].key, t.base))
	}
	for _, k := range keys {
		if err := t.s.remove(ctx, t.base+k); err != nil {
			return err
		}
	}
	return nil
}

// eraseAll erases every tape file, last first, and aborts unfinished
// uploads under the tape.
func (t *Tape) eraseAll(ctx context.Context, objs []object) error {
	if err := t.s.abortUploads(ctx, t.base); err != nil {
		return err
	}
	files := t.parse(objs)
	for i := len(files) - 1; i >= 0; i-- {
		if err := t.erase(ctx, files[i]); err != nil {
			return err
		}
	}
	return nil
}

// Close closes the tape: an open writer is aborted (its lock released) and
// the idle connections closed. Later calls return tape.ErrClosed.
func (t *Tape) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return tape.ErrClosed
	}
	t.closed = true
	w := t.w
	t.mu.Unlock()
	defer t.s.idle()
	if w != nil {
		if err := w.Abort(); err != nil && !errors.Is(err, tape.ErrClosed) {
			return err
		}
	}
	return nil
}

// Barcode is the tape's barcode.
func (t *Tape) Barcode() string { return t.Label().Barcode }

// Keys returns the object keys of complete tape file n's data, in order:
// fetched one after the other and concatenated they are exactly the bytes
// written (the stock-tool recipe).
func (t *Tape) Keys(n int) ([]string, error) {
	ctx := context.Background()
	files, err := t.scan(ctx)
	if err != nil {
		return nil, err
	}
	if n < 1 || n > len(files) {
		return nil, fmt.Errorf("tape %s: tape file %d: %w", t.Barcode(), n, tape.ErrNoSuchFile)
	}
	f := files[n-1]
	if !f.mark {
		return nil, fmt.Errorf("tape %s: tape file %d: %w", t.Barcode(), n, tape.ErrIncomplete)
	}
	keys := make([]string, len(f.chunks))
	for i, c := range f.chunks {
		keys[i] = c.key
	}
	return keys, nil
}

// Relabel erases every tape file and writes a new label with Generation+1,
// as tape.Tape.Relabel does (a recycled tape): zero fields of l keep the
// current label's values; the barcode cannot change. It fails with
// tape.ErrBusy while a writer is open (in any process).
//
// Tape files are erased last first, and the label replaced only after, so
// a failure half way leaves the old label with a prefix of its tape files
// (the last maybe incomplete), or the new, empty tape.
func (t *Tape) Relabel(l tape.Label) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return tape.ErrClosed
	}
	if t.w != nil {
		return fmt.Errorf("relabel %s: %w", t.label.Barcode, tape.ErrBusy)
	}
	ctx := context.Background()
	lk, err := t.lock(ctx)
	if err != nil {
		return fmt.Errorf("relabel %s: %w", t.label.Barcode, err)
	}
	defer lk.release(ctx)
	old, _, err := t.readLabel(ctx)
	if err != nil && !errors.Is(err, tape.ErrBadLabel) {
		return err
	}
	if err != nil {
		old = t.label
	}
	nl, err := tape.Relabelled(old, l, max(old.Generation, t.label.Generation), t.s.clock())
	if err != nil {
		return err
	}
	objs, err := t.s.list(ctx, t.base)
	if err != nil {
		return t.s.wrap("relabel "+old.Barcode, err)
	}
	if err := t.eraseAll(ctx, objs); err != nil {
		return t.s.wrap("relabel "+old.Barcode, err)
	}
	if err := t.writeLabel(ctx, nl); err != nil {
		return t.s.wrap("relabel "+old.Barcode, err)
	}
	t.label = nl
	t.used = 0
	return nil
}
