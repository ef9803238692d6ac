package metrics

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Each request is counted under its status code (or <error>), method and
// host, as client-go's rest_client_requests_total; concurrent requests are
// all counted.
func TestRESTClientCountsRequests(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := NewRESTClient(reg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	c := &http.Client{Transport: m.RoundTripper(srv.Client().Transport)}
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			resp, err := c.Get(srv.URL + "/ok")
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
		})
	}
	wg.Wait()
	resp, err := c.Post(srv.URL+"/missing", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	failing := &http.Client{Transport: m.RoundTripper(roundTripFunc(func(*http.Request) (*http.Response, error) {
		return nil, errors.New("connection refused")
	}))}
	if _, err := failing.Get("https://unreachable:6443/api"); err == nil {
		t.Fatal("the failing transport succeeded")
	}
	host := strings.TrimPrefix(srv.URL, "http://")
	want := `
# HELP rest_client_requests_total Number of HTTP requests, partitioned by status code, method, and host.
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="` + host + `",method="GET"} 20
rest_client_requests_total{code="404",host="` + host + `",method="POST"} 1
rest_client_requests_total{code="<error>",host="unreachable:6443",method="GET"} 1
`
	if err := testutil.CollectAndCompare(reg, strings.NewReader(want), "rest_client_requests_total"); err != nil {
		t.Error(err)
	}
	if _, err := NewRESTClient(nil); err == nil {
		t.Error("nil registerer accepted")
	}
	if _, err := NewRESTClient(reg); err == nil {
		t.Error("registering twice accepted")
	}
}
