package console

import (
	"context"
	"fmt"
	"time"

	"github.com/kura-backup/kura/internal/api"
)

// The fake backend's clients and tokens: tokens are recorded, a revoke
// and a bandwidth change apply to its clients.

func (f *fakeBackend) CreateToken(ctx context.Context, req api.TokenRequest) (*api.TokenResponse, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tokens = append(f.tokens, req)
	return &api.TokenResponse{Token: fmt.Sprintf("kura1-enroll-secret%d", len(f.tokens)), Expires: time.Date(2026, 5, 4, 13, 0, 0, 0, time.UTC)}, nil
}

func (f *fakeBackend) client(name string) (*api.Client, error) {
	for i := range f.clients {
		if f.clients[i].Name == name {
			return &f.clients[i], nil
		}
	}
	return nil, &api.Error{Code: api.CodeNotFound, Field: "client", Message: "no client named " + name}
}

func (f *fakeBackend) RevokeClient(ctx context.Context, name string) (*api.Client, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.client(name)
	if err != nil {
		return nil, err
	}
	c.Revoked, c.Connected = time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC), false
	out := *c
	return &out, nil
}

func (f *fakeBackend) UpdateClient(ctx context.Context, name string, req api.ClientUpdate) (*api.Client, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.client(name)
	if err != nil {
		return nil, err
	}
	if req.BWLimit != nil {
		c.BWLimit = *req.BWLimit
	}
	out := *c
	return &out, nil
}

func (f *fakeBackend) ServerURL() string { return "https://backup.example:8420" }
