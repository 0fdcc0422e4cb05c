// Package s3tape is a virtual tape in an S3-compatible bucket: a
// tape.Device whose media is objects, written with minio-go. It passes the
// conformance suite (tapetest) against a real server (versitygw).
//
// # Layout
//
// A tape is the objects under PREFIX/BARCODE/ in the bucket. The records
// are those of a folder tape (package tape, doc.go), byte for byte; only
// the data file is cut into numbered chunks:
//
//	PREFIX/KUR001/
//	├── label                the label (tape's label format, ≤ 16 KiB)
//	├── label.copy           its second copy, the same bytes, written after it
//	├── lock                 the writer lock: {"owner":…,"expires":…} (JSON)
//	├── 000001.data.000001   tape file 1, bytes 0 .. C-1
//	├── 000001.data.000002   bytes C .. 2C-1        (C = the chunk size)
//	├── 000001.data.000003   the rest (≤ C bytes; never empty)
//	├── 000001.crc           its checksum file: "KCRC" header + one CRC-32C per block
//	├── 000001.mark          its filemark: present only once the file is complete
//	├── 000002.data.000001
//	└── ...
//
//	tape file n:  |  chunk 1  |  chunk 2  |  …  |  chunk K  |   data, no headers
//	              0           C           2C        (K-1)C    bytes
//	blocks:       |b0|b1|…|bC/B-1|bC/B|…                        B = block size; C is a
//	                                                          multiple of B, so no block
//	                                                          straddles two chunks
//	NNNNNN.crc:   KCRC v1 B crc32c(hdr) | crc(b0) crc(b1) …    16 + 4·blocks bytes
//	NNNNNN.mark:  KFMK v1 … bytes blocks crc(table) written tag crc
//
// The chunks of a tape file, fetched in key order and concatenated, are
// exactly the bytes written: `zstd -dc | tar -x` reads them like the data
// file of a folder tape (Tape.Keys lists them). The chunk size is an
// option (Config.ChunkSize, default 64 MiB), rounded down to a multiple of
// the block size; readers use the sizes the listing gives, so tape files
// written with different chunk sizes read alike. A chunk that fits in one
// part (Config.PartSize, default 8 MiB, at least S3's 5 MiB) is one PUT; a
// bigger one is a multipart upload of part-size parts. One part goes up
// (in a goroutine of the writer's) while the next fills, as a drive's
// transfer-buffer ring does: the writer's memory is two parts whatever the
// chunk size, and an upload's failure shows at a later Write or at Finish.
//
// # Write ordering
//
//   - Format takes the lock, refuses a tape that has a label, removes
//     stray objects of a blank tape, then PUTs label and label.copy.
//   - Append takes the lock, re-reads the label (rewriting a damaged copy),
//     aborts every unfinished multipart upload under the tape (a dead
//     writer's), and removes an incomplete last tape file (chunks without a
//     filemark): filemark, checksums, then chunks from the last.
//   - Chunks go up in order, each complete (PUT, or multipart upload
//     completed) before the next starts; parts too, one at a time; the
//     block CRCs are computed as the bytes arrive.
//   - Finish stores the last chunk, then NNNNNN.crc, then NNNNNN.mark. A
//     tape file is complete exactly when its filemark exists; objects are
//     visible only whole (S3 PUT and completion are atomic), so a crash or
//     a dead server at any point leaves a prefix of complete tape files
//     and at most one incomplete last one, never read, removed by the next
//     Append.
//   - A write that fails (the store gone, 5xx after the retries) fails the
//     FileWriter with ErrUnavailable; Finish or Abort then aborts the
//     multipart upload in progress and removes the tape file's chunks. If
//     the store cannot be reached for that, the leftovers are an
//     incomplete tape file and an unfinished upload, which the next Append
//     removes. Earlier tape files are never touched.
//
// # One writer: a lock object with conditional writes
//
// S3 has no flock. The lock is the object lock, created with a
// conditional PUT (If-None-Match: *): of two writers racing for a free
// tape exactly one wins, the other gets tape.ErrBusy naming the holder. It
// holds a lease (Config.LockLease, default 10 minutes). The writer renews
// it (PUT with If-Match on its ETag) before each chunk becomes visible and
// before the checksums and filemark, and removes it when it finishes or
// aborts. A lock whose lease ran out — its writer died — is taken over,
// again with If-Match on the ETag read, so two writers cannot both take
// it. A writer that stalled past its lease finds at its next renewal that
// the lock was taken over, stops with tape.ErrBusy and touches nothing
// more: the tape file is the new holder's now. A lease alone (an object
// written and read back) would let two writers that start together both
// believe they hold it; conditional writes are in AWS S3 (since 2024),
// MinIO, Ceph RGW and versitygw. The lease must outlast the upload of one
// chunk: 10 minutes carry a 64 MiB chunk down to about 110 KB/s.
//
// # Reading
//
// Open(n) costs three requests: a LIST of the tape file's objects, its
// filemark and its checksum object (read no longer than the filemark's
// block count allows). A Tape keeps the filemarks it decoded, by key and
// version (ETag and size in the listing), so Files() again is one LIST and
// a filemark changed in the bucket is read again. The chunks must be numbered 1..K without gaps and
// add up to the filemark's length, or Open fails with a *tape.CorruptError
// wrapping tape.ErrTruncated. Data comes by ranged GETs: the reader keeps
// one GET open while reading goes on in order (one GET per chunk for a
// whole file) and a Seek opens a ranged GET at the block it lands in, so a
// single-file restore fetches only the chunks that hold it. Every block's
// CRC-32C is checked as it enters, as on a folder tape.
//
// # Credentials, retries, errors
//
// Credentials come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, else
// from AWS_SHARED_CREDENTIALS_FILE (default ~/.aws/credentials) and
// AWS_PROFILE — never from a URL or a command line (ParseURL refuses user
// information). Error messages carry the endpoint, the request and the
// server's error code, never a secret. Every request is retried by
// minio-go on 5xx, throttling and network errors, Config.Retries attempts
// in all (default 10), backing off 200 ms doubling to at most 1 s with
// jitter: under 10 s of waiting per request, each attempt bounded by a
// 10 s dial and a 2 min wait for the response header. A request that
// went through but whose answer was lost is retried too, and each
// non-idempotent one checks for that: a conditional lock PUT that fails
// against a lock of its own owner keeps it, a completion that finds no
// upload looks for the chunk, whole. The failures a user
// meets are sentinel errors: ErrNoBucket, ErrAccessDenied,
// ErrNoCredentials, ErrUnavailable, and the tape package's.
package s3tape
