package reflector

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
)

// httpStep is one request the scripted API server expects (its query,
// without timeoutSeconds) and what it answers: a status and body, or a
// stream of watch events; the last step's stream stays open.
type httpStep struct {
	query  string
	code   int
	header map[string]string
	body   string
	events []string
}

// scriptedAPI serves steps in order over HTTP.
type scriptedAPI struct {
	t        *testing.T
	mu       sync.Mutex // guards steps, got
	steps    []httpStep
	got      []string
	finished chan struct{} // closed when the last step is being served
}

func (a *scriptedAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if r.URL.Query().Get("watch") == "true" {
		if ts := q.Get("timeoutSeconds"); ts < "300" || ts > "600" || len(ts) != 3 {
			a.t.Errorf("watch timeoutSeconds %q", ts)
		}
	}
	q.Del("timeoutSeconds")
	query := q.Encode()
	a.mu.Lock()
	a.got = append(a.got, query)
	if len(a.steps) == 0 {
		a.mu.Unlock()
		a.t.Errorf("unexpected request %q", query)
		w.WriteHeader(500)
		return
	}
	s := a.steps[0]
	a.steps = a.steps[1:]
	last := len(a.steps) == 0
	a.mu.Unlock()
	if s.query != query {
		a.t.Errorf("request %q, want %q", query, s.query)
	}
	for k, v := range s.header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	if s.code == 0 {
		s.code = 200
	}
	w.WriteHeader(s.code)
	io.WriteString(w, s.body)
	for _, ev := range s.events {
		io.WriteString(w, ev+"\n")
		w.(http.Flusher).Flush()
	}
	if last {
		close(a.finished)
		<-r.Context().Done()
	}
}

func ev(typ, name, rv string) string {
	return `{"type":"` + typ + `","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"` + name + `","namespace":"ns","resourceVersion":"` + rv + `"}}}`
}

func list(rv string, pods ...string) string {
	items := make([]string, len(pods))
	for i, p := range pods {
		name, prv, _ := strings.Cut(p, "@")
		items[i] = `{"metadata":{"name":"` + name + `","namespace":"ns","resourceVersion":"` + prv + `"}}`
	}
	return `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"` + rv + `"},"items":[` + strings.Join(items, ",") + `]}`
}

const (
	qWatchList = "allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&watch=true"
	status410  = `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 10 (14)","reason":"Expired","code":410}}`
	status422  = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled","reason":"Invalid","code":422}`
)

// TestOverHTTP runs the reflector with the REST ListerWatcher against
// scripted API servers speaking the Kubernetes wire protocol.
func TestOverHTTP(t *testing.T) {
	tests := []struct {
		name  string
		steps []httpStep
		store []string
	}{{
		name: "watch-list unsupported (422): list, watch, 410 with a delete in the gap, consistent relist",
		steps: []httpStep{
			{query: qWatchList, code: 422, body: status422},
			{query: "limit=500&resourceVersion=0", body: list("10", "a@1", "b@2")},
			{query: "allowWatchBookmarks=true&resourceVersion=10&watch=true", events: []string{ev("MODIFIED", "a", "11"), ev("BOOKMARK", "", "12"), status410}},
			{query: "limit=500", body: list("20", "a@11", "c@15")},
			{query: "allowWatchBookmarks=true&resourceVersion=20&watch=true", events: []string{ev("ADDED", "d", "21")}},
		},
		store: []string{"Replace 10 [a@1,b@2]", "Update a@11", "Bookmark 12", "Replace 20 [a@11,c@15]", "Add d@21"},
	}, {
		name: "watch-list supported: one Replace at the end bookmark, then the same stream",
		steps: []httpStep{
			{query: qWatchList, events: []string{ev("ADDED", "a", "5"), ev("ADDED", "b", "7"),
				`{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"10","annotations":{"k8s.io/initial-events-end":"true"}}}}`,
				ev("DELETED", "b", "11")}},
		},
		store: []string{"Replace 10 [a@5,b@7]", "Delete b@11"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			api := &scriptedAPI{t: t, steps: tc.steps, finished: make(chan struct{})}
			srv := newServer(t, api.ServeHTTP)
			lw, err := NewRESTListerWatcher[*corev1.Pod](&rest.Config{Host: srv.URL}, podsGVR, "ns", RESTOptions[*corev1.Pod]{})
			if err != nil {
				t.Fatal(err)
			}
			st := &recStore{changed: make(chan struct{}, 1)}
			r, err := New[*corev1.Pod](lw, st, Options{})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- r.Run(ctx) }()
			<-api.finished
			st.waitFor(len(tc.store)) // the last stream's events
			cancel()
			<-done
			if got := st.transcript(); !slices.Equal(got, tc.store) {
				t.Errorf("store calls\n got %q\nwant %q", got, tc.store)
			}
		})
	}
}
