package console

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/units"
)

// The clients page: the enrolled clients with their state, last contact
// and bandwidth limit; an enrollment token made here is shown once, with
// the command that enrolls an agent with it; revoke cuts a client off.

// tokenLives are the lifetimes the token form offers.
var tokenLives = []struct {
	Value, Text string
}{{"1h", "1 hour"}, {"24h", "1 day"}, {"168h", "7 days"}}

// clients lists the clients.
func (c *Console) clients(w http.ResponseWriter, r *http.Request, s *session) error {
	return c.clientsPage(w, r, s, nil)
}

// issued is an enrollment token just made, shown once.
type issued struct {
	Token, Name, Command string
	Expires              time.Time
}

func (c *Console) clientsPage(w http.ResponseWriter, r *http.Request, s *session, tok *issued) error {
	cls, err := c.opts.Backend.Clients(r.Context())
	if err != nil {
		return err
	}
	return c.render(w, "clients", s, map[string]any{"Clients": cls, "Admin": s.role == RoleAdmin, "Issued": tok,
		"Lives": tokenLives, "Server": c.opts.Backend.ServerURL()})
}

// createToken makes a one-time enrollment token and shows it, once, in
// the page this request answers (it is never in a URL or a log).
func (c *Console) createToken(w http.ResponseWriter, r *http.Request, s *session) error {
	name := strings.TrimSpace(r.PostFormValue("name"))
	life, err := time.ParseDuration(cmp.Or(r.PostFormValue("expires"), "1h"))
	if err != nil {
		return refuse(http.StatusBadRequest, "expires: %q is not a duration (1h, 24h)", r.PostFormValue("expires"))
	}
	req := api.TokenRequest{Name: name, ExpiresSeconds: life.Seconds()}
	if err := req.Validate(); err != nil {
		return refuse(http.StatusBadRequest, "%v", err)
	}
	t, err := c.opts.Backend.CreateToken(r.Context(), req)
	if err != nil {
		return err
	}
	c.opts.Log.Info("console: enrollment token created", "for", name, "expires", t.Expires, "user", s.who())
	return c.clientsPage(w, r, s, &issued{Token: t.Token, Name: name, Expires: t.Expires,
		Command: enrollCommand(c.opts.Backend.ServerURL(), t.Token, name)})
}

// enrollCommand is the command that enrolls an agent with a token and
// starts it.
func enrollCommand(server, token, name string) string {
	server = cmp.Or(server, "https://SERVER:8420")
	cmd := fmt.Sprintf("kura agent enroll --server %s --token %s", server, token)
	cmd += " --name " + cmp.Or(name, "NAME")
	return cmd + " && kura agent run"
}

// revokeClient revokes a client: its certificate is refused from now on,
// its running jobs end.
func (c *Console) revokeClient(w http.ResponseWriter, r *http.Request, s *session) error {
	name := r.PathValue("name")
	if _, err := c.opts.Backend.RevokeClient(r.Context(), name); err != nil {
		return err
	}
	c.opts.Log.Warn("console: client revoked", "client", name, "user", s.who())
	http.Redirect(w, r, "/clients#client-"+url.PathEscape(name), http.StatusSeeOther)
	return nil
}

// setBandwidth sets a client's default bandwidth limit, in KB/s (1 KB =
// 1024 bytes, as the job monitor counts); 0 or empty: none.
func (c *Console) setBandwidth(w http.ResponseWriter, r *http.Request, s *session) error {
	name := r.PathValue("name")
	v := strings.TrimSpace(r.PostFormValue("bwlimit_kbps"))
	kbps := 0.0
	if v != "" {
		var err error
		kbps, err = strconv.ParseFloat(v, 64)
		if err != nil || kbps < 0 || kbps > 1<<40 {
			return refuse(http.StatusBadRequest, "bandwidth limit: %q is not a number of KB/s (0 for none)", v)
		}
	}
	bps := int64(kbps * 1024)
	req := api.ClientUpdate{BWLimit: &bps}
	if err := req.Validate(); err != nil {
		return refuse(http.StatusBadRequest, "%v", err)
	}
	if _, err := c.opts.Backend.UpdateClient(r.Context(), name, req); err != nil {
		return err
	}
	c.opts.Log.Info("console: client bandwidth limit set", "client", name, "bwlimit", units.FormatRate(float64(bps)), "user", s.who())
	http.Redirect(w, r, "/clients#client-"+url.PathEscape(name), http.StatusSeeOther)
	return nil
}

func init() {
	funcs["float"] = func(n int64) float64 { return float64(n) }
	// bwlimit is a client's bandwidth limit in words.
	funcs["bwlimit"] = func(bps int64) string {
		if bps <= 0 {
			return "none"
		}
		return fmt.Sprintf("%.0f KB/s", float64(bps)/1024)
	}
}
