package liveview

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"kloop.dev/kloop/controller"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/internal/testutil"
)

func newTestServer(t *testing.T) (*httptest.Server, *atomic.Uint64) {
	t.Helper()
	var events atomic.Uint64
	tl, err := NewTimeline(TimelineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tl.Observe("c", reconciled("a", 1, nil, nil))
	s, err := New(Options{
		Interval: 10 * time.Millisecond,
		Timeline: tl,
		Read: func(s *Sample) {
			s.Informers = []informer.InformerStats{{Name: "configmaps", Kind: "ConfigMap", Events: events.Add(5)}}
			s.Controllers = map[string]controller.Stats{"c": {Success: 1}}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv, &events
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestServerRoutes(t *testing.T) {
	srv, _ := newTestServer(t)
	tests := []struct {
		path string
		code int
		has  string
	}{
		{"/", 200, "<title>kloop live view</title>"},
		{"/stats", 200, `"kind":"ConfigMap"`},
		{"/objects", 200, `"name":"a"`},
		{"/objects?limit=x", 400, "not a non-negative integer"},
		{"/timeline?controller=c&namespace=ns&name=a", 200, `"reconcileID":"id-1"`},
		{"/timeline?controller=c&namespace=ns&name=zz", 404, "no timeline for c ns/zz"},
		{"/timeline?name=a", 400, "controller and name are required"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			code, body := get(t, srv.URL+tt.path)
			if code != tt.code || !strings.Contains(body, tt.has) {
				t.Fatalf("GET %s: %d %q, want %d with %q", tt.path, code, body, tt.code, tt.has)
			}
		})
	}
}

func TestServerEvents(t *testing.T) {
	srv, _ := newTestServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	var frames []View
	for len(frames) < 3 && sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var v View
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatal(err)
		}
		frames = append(frames, v)
	}
	if len(frames) < 3 {
		t.Fatalf("%d frames: %v", len(frames), sc.Err())
	}
	if e0, e2 := frames[0].Informers[0].Events, frames[2].Informers[0].Events; e2 <= e0 || frames[2].Informers[0].EventsPerSec <= 0 {
		t.Errorf("the figures do not move: events %d then %d, %v/s", e0, e2, frames[2].Informers[0].EventsPerSec)
	}
}

// Past MaxStreams open streams, the next is answered 503 (each stream
// samples the whole pipeline); one that ends frees its place.
func TestServerStreamsBounded(t *testing.T) {
	srv, _ := newTestServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	open := func() *http.Response {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/events", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	var streams []*http.Response
	for range MaxStreams {
		resp := open()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("stream %d: %s", len(streams), resp.Status)
		}
		streams = append(streams, resp)
	}
	over := open()
	over.Body.Close()
	if over.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("stream %d: %s, want 503", MaxStreams+1, over.Status)
	}
	streams[0].Body.Close()
	testutil.Eventually(t, "a place freed", func() bool {
		resp := open()
		defer resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	for _, r := range streams[1:] {
		r.Body.Close()
	}
}

func TestNewOptions(t *testing.T) {
	for _, o := range []Options{{}, {Read: func(*Sample) {}, Interval: -1}} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
}
