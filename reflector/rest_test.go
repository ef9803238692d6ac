package reflector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

var podsGVR = corev1.SchemeGroupVersion.WithResource("pods")

const podListPage1 = `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"10","continue":"tok1","remainingItemCount":1},
"items":[{"metadata":{"name":"a","namespace":"ns","resourceVersion":"5","labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"nginx"}]},"status":{"phase":"Running"}}]}`

const podListPage2 = `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"10"},"unknownField":[1,{"x":null}],
"items":[{"metadata":{"name":"b","namespace":"ns","resourceVersion":"7"},"spec":{"containers":[{"name":"c","image":"redis","ports":[{"containerPort":6379}]}]}}]}`

// watchStream is what kube-apiserver streams for a watch-list: initial
// events, the end bookmark, a change, and a 410 ERROR event.
var watchStream = []string{
	`{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"ns","resourceVersion":"5"}}}`,
	`{"object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"b","namespace":"ns","resourceVersion":"7"}},"type":"ADDED"}`,
	`{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"10","annotations":{"k8s.io/initial-events-end":"true"}}}}`,
	`{"type":"MODIFIED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"ns","resourceVersion":"11"},"status":{"phase":"Running"}}}`,
	`{"type":"DELETED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"b","namespace":"ns","resourceVersion":"12"}}}`,
	`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 5 (12)","reason":"Expired","code":410}}`,
}

// recordingServer serves handler and records the requests' URLs.
type recordingServer struct {
	*httptest.Server
	mu   sync.Mutex // guards urls
	urls []*url.URL
}

func newServer(t *testing.T, h http.HandlerFunc) *recordingServer {
	s := &recordingServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.urls = append(s.urls, r.URL)
		s.mu.Unlock()
		if got := r.Header.Get("Accept"); !strings.HasPrefix(got, "application/json") {
			t.Errorf("Accept %q", got)
		}
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *recordingServer) requests() []*url.URL {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.urls)
}

func writeStatus(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	io.WriteString(w, body)
}

func TestRESTList(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/namespaces/ns/pods" {
			writeStatus(w, 404, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
			return
		}
		if r.URL.Query().Get("continue") == "tok1" {
			writeStatus(w, 200, podListPage2)
			return
		}
		writeStatus(w, 200, podListPage1)
	})
	cfg := &rest.Config{Host: srv.URL}
	lw, err := NewRESTListerWatcher[*corev1.Pod](cfg, podsGVR, "ns", RESTOptions[*corev1.Pod]{
		LabelSelector: "app=web", FieldSelector: "status.phase=Running"})
	if err != nil {
		t.Fatal(err)
	}
	l, err := lw.List(t.Context(), metav1.ListOptions{ResourceVersion: "0", Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	if l.ResourceVersion != "10" || l.Continue != "tok1" || len(l.Items) != 1 {
		t.Fatalf("page 1: rv %q continue %q items %d", l.ResourceVersion, l.Continue, len(l.Items))
	}
	a := l.Items[0]
	if a.Name != "a" || a.Namespace != "ns" || a.ResourceVersion != "5" || a.Labels["app"] != "web" ||
		a.Spec.Containers[0].Image != "nginx" || a.Status.Phase != corev1.PodRunning {
		t.Errorf("pod a decoded as %+v", a)
	}
	l, err = lw.List(t.Context(), metav1.ListOptions{Limit: 500, Continue: "tok1"})
	if err != nil {
		t.Fatal(err)
	}
	if l.Continue != "" || len(l.Items) != 1 || l.Items[0].Spec.Containers[0].Ports[0].ContainerPort != 6379 {
		t.Errorf("page 2: %+v", l)
	}
	reqs := srv.requests()
	want := []url.Values{
		{"labelSelector": {"app=web"}, "fieldSelector": {"status.phase=Running"}, "resourceVersion": {"0"}, "limit": {"500"}},
		{"labelSelector": {"app=web"}, "fieldSelector": {"status.phase=Running"}, "continue": {"tok1"}, "limit": {"500"}},
	}
	for i, u := range reqs {
		if got := u.Query(); fmt.Sprint(got) != fmt.Sprint(want[i]) {
			t.Errorf("request %d query %v, want %v", i, got, want[i])
		}
	}
}

func TestRESTListUnstructured(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { writeStatus(w, 200, podListPage2) })
	lw, err := NewRESTListerWatcher[*unstructured.Unstructured](&rest.Config{Host: srv.URL}, podsGVR, "", RESTOptions[*unstructured.Unstructured]{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := lw.List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u := l.Items[0]
	if u.GetKind() != "Pod" || u.GetAPIVersion() != "v1" || u.GetName() != "b" || u.GetResourceVersion() != "7" {
		t.Errorf("decoded %v", u.Object)
	}
	// Numbers are int64, as apimachinery's decoders make them.
	containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "containers")
	if len(containers) != 1 {
		t.Fatalf("containers %v", containers)
	}
	ports, _, _ := unstructured.NestedSlice(containers[0].(map[string]any), "ports")
	if len(ports) != 1 {
		t.Fatalf("ports %v", ports)
	}
	if p, ok := ports[0].(map[string]any)["containerPort"].(int64); !ok || p != 6379 {
		t.Errorf("containerPort %#v, want int64 6379", ports[0])
	}
	if got := srv.requests()[0].Path; got != "/api/v1/pods" {
		t.Errorf("path %q", got)
	}
}

func TestRESTPaths(t *testing.T) {
	tests := []struct {
		host, ns string
		gvr      struct{ g, v, r string }
		want     string
	}{
		{"HOST", "", struct{ g, v, r string }{"", "v1", "nodes"}, "/api/v1/nodes"},
		{"HOST", "kube-system", struct{ g, v, r string }{"apps", "v1", "deployments"}, "/apis/apps/v1/namespaces/kube-system/deployments"},
		{"HOST/prefix", "ns", struct{ g, v, r string }{"example.com", "v1alpha1", "widgets"}, "/prefix/apis/example.com/v1alpha1/namespaces/ns/widgets"},
	}
	for _, tc := range tests {
		var got string
		srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
			got = r.URL.Path
			writeStatus(w, 200, `{"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}`)
		})
		gvr := appsv1.SchemeGroupVersion.WithResource("x")
		gvr.Group, gvr.Version, gvr.Resource = tc.gvr.g, tc.gvr.v, tc.gvr.r
		lw, err := NewRESTListerWatcher[*metav1.PartialObjectMetadata](&rest.Config{Host: strings.Replace(tc.host, "HOST", srv.URL, 1)}, gvr, tc.ns, RESTOptions[*metav1.PartialObjectMetadata]{})
		if err != nil {
			t.Fatal(err)
		}
		l, err := lw.List(t.Context(), metav1.ListOptions{})
		if err != nil || l.ResourceVersion != "1" || len(l.Items) != 0 {
			t.Errorf("list: %+v, %v", l, err)
		}
		if got != tc.want {
			t.Errorf("path %q, want %q", got, tc.want)
		}
	}
}

