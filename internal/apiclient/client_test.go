package apiclient

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"testing"
)

// A bulk stream gets a connection of its own in HTTP/1.1, while the other
// calls share HTTP/2: the data of a backup does not pass through HTTP/2's
// DATA frames and flow-control windows, nor wait behind the order polls.
func TestBulkStreamsUseHTTP1(t *testing.T) {
	protos := make(chan int, 2)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		protos <- r.ProtoMajor
		w.WriteHeader(http.StatusNoContent)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	c, err := New(srv.URL, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS13}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, tc := range []struct {
		name string
		do   func(*http.Request) (*http.Response, error)
		want int
	}{{"Do", c.Do, 2}, {"DoBulk", c.DoBulk, 1}} {
		req, err := c.NewRequest(t.Context(), "POST", "/agent/jobs/1/data", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := tc.do(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		resp.Body.Close()
		if got := <-protos; got != tc.want {
			t.Errorf("%s went over HTTP/%d; want HTTP/%d", tc.name, got, tc.want)
		}
	}
}
