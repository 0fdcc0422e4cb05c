package apiclient

import (
	"context"

	"github.com/kura-backup/kura/internal/api"
)

func (c *Client) Plan(ctx context.Context, req api.PlanRequest) (*api.Plan, error) {
	return send[*api.Plan](c, ctx, "POST", "/plan", req)
}
