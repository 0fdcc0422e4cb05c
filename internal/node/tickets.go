package node

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
)

// tickets are the open sessions of one kind (backup spans, reads) by
// their one-time ticket, shared by the tunnel's session that opens them
// and the data port where agents come for them.
type tickets[S any] struct {
	mu sync.Mutex
	m  map[string]S
}

func newTickets[S any]() *tickets[S] { return &tickets[S]{m: map[string]S{}} }

// newTicket is a fresh ticket: 32 random bytes, in hex.
func newTicket() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

func (t *tickets[S]) add(ticket string, s S) {
	t.mu.Lock()
	t.m[ticket] = s
	t.mu.Unlock()
}

// get is the session of a ticket (the zero S when there is none).
func (t *tickets[S]) get(ticket string) S {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[ticket]
}

func (t *tickets[S]) remove(ticket string) {
	t.mu.Lock()
	delete(t.m, ticket)
	t.mu.Unlock()
}

// where returns the sessions keep is true of, taken under the lock and
// acted on after it (ending a session removes it).
func (t *tickets[S]) where(keep func(S) bool) []S {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []S
	for _, s := range t.m {
		if keep(s) {
			out = append(out, s)
		}
	}
	return out
}
