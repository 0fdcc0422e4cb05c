package server

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"sync"
	"time"

	"golang.org/x/net/http2"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/node"
)

// nodeHub keeps the tunnels of the connected storage nodes. A node dials
// out (GET /api/v1/node/tunnel, upgraded); the server is then the HTTP/2
// client of the node's changer protocol on that connection, and a library
// of the node is a node.Remote over it (engine.Nodes). A tunnel ends when
// the node goes away (pings fail), is revoked, or the server stops.
type nodeHub struct {
	s     *Server
	mu    sync.Mutex
	links map[string]*nodeLink
}

type nodeLink struct {
	conn  *node.Conn
	cc    *http2.ClientConn
	addr  string
	since time.Time
	cut   chan struct{} // closed to end the tunnel (revoked, a newer tunnel)
	once  sync.Once
}

func (l *nodeLink) close() { l.once.Do(func() { close(l.cut) }) }

func newNodeHub(s *Server) *nodeHub { return &nodeHub{s: s, links: map[string]*nodeLink{}} }

var _ engine.Nodes = (*nodeHub)(nil)

// nodeOffline is ErrNodeOffline naming the node and the library.
type nodeOffline struct{ node, lib string }

func (e *nodeOffline) Error() string {
	return fmt.Sprintf("storage node %s is offline (library %s lives on it)", e.node, e.lib)
}
func (e *nodeOffline) Is(target error) bool { return target == engine.ErrNodeOffline }

func (h *nodeHub) link(name string) *nodeLink {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.links[name]
	if l != nil && l.cc.State().Closed {
		return nil
	}
	return l
}

func (h *nodeHub) online(name string) bool { return h.link(name) != nil }

// CreateLibrary creates a library (folder, S3 or tape) on a connected node.
func (h *nodeHub) CreateLibrary(name string, cfg library.Config) (library.Changer, error) {
	c, err := h.s.env.Catalog.Client(name)
	if errors.Is(err, catalog.ErrNotFound) || err == nil && !c.IsNode() {
		return nil, engine.Missing("node", "no storage node %q", name)
	}
	if err != nil {
		return nil, err
	}
	l := h.link(name)
	if l == nil {
		return nil, &nodeOffline{node: name, lib: cfg.Name}
	}
	return l.conn.CreateLibrary(cfg)
}

// Open opens a library of a node as a changer over its tunnel.
func (h *nodeHub) Open(rec catalog.Library) (library.Changer, error) {
	l := h.link(rec.Node)
	if l == nil {
		return nil, &nodeOffline{node: rec.Node, lib: rec.Name}
	}
	return l.conn.Library(rec.Name)
}

// libraries are the catalog's libraries on each node.
func (h *nodeHub) libraries() (map[string][]string, error) {
	recs, err := h.s.env.Catalog.Libraries()
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, r := range recs {
		if r.Node != "" {
			out[r.Node] = append(out[r.Node], r.Name)
		}
	}
	return out, nil
}

// nodeTunnel is the node's dial-out: it becomes the node's tunnel and is
// held until the tunnel ends.
func (s *Server) nodeTunnel(w http.ResponseWriter, r *http.Request, name string) error {
	c, err := s.env.Catalog.Client(name)
	if err != nil {
		return err
	}
	if !c.IsNode() {
		s.log.Warn("refused: a tunnel from a client that is not a storage node", "client", name, "remote", r.RemoteAddr)
		return apiErr(api.CodeForbidden, "%s is an agent, not a storage node (enroll nodes with kura node enroll)", name)
	}
	conn, err := node.Accept(w, r)
	if err != nil {
		return badRequest("%v", err)
	}
	cc, hc, err := node.NewClient(conn)
	if err != nil {
		conn.Close()
		s.log.Error("node tunnel", "node", name, "err", err)
		return nil
	}
	dataURL := r.Header.Get(node.HeaderDataURL)
	if u, err := url.Parse(dataURL); dataURL != "" && (err != nil || u.Scheme != "https" || u.Host == "") {
		s.log.Warn("storage node announced a data port that is not https://HOST:PORT; its backups go through the server", "node", name, "data_url", dataURL)
		dataURL = ""
	}
	l := &nodeLink{conn: &node.Conn{Node: name, HC: hc, DataURL: dataURL}, cc: cc, addr: r.RemoteAddr, since: s.opts.Clock.Now(), cut: make(chan struct{})}
	s.nodes.mu.Lock()
	if old := s.nodes.links[name]; old != nil {
		old.close() // a node that reconnects replaces its old tunnel
	}
	s.nodes.links[name] = l
	s.nodes.mu.Unlock()
	s.log.Info("storage node connected", "node", name, "remote", r.RemoteAddr, "data_url", dataURL)
	s.q.kick() // jobs waiting for it may start
	defer func() {
		s.nodes.mu.Lock()
		if s.nodes.links[name] == l {
			delete(s.nodes.links, name)
		}
		s.nodes.mu.Unlock()
		cc.Close()
		conn.Close()
		s.log.Warn("storage node disconnected", "node", name)
	}()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-l.cut:
			return nil
		case <-s.ctx.Done():
			return nil
		case <-t.C:
			if cc.State().Closed {
				return nil
			}
			s.hub.seen(name, r.RemoteAddr)
		}
	}
}

