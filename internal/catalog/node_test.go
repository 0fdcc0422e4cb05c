package catalog

import (
	"errors"
	"testing"
)

func TestStorageNodes(t *testing.T) { onBoth(t, testStorageNodes) }

// testStorageNodes: a node is an enrolled machine of kind node, made with a
// node token, and a library can live on it.
func testStorageNodes(t *testing.T) {
	c, _ := openTemp(t)
	must(t, c.EnrollClient(Client{Name: "web1", CertFingerprint: fp1}))
	must(t, c.EnrollClient(Client{Name: "sn1", CertFingerprint: fp1, Kind: KindNode}))
	if err := c.EnrollClient(Client{Name: "x", CertFingerprint: fp1, Kind: "robot"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("enrolling a machine of kind robot: %v, want ErrInvalid", err)
	}
	web, err := c.Client("web1")
	must(t, err)
	sn, err := c.Client("sn1")
	must(t, err)
	if web.IsNode() || web.Kind != KindAgent || !sn.IsNode() {
		t.Errorf("kinds: web1 %q, sn1 %q; want agent, node", web.Kind, sn.Kind)
	}

	tok := &Token{Hash: "h1", Kind: TokenNode, Expires: t0.Add(3600e9)}
	must(t, c.CreateToken(tok))
	got, err := c.TokenByHash("h1")
	must(t, err)
	if got.Kind != TokenNode {
		t.Errorf("token kind %q, want %q", got.Kind, TokenNode)
	}

	must(t, c.AddLibrary(Library{Name: "far", Dir: "/srv/kura/vtl/far", Node: "sn1", Created: t0}))
	must(t, c.AddLibrary(Library{Name: "near", Dir: "/var/kura/near", Created: t0}))
	far, err := c.Library("far")
	must(t, err)
	if far.Node != "sn1" || far.Dir != "/srv/kura/vtl/far" {
		t.Errorf("library far: %+v, want on node sn1", far)
	}
	libs, err := c.Libraries()
	must(t, err)
	if len(libs) != 2 || libs[0].Node != "sn1" || libs[1].Node != "" {
		t.Errorf("Libraries: %+v, want far on sn1 and near on the server", libs)
	}
}
