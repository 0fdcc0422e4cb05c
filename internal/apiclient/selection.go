package apiclient

import (
	"context"

	"github.com/kura-backup/kura/internal/api"
)

func (c *Client) Selections(ctx context.Context, client string) ([]api.Selection, error) {
	return get[[]api.Selection](c, ctx, "/selections"+query("client", client))
}

func (c *Client) Selection(ctx context.Context, client, name string) (*api.Selection, error) {
	return get[*api.Selection](c, ctx, "/selections/"+esc(name)+query("client", client))
}

func (c *Client) CreateSelection(ctx context.Context, req api.SelectionCreate) (*api.Selection, error) {
	return send[*api.Selection](c, ctx, "POST", "/selections", req)
}

func (c *Client) RemoveSelection(ctx context.Context, client, name string) error {
	return c.call(ctx, "DELETE", "/selections/"+esc(name)+query("client", client), nil, nil)
}