func TestRESTWatchStream(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		for _, ev := range watchStream {
			io.WriteString(w, ev+"\n")
			w.(http.Flusher).Flush() // chunked: one event per chunk
		}
	})
	lw, err := NewRESTListerWatcher[*corev1.Pod](&rest.Config{Host: srv.URL}, podsGVR, "ns", RESTOptions[*corev1.Pod]{})
	if err != nil {
		t.Fatal(err)
	}
	yes, timeout := true, int64(333)
	wt, err := lw.Watch(t.Context(), metav1.ListOptions{ResourceVersion: "", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		SendInitialEvents: &yes, AllowWatchBookmarks: true, TimeoutSeconds: &timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer wt.Stop()
	var got []string
	for {
		ev, err := wt.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == watch.Error {
			serr := statusError(ev.Status)
			if !apierrors.IsResourceExpired(serr) || !isRVUnavailable(serr) {
				t.Errorf("ERROR event %v is not an Expired error", serr)
			}
			got = append(got, "ERROR "+fmt.Sprint(ev.Status.Code))
			continue
		}
		got = append(got, fmt.Sprintf("%s %s@%s %v", ev.Type, ev.Object.Name, ev.Object.ResourceVersion, ev.Object.Annotations))
	}
	want := []string{"ADDED a@5 map[]", "ADDED b@7 map[]", "BOOKMARK @10 map[k8s.io/initial-events-end:true]",
		"MODIFIED a@11 map[]", "DELETED b@12 map[]", "ERROR 410"}
	if !slices.Equal(got, want) {
		t.Errorf("events\n got %q\nwant %q", got, want)
	}
	q := srv.requests()[0].Query()
	wantQ := url.Values{"watch": {"true"}, "resourceVersionMatch": {"NotOlderThan"}, "sendInitialEvents": {"true"},
		"allowWatchBookmarks": {"true"}, "timeoutSeconds": {"333"}}
	if fmt.Sprint(q) != fmt.Sprint(wantQ) {
		t.Errorf("query %v, want %v", q, wantQ)
	}
}

func TestRESTErrors(t *testing.T) {
	tests := []struct {
		name   string
		code   int
		header map[string]string
		body   string
		check  func(error) bool
		delay  int
	}{
		{"410 Expired Status", 410, nil,
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}`,
			func(err error) bool { return apierrors.IsResourceExpired(err) && isRVUnavailable(err) }, 0},
		{"410 without a Status", 410, nil, "gone",
			func(err error) bool { return apierrors.IsGone(err) && isRVUnavailable(err) }, 0},
		{"429 Retry-After header, Status without details", 429, map[string]string{"Retry-After": "3"},
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"slow down","reason":"TooManyRequests","code":429}`,
			apierrors.IsTooManyRequests, 3},
		{"429 Retry-After header, no body", 429, map[string]string{"Retry-After": "5"}, "",
			apierrors.IsTooManyRequests, 5},
		{"429 Status with its own retryAfterSeconds", 429, map[string]string{"Retry-After": "5"},
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","reason":"TooManyRequests","details":{"retryAfterSeconds":2},"code":429}`,
			apierrors.IsTooManyRequests, 2},
		{"500 with text", 500, nil, "boom", apierrors.IsInternalError, 0},
		{"422 watch-list not supported", 422, nil,
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled","reason":"Invalid","code":422}`,
			isWatchListRejected, 0},
		{"504 too large resource version", 504, nil,
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Too large resource version: 100, current: 50","reason":"Timeout","details":{"causes":[{"reason":"ResourceVersionTooLarge","message":"Too large resource version"}],"retryAfterSeconds":1},"code":504}`,
			isTooLargeResourceVersion, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				writeStatus(w, tc.code, tc.body)
			})
			lw, err := NewRESTListerWatcher[*corev1.Pod](&rest.Config{Host: srv.URL}, podsGVR, "", RESTOptions[*corev1.Pod]{})
			if err != nil {
				t.Fatal(err)
			}
			_, lerr := lw.List(t.Context(), metav1.ListOptions{})
			_, werr := lw.Watch(t.Context(), metav1.ListOptions{})
			for _, err := range []error{lerr, werr} {
				var se *apierrors.StatusError
				if !errors.As(err, &se) {
					t.Fatalf("error %T %v is not a StatusError", err, err)
				}
				if int(se.ErrStatus.Code) != tc.code || !tc.check(err) {
					t.Errorf("error %v (code %d) fails its check", err, se.ErrStatus.Code)
				}
				d, _ := apierrors.SuggestsClientDelay(err)
				if d != tc.delay {
					t.Errorf("suggested delay %d, want %d", d, tc.delay)
				}
			}
		})
	}
}

