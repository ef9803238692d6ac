package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Over HTTP, the history evicted by the byte bound answers as an etcd
// compaction: an exact list or a watch from before the oldest retained
// revision get kube-apiserver's 410 Expired, and a watch from it gets
// every event after it.
func TestHistoryBytesOverHTTP(t *testing.T) {
	s := newTestServer(t, Options{Token: "t", HistoryBytes: 200 << 10})
	const cms = "/api/v1/namespaces/default/configmaps"
	var rvs []string
	for i := range 20 { // 20 kB each: the first ones are evicted
		body := fmt.Sprintf(`{"metadata":{"name":"cm%d"},"data":{"k":%q}}`, i, strings.Repeat("x", 20_000))
		rec := serveOnce(t, s, http.MethodPost, cms, "application/json", body)
		if rec.Code != http.StatusCreated {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
		o, err := decodeMap(rec.Body.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		rvs = append(rvs, meta(o)["resourceVersion"].(string))
	}
	watch := func(rv string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		req := httptest.NewRequest(http.MethodGet, cms+"?watch=true&resourceVersion="+rv, nil).WithContext(ctx)
		req.Header.Set("Authorization", "Bearer t")
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		return rec.Body.String()
	}
	if got := watch(rvs[0]); !strings.Contains(got, `"type":"ERROR"`) || !strings.Contains(got, `"reason":"Expired"`) || !strings.Contains(got, `"code":410`) ||
		!strings.Contains(got, "too old resource version: "+rvs[0]) {
		t.Fatalf("watch from an evicted revision: %s", got)
	}
	if rec := serveOnce(t, s, http.MethodGet, cms+"?resourceVersionMatch=Exact&resourceVersion="+rvs[0], "", ""); rec.Code != http.StatusGone {
		t.Fatalf("exact list at an evicted revision: %d %s", rec.Code, rec.Body)
	}
	// The oldest revision a watch may start from is the newest evicted
	// one (the history after it is complete): find it, and check that the
	// watch from it gets every later create. The watches' frames count in
	// the history's bytes: the first search's watch frames the retained
	// events, which evicts more; the second finds the revision for good.
	find := func() int {
		for i, rv := range rvs {
			if !strings.Contains(watch(rv), `"type":"ERROR"`) {
				return i
			}
		}
		return -1
	}
	find()
	first := find()
	if first < 1 || first > 18 {
		t.Fatalf("the first revision a watch may start from is #%d of 20", first)
	}
	got := watch(rvs[first])
	if n := strings.Count(got, `"type":"ADDED"`); n != len(rvs)-1-first || strings.Contains(got, "ERROR") {
		t.Fatalf("watch from the oldest retained revision: %d events: %.300s", n, got)
	}
	if rec := serveOnce(t, s, http.MethodGet, cms+"?resourceVersionMatch=Exact&resourceVersion="+rvs[first], "", ""); rec.Code != http.StatusOK {
		t.Fatalf("exact list at the oldest retained revision: %d %s", rec.Code, rec.Body)
	}
	if n := s.store.HistoryBytes(); n > 200<<10 {
		t.Fatalf("history costs %d", n)
	}
}
