package informer

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// fakeDiscovery is an API server, in process (an http.RoundTripper, so
// that it works within a synctest bubble), that serves only discovery:
// group documents (/apis/<group>) and group-version documents (/api/v1,
// /apis/<group>/<version>), 404 for others. A path in hang blocks until
// its channel is closed or the request ends; its answer is the document as
// it was when the request arrived.
type fakeDiscovery struct {
	// arrived receives the path of each request as it arrives (buffered;
	// when full, paths are dropped).
	arrived chan string

	mu sync.Mutex // guards docs, hang, hits, ended
	// docs are the documents by path.
	docs map[string]any
	hang map[string]chan struct{}
	// hits counts the requests per path; ended those whose context ended
	// before they were answered.
	hits, ended map[string]int
}

func newFakeDiscovery() *fakeDiscovery {
	return &fakeDiscovery{
		arrived: make(chan string, 64),
		docs:    map[string]any{},
		hang:    map[string]chan struct{}{},
		hits:    map[string]int{},
		ended:   map[string]int{},
	}
}

// mapper returns a discovery mapper that asks f.
func (f *fakeDiscovery) mapper(t testing.TB) *discoveryMapper {
	t.Helper()
	m, err := NewDiscoveryMapper(&rest.Config{Host: "http://discovery.invalid"}, &http.Client{Transport: f})
	if err != nil {
		t.Fatal(err)
	}
	return m.(*discoveryMapper)
}

// serveGV adds the document of group/version with the given resources
// (name → kind, namespaced), and makes version the group's preferred one.
func (f *fakeDiscovery) serveGV(group, version string, resources ...metav1.APIResource) {
	f.mu.Lock()
	defer f.mu.Unlock()
	gv := version
	p := "/api/" + version
	if group != "" {
		gv = group + "/" + version
		p = "/apis/" + group + "/" + version
		f.docs["/apis/"+group] = metav1.APIGroup{
			TypeMeta:         metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"},
			Name:             group,
			Versions:         []metav1.GroupVersionForDiscovery{{GroupVersion: gv, Version: version}},
			PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: gv, Version: version},
		}
	}
	f.docs[p] = metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: gv,
		APIResources: resources,
	}
}

// hangOn makes requests for path block until the returned func is called
// (or they end).
func (f *fakeDiscovery) hangOn(path string) (release func()) {
	ch := make(chan struct{})
	f.mu.Lock()
	f.hang[path] = ch
	f.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			delete(f.hang, path)
			f.mu.Unlock()
			close(ch)
		})
	}
}

func (f *fakeDiscovery) requests(path string) (hits, ended int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hits[path], f.ended[path]
}

func (f *fakeDiscovery) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	if !f.serve(rec, r) {
		return nil, r.Context().Err()
	}
	resp := rec.Result()
	resp.Request = r
	return resp, nil
}

// serve answers r; false when r ended before its answer.
func (f *fakeDiscovery) serve(w http.ResponseWriter, r *http.Request) bool {
	p := strings.TrimSuffix(r.URL.Path, "/")
	f.mu.Lock()
	f.hits[p]++
	hang := f.hang[p]
	// The answer is the document as it is when the request arrives.
	doc, ok := f.docs[p]
	f.mu.Unlock()
	select {
	case f.arrived <- p:
	default:
	}
	if hang != nil {
		select {
		case <-hang:
		case <-r.Context().Done():
			f.mu.Lock()
			f.ended[p]++
			f.mu.Unlock()
			return false
		}
	}
	if !ok {
		http.NotFound(w, r)
		return true
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(doc)
	return true
}

// apiResource is a namespaced resource of kind, named as its lower-case plural.
func apiResource(name, kind string) metav1.APIResource {
	return metav1.APIResource{Name: name, Kind: kind, Namespaced: true, Verbs: metav1.Verbs{"get", "list", "watch"}}
}
