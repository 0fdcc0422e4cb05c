package apiclient

import (
	"context"
	"net/url"
	"strconv"

	"github.com/kura-backup/kura/internal/api"
)

// Jobs lists the jobs that match f, newest first.
func (c *Client) Jobs(ctx context.Context, f api.JobFilter) ([]api.Job, error) {
	q := url.Values{}
	if f.Limit != 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	for k, v := range map[string]string{"kind": f.Kind, "state": f.State, "client": f.Client} {
		if v != "" {
			q.Set(k, v)
		}
	}
	path := "/jobs"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	return get[[]api.Job](c, ctx, path)
}
