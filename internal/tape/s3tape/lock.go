package s3tape

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/kura-backup/kura/internal/tape"
)

// The writer lock is an object, PREFIX/BARCODE/lock, holding its owner and
// when its lease ends; it is created with a conditional PUT (If-None-Match:
// *), renewed and taken over with If-Match on its ETag, so two writers
// racing for it cannot both win (doc.go says why this and not a lease
// alone).

type lockRecord struct {
	Owner   string    `json:"owner"`
	Expires time.Time `json:"expires"`
}

// maxLockBytes bounds the lock object read from the store.
const maxLockBytes = 4 << 10

// heldLock is a lock this process holds.
type heldLock struct {
	t    *Tape
	etag string
}

func defaultOwner() string {
	host, _ := os.Hostname()
	var r [6]byte
	rand.Read(r[:])
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(r[:]))
}

func (t *Tape) lease() time.Duration {
	if t.s.cfg.LockLease > 0 {
		return t.s.cfg.LockLease
	}
	return DefaultLockLease
}

func (t *Tape) lockRecord(now time.Time) []byte {
	b, _ := json.Marshal(lockRecord{Owner: t.s.owner, Expires: now.Add(t.lease()).UTC()})
	return b
}

func isPrecondition(err error) bool {
	r := minio.ToErrorResponse(err)
	return r.StatusCode == http.StatusPreconditionFailed || r.StatusCode == http.StatusConflict ||
		r.Code == "PreconditionFailed" || r.Code == "ConditionalRequestConflict"
}

// lock takes the tape's writer lock, or fails at once with tape.ErrBusy
// naming the holder. A lock whose lease has run out (its writer died) is
// taken over.
func (t *Tape) lock(ctx context.Context) (*heldLock, error) {
	key := t.base + lockName
	now := t.s.clock()
	opts := minio.PutObjectOptions{ContentType: "application/json"}
	opts.SetMatchETagExcept("*")
	info, err := t.s.put(ctx, key, t.lockRecord(now), opts)
	if err == nil {
		return &heldLock{t: t, etag: info.ETag}, nil
	}
	if !isPrecondition(err) {
		return nil, t.s.wrap("lock", err)
	}
	rec, etag, err := t.readLock(ctx)
	if isNotFound(err) {
		return nil, fmt.Errorf("%w: the lock changed hands while taking it", tape.ErrBusy)
	}
	if err != nil {
		return nil, err
	}
	if rec != nil && rec.Owner == t.s.owner {
		// Ours: the PUT went through but its answer was lost, and the
		// retry found the lock taken — by itself.
		return &heldLock{t: t, etag: etag}, nil
	}
	if rec != nil && now.Before(rec.Expires) {
		return nil, fmt.Errorf("%w: held by %s until %s", tape.ErrBusy, rec.Owner, rec.Expires.Format(time.RFC3339))
	}
	// Expired (or unreadable): take it over, unless someone else just did.
	opts = minio.PutObjectOptions{ContentType: "application/json"}
	opts.SetMatchETag(etag)
	info, err = t.s.put(ctx, key, t.lockRecord(now), opts)
	if isPrecondition(err) {
		return nil, fmt.Errorf("%w: another writer took over the expired lock", tape.ErrBusy)
	}
	if err != nil {
		return nil, t.s.wrap("take over lock", err)
	}
	return &heldLock{t: t, etag: info.ETag}, nil
}

// readLock reads the lock object: its record (nil when it does not
// parse) and its ETag. A missing lock is the store's not-found error.
func (t *Tape) readLock(ctx context.Context) (*lockRecord, string, error) {
	body, oi, _, err := t.s.core.GetObject(ctx, t.s.cfg.Bucket, t.base+lockName, minio.GetObjectOptions{})
	if isNotFound(err) {
		return nil, "", err
	}
	if err != nil {
		return nil, "", t.s.wrap("read lock", err)
	}
	defer body.Close()
	var rec lockRecord
	if err := json.NewDecoder(io.LimitReader(body, maxLockBytes)).Decode(&rec); err != nil {
		return nil, oi.ETag, nil
	}
	return &rec, oi.ETag, nil
}

// renew extends the lease, with If-Match on the lock's ETag: a lock taken
// over meanwhile (this writer stalled past its lease) is tape.ErrBusy, and
// the writer must stop without touching the tape file, which is now the
// other writer's. Writers renew at every chunk end and before the
// filemark.
func (h *heldLock) renew(ctx context.Context) error {
	for attempt := 0; ; attempt++ {
		opts := minio.PutObjectOptions{ContentType: "application/json"}
		opts.SetMatchETag(h.etag)
		info, err := h.t.s.put(ctx, h.t.base+lockName, h.t.lockRecord(h.t.s.clock()), opts)
		if err == nil {
			h.etag = info.ETag
			return nil
		}
		if !isPrecondition(err) && !isNotFound(err) {
			return h.t.s.wrap("renew lock", err)
		}
		// A renewal whose answer was lost and was retried fails its
		// If-Match against itself: the lock is still ours, with the new
		// ETag. Anyone else's lock means we lost it.
		rec, etag, rerr := h.t.readLock(ctx)
		if rerr == nil && rec != nil && rec.Owner == h.t.s.owner && attempt == 0 {
			h.etag = etag
			continue
		}
		return fmt.Errorf("%w: the writer lock was taken over (this writer stalled past its lease)", tape.ErrBusy)
	}
}

// release removes the lock object if it is still this writer's.
func (h *heldLock) release(ctx context.Context) {
	oi, err := h.t.s.core.StatObject(ctx, h.t.s.cfg.Bucket, h.t.base+lockName, minio.StatObjectOptions{})
	if err != nil || oi.ETag != h.etag {
		return
	}
	h.t.s.remove(ctx, h.t.base+lockName)
}
