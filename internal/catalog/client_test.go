package catalog

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

const fp1 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

func TestValidClientName(t *testing.T) {
	for _, name := range []string{"a", "db1", "db1.example.com", "web_2", "A-b.C_d", "0", "_x",
		strings.Repeat("x", MaxClientNameLen)} {
		if err := ValidClientName(name); err != nil {
			t.Errorf("ValidClientName(%q): %v", name, err)
		}
	}
	for _, name := range []string{"", ".hidden", "-flag", "a b", "a/b", "a:b", "é", "a\x00",
		"../x", strings.Repeat("x", MaxClientNameLen+1)} {
		err := ValidClientName(name)
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("ValidClientName(%q): %v, want ErrInvalid", name, err)
		} else if !strings.Contains(err.Error(), "client name") {
			t.Errorf("ValidClientName(%q): unclear error %q", name, err)
		}
	}
}

func TestClientLifecycle(t *testing.T) { onBoth(t, testClientLifecycle) }

func testClientLifecycle(t *testing.T) {
	c, _ := openTemp(t)
	if cls, err := c.Clients(); err != nil || len(cls) != 0 {
		t.Fatalf("Clients of empty catalog: %v, %v", cls, err)
	}
	cl := Client{Name: "db1", CertSerial: "1f", CertFingerprint: fp1, Enrolled: t0, BWLimit: 1e6}
	must(t, c.EnrollClient(cl))
	cl.Kind = KindAgent // the default kind
	got, err := c.Client("db1")
	must(t, err)
	if !reflect.DeepEqual(*got, cl) {
		t.Fatalf("Client = %+v\nwant %+v", *got, cl)
	}
	if err := c.EnrollClient(Client{Name: "db1", CertFingerprint: fp1}); !errors.Is(err, ErrExists) {
		t.Errorf("enrolling db1 twice: %v, want ErrExists", err)
	}

	// Enrolled defaults to now; the fingerprint is stored in lower case.
	before := time.Now()
	must(t, c.EnrollClient(Client{Name: "app", CertFingerprint: strings.ToUpper(fp1)}))
	app, err := c.Client("app")
	must(t, err)
	if app.Enrolled.Before(before.Add(-time.Second)) || app.Enrolled.Location() != time.UTC {
		t.Errorf("Enrolled %v, want about now in UTC", app.Enrolled)
	}
	if app.CertFingerprint != fp1 {
		t.Errorf("fingerprint %q, want %q", app.CertFingerprint, fp1)
	}

	cls, err := c.Clients()
	must(t, err)
	if len(cls) != 2 || cls[0].Name != "app" || cls[1].Name != "db1" {
		t.Fatalf("Clients not by name: %+v", cls)
	}

	// Seen, bandwidth limit.
	zone := time.FixedZone("CEST", 2*3600)
	must(t, c.SeenClient("db1", "192.0.2.7:50123", t0.Add(time.Hour).In(zone)))
	must(t, c.SeenClient("db1", "192.0.2.8:40000", t0.Add(2*time.Hour)))
	must(t, c.SetClientBWLimit("db1", 0))
	got, err = c.Client("db1")
	must(t, err)
	if !got.LastSeen.Equal(t0.Add(2*time.Hour)) || got.LastSeen.Location() != time.UTC ||
		got.Address != "192.0.2.8:40000" || got.BWLimit != 0 {
		t.Errorf("after seen and limit: %+v", got)
	}
	if err := c.SetClientBWLimit("db1", -1); !errors.Is(err, ErrInvalid) {
		t.Errorf("negative limit: %v, want ErrInvalid", err)
	}

	// Revoke is idempotent and keeps the first time.
	must(t, c.RevokeClient("db1", t0.Add(3*time.Hour)))
	must(t, c.RevokeClient("db1", t0.Add(4*time.Hour)))
	got, err = c.Client("db1")
	must(t, err)
	if !got.Revoked.Equal(t0.Add(3 * time.Hour)) {
		t.Errorf("Revoked %v, want %v", got.Revoked, t0.Add(3*time.Hour))
	}
	// A revoked name stays taken until removed.
	if err := c.EnrollClient(Client{Name: "db1", CertFingerprint: fp1}); !errors.Is(err, ErrExists) {
		t.Errorf("enrolling revoked db1: %v, want ErrExists", err)
	}
	must(t, c.RemoveClient("db1"))
	if _, err := c.Client("db1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Client after remove: %v, want ErrNotFound", err)
	}
	must(t, c.EnrollClient(Client{Name: "db1", CertSerial: "20", CertFingerprint: fp1}))
	got, err = c.Client("db1")
	must(t, err)
	if !got.Revoked.IsZero() || got.CertSerial != "20" || !got.LastSeen.IsZero() {
		t.Errorf("re-enrolled client keeps old state: %+v", got)
	}

	// Missing clients.
	for name, err := range map[string]error{
		"Client":           func() error { _, err := c.Client("nope"); return err }(),
		"RevokeClient":     c.RevokeClient("nope", t0),
		"RemoveClient":     c.RemoveClient("nope"),
		"SeenClient":       c.SeenClient("nope", "x", t0),
		"SetClientBWLimit": c.SetClientBWLimit("nope", 5),
	} {
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("%s of a missing client: %v, want ErrNotFound", name, err)
		}
	}
}

func TestEnrollClientInvalid(t *testing.T) { onBoth(t, testEnrollClientInvalid) }

