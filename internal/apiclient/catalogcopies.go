package apiclient

import (
	"context"
	"net/url"

	"github.com/kura-backup/kura/internal/api"
)

func (c *Client) CatalogCopies(ctx context.Context, dirs []string) (*api.CatalogCopies, error) {
	path := "/catalog/backups"
	if len(dirs) > 0 {
		path += "?" + url.Values{"vtl_dir": dirs}.Encode()
	}
	return get[*api.CatalogCopies](c, ctx, path)
}