func TestNewRESTListerWatcherValidates(t *testing.T) {
	cfg := &rest.Config{Host: "http://127.0.0.1:1"}
	if _, err := NewRESTListerWatcher[*corev1.Pod](nil, podsGVR, "", RESTOptions[*corev1.Pod]{}); err == nil {
		t.Error("nil config accepted")
	}
	if _, err := NewRESTListerWatcher[*corev1.Pod](cfg, corev1.SchemeGroupVersion.WithResource(""), "", RESTOptions[*corev1.Pod]{}); err == nil {
		t.Error("empty resource accepted")
	}
	if _, err := NewRESTListerWatcher[*corev1.Pod](cfg, corev1.SchemeGroupVersion.WithResource(".."), "", RESTOptions[*corev1.Pod]{}); err == nil {
		t.Error("resource \"..\" accepted")
	}
	if _, err := NewRESTListerWatcher[*corev1.Pod](cfg, podsGVR, "Bad/NS", RESTOptions[*corev1.Pod]{}); err == nil {
		t.Error("bad namespace accepted")
	}
	if _, err := NewRESTListerWatcher[*corev1.Pod](cfg, podsGVR, "", RESTOptions[*corev1.Pod]{LabelSelector: "a in (b"}); err == nil {
		t.Error("bad label selector accepted")
	}
	if _, err := NewRESTListerWatcher[*corev1.Pod](cfg, podsGVR, "", RESTOptions[*corev1.Pod]{FieldSelector: "a"}); err == nil {
		t.Error("bad field selector accepted")
	}
	if _, err := NewRESTListerWatcher[Object](cfg, podsGVR, "", RESTOptions[Object]{}); err == nil {
		t.Error("interface type without New accepted")
	}
	if _, err := NewRESTListerWatcher[Object](cfg, podsGVR, "", RESTOptions[Object]{New: func() Object { return &corev1.Pod{} }}); err != nil {
		t.Errorf("interface type with New: %v", err)
	}
}

