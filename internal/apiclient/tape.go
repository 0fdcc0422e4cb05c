package apiclient

import (
	"context"
	"fmt"
	"net/url"

	"github.com/kura-backup/kura/internal/api"
)

func (c *Client) Tapes(ctx context.Context, q api.TapeQuery) ([]api.Tape, error) {
	path, v := "/tapes", url.Values{}
	if q.Library != "" {
		v.Set("library", q.Library)
	}
	if q.Pool != "" {
		v.Set("pool", q.Pool)
	}
	if len(v) > 0 {
		path += "?" + v.Encode()
	}
	return get[[]api.Tape](c, ctx, path)
}

func (c *Client) Tape(ctx context.Context, barcode string) (*api.Tape, error) {
	return get[*api.Tape](c, ctx, "/tapes/"+esc(barcode))
}

func (c *Client) TapeLayout(ctx context.Context, barcode string) (*api.TapeLayout, error) {
	return get[*api.TapeLayout](c, ctx, "/tapes/"+esc(barcode)+"/layout")
}

func (c *Client) AddTapes(ctx context.Context, library string, req api.TapeAdd) ([]api.Tape, error) {
	return send[[]api.Tape](c, ctx, "POST", "/libraries/"+esc(library)+"/tapes", req)
}

func (c *Client) ExportTape(ctx context.Context, barcode string) (*api.Tape, error) {
	return send[*api.Tape](c, ctx, "POST", "/tapes/"+esc(barcode)+"/export", nil)
}

func (c *Client) ImportTape(ctx context.Context, barcode string) (*api.Tape, error) {
	return send[*api.Tape](c, ctx, "POST", "/tapes/"+esc(barcode)+"/import", nil)
}

func (c *Client) LabelTape(ctx context.Context, barcode string, req api.TapeLabelRequest) (*api.Tape, error) {
	return send[*api.Tape](c, ctx, "POST", "/tapes/"+esc(barcode)+"/label", req)
}

func (c *Client) LoadTape(ctx context.Context, barcode string, req api.TapeLoad) (*api.Tape, error) {
	return send[*api.Tape](c, ctx, "POST", "/tapes/"+esc(barcode)+"/load", req)
}

func (c *Client) UnloadTape(ctx context.Context, barcode string) (*api.Tape, error) {
	return send[*api.Tape](c, ctx, "POST", "/tapes/"+esc(barcode)+"/unload", nil)
}

func (c *Client) Drives(ctx context.Context, library string) ([]api.Drive, error) {
	if library != "" {
		return get[[]api.Drive](c, ctx, "/libraries/"+esc(library)+"/drives")
	}
	return get[[]api.Drive](c, ctx, "/drives")
}

func (c *Client) SetDrive(ctx context.Context, library string, drive int, req api.DriveUpdate) (*api.Drive, error) {
	return send[*api.Drive](c, ctx, "PATCH", fmt.Sprintf("/libraries/%s/drives/%d", esc(library), drive), req)
}
