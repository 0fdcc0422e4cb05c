package seal

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"filippo.io/age"

	"github.com/kura-backup/kura/internal/private"
)

// RingFile is the key ring's name in an agent's folder.
const RingFile = "keys.txt"

// A Ring is an agent's keys: an age identity file, oldest first. The last
// key is the current one: new savesets are encrypted to it. Older keys stay
// to read the savesets made with them (rotation never drops a key).
type Ring struct {
	ids  []*age.X25519Identity
	text []byte // the file as it is
}

// Current is the key new savesets are encrypted to.
func (r *Ring) Current() *age.X25519Identity { return r.ids[len(r.ids)-1] }

// Recipient is the current key's public half ("age1…").
func (r *Ring) Recipient() string { return r.Current().Recipient().String() }

// Identities are every key of the ring, for decrypting.
func (r *Ring) Identities() []age.Identity {
	out := make([]age.Identity, len(r.ids))
	for i, id := range r.ids {
		out[i] = id
	}
	return out
}

// Len is the number of keys.
func (r *Ring) Len() int { return len(r.ids) }

// Text is the key ring file: an age identity file (`age -d -i` reads it).
func (r *Ring) Text() []byte { return bytes.Clone(r.text) }

// LoadRing reads the key ring at path; ErrNoKey when there is none.
func LoadRing(path string) (*Ring, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s does not exist", ErrNoKey, path)
	}
	if err != nil {
		return nil, err
	}
	return parseRing(b, path)
}

func parseRing(b []byte, what string) (*Ring, error) {
	ids, err := age.ParseIdentities(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("key ring %s: %w", what, err)
	}
	r := &Ring{text: b}
	for _, id := range ids {
		x, ok := id.(*age.X25519Identity)
		if !ok {
			return nil, fmt.Errorf("key ring %s: only X25519 keys (AGE-SECRET-KEY-1…) are kept", what)
		}
		r.ids = append(r.ids, x)
	}
	return r, nil
}

// EnsureRing reads the key ring at path, or makes one with a new key when
// there is none (created true). The file is the owner's alone.
func EnsureRing(path string) (r *Ring, created bool, err error) {
	r, err = LoadRing(path)
	if err == nil {
		return r, false, nil
	}
	if !errors.Is(err, ErrNoKey) {
		return nil, false, err
	}
	r, err = addKeys(path, nil, nil)
	return r, err == nil, err
}

// Rotate adds a new current key to the ring at path (making the ring if
// needed). The old keys stay, to read the savesets made with them.
func Rotate(path string) (*Ring, error) {
	old, err := LoadRing(path)
	if err != nil && !errors.Is(err, ErrNoKey) {
		return nil, err
	}
	return addKeys(path, old, nil)
}

// Import adds the keys of an age identity file to the ring at path, before
// its current key: they open savesets (a recovery key, a lost machine's
// exported ring) but new savesets stay encrypted to the current key. A
// ring that does not exist yet gets a new current key after them.
func Import(path string, identityFile []byte) (*Ring, error) {
	in, err := parseRing(identityFile, "to import")
	if err != nil {
		return nil, err
	}
	if len(in.ids) == 0 {
		return nil, fmt.Errorf("no key to import: %w", ErrNoKey)
	}
	old, err := LoadRing(path)
	if err != nil && !errors.Is(err, ErrNoKey) {
		return nil, err
	}
	return addKeys(path, old, in.ids)
}

// addKeys writes the ring: old's keys, then imported ones not already
// there, then the current key (old's, or a new one when old is nil or
// imported is nil). Written whole to a temporary file and renamed, so a
// crash leaves the old ring or the new one.
func addKeys(path string, old *Ring, imported []*age.X25519Identity) (*Ring, error) {
	var keys []*age.X25519Identity
	var cur *age.X25519Identity
	have := map[string]bool{}
	if old != nil {
		keys = old.ids[:len(old.ids)-1]
		cur = old.Current()
		for _, k := range old.ids {
			have[k.String()] = true
		}
	}
	keys = append([]*age.X25519Identity(nil), keys...)
	for _, k := range imported {
		if !have[k.String()] {
			have[k.String()] = true
			keys = append(keys, k)
		}
	}
	if cur == nil || imported == nil {
		if cur != nil {
			keys = append(keys, cur)
		}
		k, err := age.GenerateX25519Identity()
		if err != nil {
			return nil, err
		}
		cur = k
	}
	keys = append(keys, cur)
	var b bytes.Buffer
	b.WriteString("# Kura agent key ring (age identity file). The last key is the current one.\n")
	b.WriteString("# A lost key means lost backups: keep a copy (kura agent key export).\n")
	now := time.Now().UTC().Format(time.RFC3339)
	for _, k := range keys {
		fmt.Fprintf(&b, "# public key: %s (written %s)\n%s\n", k.Recipient(), now, k)
	}
	if err := private.MkdirAll(filepath.Dir(path)); err != nil {
		return nil, err
	}
	tmp := path + ".tmp"
	f, err := private.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY)
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(b.Bytes()); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, err
	}
	return &Ring{ids: keys, text: b.Bytes()}, nil
}
