package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/apiclient"
	"github.com/kura-backup/kura/internal/stream"
	"github.com/kura-backup/kura/internal/tape"
)

// ticket asks the server where to read saveset data from loc on: a read
// ticket for a storage node's data port, or (empty) through the server.
func (d *remoteData) ticket(loc stream.Location) (api.ReadTicket, error) {
	var tk api.ReadTicket
	p := jobPath(d.s.job, fmt.Sprintf("/savesets/%d/ticket?part=%d&offset=%d", d.id, loc.Part, loc.Offset))
	if d.s.own {
		p = fmt.Sprintf("/agent/savesets/%d/ticket?part=%d&offset=%d", d.id, loc.Part, loc.Offset)
	}
	rc, err := d.s.a.call(d.s.ctx, "POST", p, "", nil, d.s.idle, false)
	if err != nil {
		return tk, err
	}
	defer rc.Close()
	if err := json.NewDecoder(io.LimitReader(rc, api.MaxJSONMsg)).Decode(&tk); err != nil {
		return tk, fmt.Errorf("reading the server's read ticket: %w", err)
	}
	return tk, nil
}

// readNode reads saveset data with a read ticket from a storage node's
// data port (mutual TLS: the node's certificate is of the server's CA, and
// the node takes the ticket only from this agent's certificate). A read
// the node breaks off after its headers ends with its reason (the
// api.TrailerError trailer): damage on the node's tape is an error
// wrapping tape.ErrCorrupt that names the tape, not a clean end.
func (a *Agent) readNode(ctx context.Context, tk api.ReadTicket, idle time.Duration) (io.ReadCloser, error) {
	nc, err := apiclient.New(tk.DataURL, a.tls, "")
	if err != nil {
		return nil, err
	}
	w := newWatch(ctx, idle)
	req, err := nc.NewRequest(w.ctx, "GET", "/read/"+tk.Ticket, nil)
	if err != nil {
		w.done()
		nc.Close()
		return nil, err
	}
	w.arm()
	resp, err := nc.DoBulk(req)
	w.pause()
	if err != nil {
		err = w.err(err)
		w.done()
		nc.Close()
		return nil, fmt.Errorf("storage node %s: %w", tk.Node, err)
	}
	return &nodeBody{watchedBody: watchedBody{rc: resp.Body, w: w}, trailer: func() string { return resp.Trailer.Get(api.TrailerError) },
		node: tk.Node, nc: nc}, nil
}

// nodeBody is a read from a storage node: at the end of the body, the
// trailer says whether it ended or broke.
type nodeBody struct {
	watchedBody
	trailer func() string
	node    string
	nc      *apiclient.Client
}

func (b *nodeBody) Read(p []byte) (int, error) {
	n, err := b.watchedBody.Read(p)
	if err == io.EOF {
		if t := b.trailer(); t != "" {
			var ae api.Error
			if jerr := json.Unmarshal([]byte(t), &ae); jerr != nil {
				return n, fmt.Errorf("storage node %s broke off the read: %s", b.node, t)
			}
			if ae.Code == api.CodeCorrupt {
				return n, &damaged{msg: ae.Message}
			}
			return n, &ae
		}
	}
	return n, err
}

func (b *nodeBody) Close() error {
	err := b.watchedBody.Close()
	b.nc.Close()
	return err
}

// damaged is damage on a storage node's tape, in the node's words.
type damaged struct{ msg string }

func (e *damaged) Error() string { return e.msg }
func (e *damaged) Unwrap() error { return tape.ErrCorrupt }
