package apiclient

import (
	"context"
	"net/url"
	"strconv"

	"github.com/kura-backup/kura/internal/api"
)

func (c *Client) Policies(ctx context.Context) ([]api.Policy, error) {
	return get[[]api.Policy](c, ctx, "/policies")
}

func (c *Client) Policy(ctx context.Context, name string) (*api.Policy, error) {
	return get[*api.Policy](c, ctx, "/policies/"+esc(name))
}

func (c *Client) CreatePolicy(ctx context.Context, req api.PolicyCreate) (*api.Policy, error) {
	return send[*api.Policy](c, ctx, "POST", "/policies", req)
}

func (c *Client) EditPolicy(ctx context.Context, name string, req api.PolicyEdit) (*api.Policy, error) {
	return send[*api.Policy](c, ctx, "PATCH", "/policies/"+esc(name), req)
}

func (c *Client) RemovePolicy(ctx context.Context, name string) error {
	return c.call(ctx, "DELETE", "/policies/"+esc(name), nil, nil)
}

func (c *Client) NextRuns(ctx context.Context, name string, count int) ([]api.PolicySlot, error) {
	return get[[]api.PolicySlot](c, ctx, "/policies/"+esc(name)+"/next?count="+strconv.Itoa(count))
}

func (c *Client) PolicyRetention(ctx context.Context, name string, req api.RetentionPreview) ([]api.RetentionDecision, error) {
	q := url.Values{}
	if req.KeepGenerations != nil {
		q.Set("keep_generations", strconv.Itoa(*req.KeepGenerations))
	}
	if req.KeepDays != nil {
		q.Set("keep_days", strconv.Itoa(*req.KeepDays))
	}
	path := "/policies/" + esc(name) + "/retention"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	return get[[]api.RetentionDecision](c, ctx, path)
}

// RunPolicy queues a run of a policy now at a level.
func (c *Client) RunPolicy(ctx context.Context, name, level string) ([]int64, error) {
	out, err := send[api.JobsSubmitted](c, ctx, "POST", "/policies/"+esc(name)+"/run", api.PolicyRun{Level: level})
	return out.Jobs, err
}