// drop cuts a node's tunnel (revoked).
func (h *nodeHub) drop(name string) {
	h.mu.Lock()
	l := h.links[name]
	h.mu.Unlock()
	if l != nil {
		l.close()
	}
}

func (s *Server) apiNode(c *catalog.Client, libs map[string][]string) api.Node {
	s.hub.lastSeen(c)
	n := api.Node{Name: c.Name, CertSerial: c.CertSerial, CertFingerprint: c.CertFingerprint, Enrolled: c.Enrolled,
		Revoked: c.Revoked, LastSeen: c.LastSeen, Address: c.Address, Libraries: libs[c.Name],
		Connected: c.Revoked.IsZero() && s.nodes.online(c.Name)}
	if n.Libraries == nil {
		n.Libraries = []string{}
	}
	sort.Strings(n.Libraries)
	return n
}

func (s *Server) nodeRoutes() []route {
	return []route{
		call("GET", "/nodes", http.StatusOK, func(r *http.Request) (any, error) {
			cs, err := s.env.Catalog.Clients()
			if err != nil {
				return nil, err
			}
			libs, err := s.nodes.libraries()
			if err != nil {
				return nil, err
			}
			out := []api.Node{}
			for _, c := range cs {
				if c.IsNode() {
					out = append(out, s.apiNode(c, libs))
				}
			}
			return out, nil
		}),
		call("POST", "/nodes/{name}/revoke", http.StatusOK, func(r *http.Request) (any, error) {
			name := r.PathValue("name")
			c, err := s.env.Catalog.Client(name)
			if errors.Is(err, catalog.ErrNotFound) || err == nil && !c.IsNode() {
				return nil, missing("node", "no storage node %q", name)
			}
			if err != nil {
				return nil, err
			}
			if err := s.revoke(name); err != nil {
				return nil, err
			}
			if c, err = s.env.Catalog.Client(name); err != nil {
				return nil, err
			}
			libs, err := s.nodes.libraries()
			if err != nil {
				return nil, err
			}
			return s.apiNode(c, libs), nil
		}),
	}
}

// dataPath is the node (and its library) a saveset's data can be read
// from directly: every part's tape in one library of a connected node with
// a data port. nil: read it through the server.
func (h *nodeHub) dataPath(ss *catalog.Saveset) (*node.Conn, string) {
	lib := ""
	for _, p := range ss.Parts {
		name, err := h.s.env.Catalog.TapeLibrary(p.Barcode)
		if err != nil || lib != "" && name != lib {
			return nil, ""
		}
		lib = name
	}
	if lib == "" {
		return nil, ""
	}
	rec, err := h.s.env.Catalog.Library(lib)
	if err != nil || rec.Node == "" {
		return nil, ""
	}
	l := h.link(rec.Node)
	if l == nil || l.conn.DataURL == "" {
		return nil, ""
	}
	return l.conn, lib
}

// anyDataPort reports whether a connected node has a data port: a
// restore's agent then asks for a read ticket before each read.
func (h *nodeHub) anyDataPort() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, l := range h.links {
		if l.conn.DataURL != "" && !l.cc.State().Closed {
			return true
		}
	}
	return false
}

// cancelAgent kills every ticket of a revoked client on the connected
// nodes: its backup streams and reads, under way or not.
func (h *nodeHub) cancelAgent(name string) {
	h.mu.Lock()
	var conns []*node.Conn
	for _, l := range h.links {
		if l.conn.DataURL != "" && !l.cc.State().Closed {
			conns = append(conns, l.conn)
		}
	}
	h.mu.Unlock()
	for _, c := range conns {
		if err := c.CancelAgent(name); err != nil {
			h.s.log.Warn("cancelling a revoked client's tickets on a storage node", "node", c.Node, "client", name, "err", err)
		}
	}
}
