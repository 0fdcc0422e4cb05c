package apiclient

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	"github.com/kura-backup/kura/internal/api"
)

// query is "?k=v&…" of the values that are set, or "".
func query(kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			v.Set(kv[i], kv[i+1])
		}
	}
	if len(v) == 0 {
		return ""
	}
	return "?" + v.Encode()
}

func limit(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// boolParam is "true", or "" (left out) for false.
func boolParam(b bool) string {
	if b {
		return "true"
	}
	return ""
}

func savesetQuery(q api.SavesetQuery) string {
	return query("client", q.Client, "selection", q.Selection, "tape", q.Tape, "status", q.Status)
}

func (c *Client) Savesets(ctx context.Context, q api.SavesetQuery) ([]api.SavesetInfo, error) {
	return get[[]api.SavesetInfo](c, ctx, "/savesets"+savesetQuery(q))
}

func (c *Client) Saveset(ctx context.Context, id int64) (*api.SavesetInfo, error) {
	return get[*api.SavesetInfo](c, ctx, fmt.Sprintf("/savesets/%d", id))
}

func (c *Client) Retention(ctx context.Context, q api.SavesetQuery) ([]api.RetentionDecision, error) {
	return get[[]api.RetentionDecision](c, ctx, "/savesets/retention"+savesetQuery(q))
}

func (c *Client) Recipe(ctx context.Context, id int64) (*api.Recipe, error) {
	return get[*api.Recipe](c, ctx, fmt.Sprintf("/savesets/%d/recipe", id))
}

func (c *Client) Entries(ctx context.Context, q api.EntriesQuery) (*api.EntryPage, error) {
	return get[*api.EntryPage](c, ctx, fmt.Sprintf("/savesets/%d/entries", q.SavesetID)+
		query("path", q.Path, "cursor", q.Cursor, "limit", limit(q.Limit)))
}

func (c *Client) Find(ctx context.Context, q api.FindQuery) (*api.MatchPage, error) {
	return get[*api.MatchPage](c, ctx, "/savesets/find"+query("pattern", q.Pattern, "client", q.Client, "newest_first", boolParam(q.NewestFirst),
		"cursor", q.Cursor, "limit", limit(q.Limit)))
}
