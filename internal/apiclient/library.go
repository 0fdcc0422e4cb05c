package apiclient

import (
	"context"
	"net/url"

	"github.com/kura-backup/kura/internal/api"
)

var _ api.Service = (*Client)(nil)

// get decodes GET path into a new T.
func get[T any](c *Client, ctx context.Context, path string) (T, error) {
	var out T
	err := c.call(ctx, "GET", path, nil, &out)
	return out, err
}

// send sends in with method and decodes the answer into a new T.
func send[T any](c *Client, ctx context.Context, method, path string, in any) (T, error) {
	var out T
	err := c.call(ctx, method, path, in, &out)
	return out, err
}

// esc escapes one path segment.
func esc(s string) string { return url.PathEscape(s) }

func (c *Client) Libraries(ctx context.Context) ([]api.Library, error) {
	return get[[]api.Library](c, ctx, "/libraries")
}

func (c *Client) Library(ctx context.Context, name string) (*api.Library, error) {
	return get[*api.Library](c, ctx, "/libraries/"+esc(name))
}

func (c *Client) CreateLibrary(ctx context.Context, req api.LibraryCreate) (*api.Library, error) {
	return send[*api.Library](c, ctx, "POST", "/libraries", req)
}

func (c *Client) RegisterLibrary(ctx context.Context, req api.LibraryRegister) (*api.Library, error) {
	return send[*api.Library](c, ctx, "POST", "/libraries/register", req)
}

func (c *Client) RemoveLibrary(ctx context.Context, name string) error {
	return c.call(ctx, "DELETE", "/libraries/"+esc(name), nil, nil)
}
