package apiclient

import (
	"context"

	"github.com/kura-backup/kura/internal/api"
)

// AgentBye tells the server that an agent run is stopping (POST
// /agent/bye), so that it shows the client offline at once. The client
// must carry the agent's certificate; ctx bounds the wait (the agent gives
// it a few seconds, so that stopping never hangs on a server that is
// away).
func (c *Client) AgentBye(ctx context.Context, bye api.AgentBye) error {
	return c.call(ctx, "POST", "/agent/bye", bye, nil)
}