func testEnrollClientInvalid(t *testing.T) {
	c, _ := openTemp(t)
	for _, cl := range []Client{
		{Name: "", CertFingerprint: fp1},
		{Name: "-x", CertFingerprint: fp1},
		{Name: "a b", CertFingerprint: fp1},
		{Name: "ok"},
		{Name: "ok", CertFingerprint: "abc"},
		{Name: "ok", CertFingerprint: strings.Replace(fp1, "9", "g", 1)},
		{Name: "ok", CertFingerprint: fp1, BWLimit: -1},
	} {
		if err := c.EnrollClient(cl); !errors.Is(err, ErrInvalid) {
			t.Errorf("EnrollClient(%+v): %v, want ErrInvalid", cl, err)
		}
	}
	if cls, _ := c.Clients(); len(cls) != 0 {
		t.Errorf("invalid clients were stored: %+v", cls)
	}
}

func TestClientJSON(t *testing.T) {
	cl := Client{Name: "db1", CertSerial: "1f", CertFingerprint: fp1, Enrolled: t0, Address: "a", BWLimit: 7}
	b, err := json.Marshal(cl)
	must(t, err)
	for _, key := range []string{`"name"`, `"cert_serial"`, `"cert_fingerprint"`, `"enrolled"`, `"revoked"`,
		`"last_seen"`, `"address"`, `"bwlimit"`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("JSON %s lacks %s", b, key)
		}
	}
	var back Client
	must(t, json.Unmarshal(b, &back))
	if !reflect.DeepEqual(back, cl) {
		t.Errorf("JSON round trip %+v, want %+v", back, cl)
	}
}

// SeenClients records many sightings at once; a name that is no client is
// skipped, not an error (it may have been removed since it called).
func TestSeenClients(t *testing.T) { onBoth(t, testSeenClients) }

func testSeenClients(t *testing.T) {
	c, _ := openTemp(t)
	must(t, c.EnrollClient(Client{Name: "a", CertFingerprint: fp1}))
	must(t, c.EnrollClient(Client{Name: "b", CertFingerprint: fp1}))
	must(t, c.SeenClients(nil))
	must(t, c.SeenClients([]ClientSeen{
		{Name: "a", Addr: "192.0.2.1:1", At: t0.Add(time.Minute)},
		{Name: "gone", Addr: "192.0.2.9:9", At: t0},
		{Name: "b", Addr: "192.0.2.2:2", At: t0.Add(2 * time.Minute)},
	}))
	for name, want := range map[string]ClientSeen{"a": {Addr: "192.0.2.1:1", At: t0.Add(time.Minute)}, "b": {Addr: "192.0.2.2:2", At: t0.Add(2 * time.Minute)}} {
		got, err := c.Client(name)
		must(t, err)
		if got.Address != want.Addr || !got.LastSeen.Equal(want.At) {
			t.Errorf("client %s: seen %s from %q, want %s from %q", name, got.LastSeen, got.Address, want.At, want.Addr)
		}
	}
	if _, err := c.Client("gone"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a sighting of no client made one: %v", err)
	}
}

// What an agent reports of its WAL spools replaces what it reported
// before, cluster by cluster, and leaves with the client.
func TestWALSpools(t *testing.T) { onBoth(t, testWALSpools) }

func testWALSpools(t *testing.T) {
	c, _ := openTemp(t)
	must(t, c.EnrollClient(Client{Name: "db1", CertFingerprint: fp1}))
	must(t, c.EnrollClient(Client{Name: "db2", CertFingerprint: fp1}))
	main := WALSpool{Cluster: "main", Files: 3, Oldest: "000000010000000000000007", OldestSince: t0,
		LastArchived: "000000010000000000000006", LastArchivedAt: t0.Add(-time.Minute),
		LastError: "job 9 failed: no tape", LastErrorAt: t0.Add(time.Minute), Reported: t0.Add(2 * time.Minute)}
	must(t, c.SetWALSpools("db1", []WALSpool{main, {Cluster: "other", Reported: t0}}))
	must(t, c.SetWALSpools("db2", []WALSpool{{Cluster: "main", LastArchived: "000000010000000000000001", LastArchivedAt: t0, Reported: t0}}))
	got, err := c.WALSpools("db1")
	must(t, err)
	main.Client = "db1"
	if len(got) != 2 || got[0] != main || got[1].Cluster != "other" || got[1].Files != 0 || !got[1].OldestSince.IsZero() {
		t.Fatalf("db1's spools: %+v\nwant %+v and an empty other", got, main)
	}
	// A later report replaces the client's rows: a cluster it no longer
	// names is forgotten, the other client's stay.
	must(t, c.SetWALSpools("db1", []WALSpool{{Cluster: "main", LastArchived: "000000010000000000000009", LastArchivedAt: t0, Reported: t0}}))
	all, err := c.WALSpools("")
	must(t, err)
	if len(all) != 2 || all[0].Client != "db1" || all[0].Files != 0 || all[0].LastArchived != "000000010000000000000009" || all[1].Client != "db2" {
		t.Fatalf("after db1's second report: %+v", all)
	}
	if err := c.SetWALSpools("db1", []WALSpool{{Cluster: "main", Files: -1}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a negative file count: %v; want ErrInvalid", err)
	}
	must(t, c.RevokeClient("db1", t0))
	must(t, c.RemoveClient("db1"))
	if all, err := c.WALSpools(""); err != nil || len(all) != 1 || all[0].Client != "db2" {
		t.Errorf("a removed client's spools should go with it: %+v, %v", all, err)
	}
}