// A watch blocked on a quiet server ends promptly when its context does.
func TestRESTWatchCancel(t *testing.T) {
	release := make(chan struct{})
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	lw, err := NewRESTListerWatcher[*corev1.Pod](&rest.Config{Host: srv.URL}, podsGVR, "", RESTOptions[*corev1.Pod]{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	w, err := lw.Watch(ctx, metav1.ListOptions{ResourceVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	done := make(chan error, 1)
	go func() { _, err := w.Next(); done <- err }()
	cancel()
	select {
	case err := <-done:
		if err == nil || errors.Is(err, io.EOF) {
			t.Errorf("Next after cancel: %v, want a context error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Next did not return after cancel")
	}
}

// A client Timeout (rest.Config.Timeout) bounds lists but does not cut
// watches.
func TestRESTClientTimeoutSparesWatches(t *testing.T) {
	release := make(chan struct{})
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") != "true" {
			select {
			case <-time.After(2 * time.Second):
			case <-r.Context().Done():
			}
			return
		}
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, watchStream[0]+"\n")
	})
	lw, err := NewRESTListerWatcher[*corev1.Pod](&rest.Config{Host: srv.URL, Timeout: 100 * time.Millisecond}, podsGVR, "", RESTOptions[*corev1.Pod]{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lw.List(t.Context(), metav1.ListOptions{}); err == nil {
		t.Error("list outlived the client timeout")
	}
	w, err := lw.Watch(t.Context(), metav1.ListOptions{ResourceVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	time.AfterFunc(300*time.Millisecond, func() { close(release) })
	ev, err := w.Next()
	if err != nil || ev.Type != watch.Added {
		t.Errorf("watch after the client timeout: %v, %v", ev.Type, err)
	}
}

// A stream cut inside an event is a broken stream, not a normal end.
func TestRESTWatchCutMidEvent(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		io.WriteString(w, watchStream[0]+"\n"+watchStream[1][:40])
	})
	lw, err := NewRESTListerWatcher[*corev1.Pod](&rest.Config{Host: srv.URL}, podsGVR, "", RESTOptions[*corev1.Pod]{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := lw.Watch(t.Context(), metav1.ListOptions{ResourceVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if ev, err := w.Next(); err != nil || ev.Object.Name != "a" {
		t.Fatalf("first event: %v, %v", ev, err)
	}
	_, err = w.Next()
	if !errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		t.Errorf("cut stream: %v, want io.ErrUnexpectedEOF", err)
	}
}

// TestRESTDropManagedFields: with DropManagedFields, listed and watched
// objects come without managedFields, typed (skipped while decoding) or
// unstructured (removed), on the fast and the standard paths; without it
// they keep them.
func TestRESTDropManagedFields(t *testing.T) {
	pod := realisticPod(1) // with managedFields
	escaped := `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"e","resourceVersion":"3","annotations":{"u":"a\u0026b"},"managedFields":[{"manager":"m","operation":"Update"}]}}`
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("watch") == "true" {
			for _, o := range []string{pod, escaped} {
				io.WriteString(w, `{"type":"MODIFIED","object":`+o+"}\n")
			}
			// An ERROR event sends the rest of the stream to the standard path.
			io.WriteString(w, watchStream[5]+"\n"+`{"type":"ADDED","object":`+pod+"}\n")
			return
		}
		io.WriteString(w, `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9"},"items":[`+pod+","+escaped+`]}`)
	})
	for _, drop := range []bool{true, false} {
		t.Run(fmt.Sprint("typed/drop=", drop), func(t *testing.T) {
			checkDropManagedFields[*corev1.Pod](t, srv.URL, drop)
		})
		t.Run(fmt.Sprint("unstructured/drop=", drop), func(t *testing.T) {
			checkDropManagedFields[*unstructured.Unstructured](t, srv.URL, drop)
		})
	}
}

// checkDropManagedFields lists (2 objects) and watches (3 objects) the pods
// at host with DropManagedFields drop, and checks that the objects carry
// managedFields exactly when they are not dropped.
func checkDropManagedFields[T Object](t *testing.T, host string, drop bool) {
	lw, err := NewRESTListerWatcher[T](&rest.Config{Host: host}, podsGVR, "", RESTOptions[T]{DropManagedFields: drop})
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, objs []metav1.Object, want int) {
		t.Helper()
		if len(objs) != want {
			t.Fatalf("%s: %d objects, want %d", what, len(objs), want)
		}
		for _, o := range objs {
			if has := o.GetManagedFields() != nil; has == drop {
				t.Errorf("%s %s: managedFields present %v with DropManagedFields %v", what, o.GetName(), has, drop)
			}
		}
	}
	l, err := lw.List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var listed []metav1.Object
	for _, it := range l.Items {
		listed = append(listed, it)
	}
	check("list", listed, 2)
	watched, err := watchObjects(t, lw)
	if err != nil {
		t.Fatal(err)
	}
	check("watch", watched, 3)
}

// watchObjects watches lw to the end of the stream and returns the objects
// of its object events.
func watchObjects[T Object](t *testing.T, lw *RESTListerWatcher[T]) ([]metav1.Object, error) {
	wt, err := lw.Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	defer wt.Stop()
	var out []metav1.Object
	for {
		ev, err := wt.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		if ev.Type != watch.Error {
			out = append(out, ev.Object)
		}
	}
}
