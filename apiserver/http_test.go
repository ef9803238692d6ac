package apiserver_test

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"kloop.dev/kloop/apiserver/apiservertest"
)

// rawClient sends plain HTTP requests to a server.
type rawClient struct {
	t      *testing.T
	cfg    *rest.Config
	client *http.Client
}

func newRaw(t *testing.T, env *apiservertest.Env) *rawClient {
	cfg := env.Config()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(cfg.CAData)
	// A client without client-go's auth transport: each request sets its own header.
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	t.Cleanup(c.CloseIdleConnections)
	return &rawClient{t: t, cfg: cfg, client: c}
}

// do sends a request; headers alternate names and values.
func (c *rawClient) do(method, path, body string, headers ...string) (*http.Response, []byte) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.cfg.Host+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.cfg.BearerToken)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	resp, err := c.client.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp, b
}

// httpError is a request and the error the server answers it with.
type httpError struct {
	name, method, path, body string // path: under /api, or relative to the namespace's configmaps
	headers                  []string
	code                     int
	reason                   metav1.StatusReason
	message                  string // in the Status's message
	// alt is another answer Kubernetes allows, if any.
	altCode   int
	altReason metav1.StatusReason
}

// checkHTTPErrors sends each request and checks the Status it gets back.
func checkHTTPErrors(t *testing.T, env *apiservertest.Env, cases []httpError) {
	c := newRaw(t, env)
	cms := "/api/v1/namespaces/" + env.Namespace + "/configmaps"
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.path
			if !strings.HasPrefix(path, "/api") {
				path = cms + path
			}
			resp, b := c.do(tc.method, path, tc.body, tc.headers...)
			var st metav1.Status
			if err := json.Unmarshal(b, &st); err != nil {
				t.Fatalf("body is not a Status: %v: %s", err, b)
			}
			code, reason := tc.code, tc.reason
			if tc.altCode != 0 && resp.StatusCode == tc.altCode {
				code, reason = tc.altCode, tc.altReason
			}
			if resp.StatusCode != code || int(st.Code) != code || st.Reason != reason || st.Kind != "Status" || !strings.Contains(st.Message, tc.message) {
				t.Fatalf("got %d %+v, want %d %s %q", resp.StatusCode, st, code, reason, tc.message)
			}
		})
	}
}

func TestHTTPErrors(t *testing.T) {
	big := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"x":"` + strings.Repeat("a", 3<<20) + `"}}`
	forEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		checkHTTPErrors(t, env, []httpError{
			// Without credentials: 401, or 403 where anonymous requests are
			// enabled (kube-apiserver's default) and RBAC refuses system:anonymous.
			{name: "no token", method: "GET", headers: []string{"Authorization", ""}, code: 401, reason: metav1.StatusReasonUnauthorized, message: "", altCode: 403, altReason: metav1.StatusReasonForbidden},
			{name: "wrong token", method: "GET", headers: []string{"Authorization", "Bearer nope"}, code: 401, reason: metav1.StatusReasonUnauthorized, message: "Unauthorized"},
			{name: "too large", method: "POST", body: big, code: 413, reason: metav1.StatusReasonRequestEntityTooLarge, message: "limit is 3145728"},
			{name: "malformed json", method: "POST", body: `{"apiVersion":`, code: 400, reason: metav1.StatusReasonBadRequest, message: "couldn't get version/kind; json parse error"},
			{name: "not an object", method: "POST", body: `[1,2]`, code: 400, reason: metav1.StatusReasonBadRequest, message: "couldn't get version/kind; json parse error"},
			{name: "wrong apiVersion", method: "POST", body: `{"apiVersion":"apps/v1","kind":"ConfigMap","metadata":{"name":"x"}}`, code: 400, reason: metav1.StatusReasonBadRequest, message: `no kind "ConfigMap" is registered for version "apps/v1"`},
			{name: "wrong kind", method: "POST", body: `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"}}`, code: 400, reason: metav1.StatusReasonBadRequest, message: `Secret in version "v1" cannot be handled as a ConfigMap`},
			{name: "wrong field type", method: "POST", body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":5}`, code: 400, reason: metav1.StatusReasonBadRequest, message: `ConfigMap in version "v1" cannot be handled as a ConfigMap`},
			{name: "missing name", method: "POST", body: `{"apiVersion":"v1","kind":"ConfigMap"}`, code: 422, reason: metav1.StatusReasonInvalid, message: "name or generateName is required"},
			{name: "bad metadata", method: "POST", body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","labels":"nope"}}`, code: 400, reason: metav1.StatusReasonBadRequest, message: "metadata.labels"},
			{name: "strict unknown field", method: "POST", path: "?fieldValidation=Strict", body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"bogus":1}`, code: 400, reason: metav1.StatusReasonBadRequest, message: `unknown field "bogus"`},
			{name: "unknown resource", method: "GET", path: "/api/v1/widgets", code: 404, reason: metav1.StatusReasonNotFound, message: "could not find the requested resource"},
			{name: "unknown subresource", method: "GET", path: "/x/bogus", code: 404, reason: metav1.StatusReasonNotFound, message: "could not find"},
			{name: "not found", method: "GET", path: "/missing", code: 404, reason: metav1.StatusReasonNotFound, message: `configmaps "missing" not found`},
			{name: "bad continue", method: "GET", path: "?continue=zzz", code: 400, reason: metav1.StatusReasonBadRequest, message: "invalid continue"},
			{name: "post to a name", method: "POST", path: "/x", body: `{}`, code: 405, reason: metav1.StatusReasonMethodNotAllowed, message: "the server does not allow this method on the requested resource"},
			{name: "bad limit", method: "GET", path: "?limit=x", code: 400, reason: metav1.StatusReasonBadRequest, message: `parsing "x": invalid syntax`},
			{name: "bad patch type", method: "PATCH", path: "/x", body: `{}`, headers: []string{"Content-Type", "text/plain"}, code: 415, reason: metav1.StatusReasonUnsupportedMediaType, message: "415: Unsupported Media Type"},
			{name: "bad rv match", method: "GET", path: "?resourceVersionMatch=Exact", code: 422, reason: metav1.StatusReasonInvalid, message: "resourceVersionMatch is forbidden unless resourceVersion is provided"},
		})
	})
}

func TestHTTPBehaviour(t *testing.T) {
	forEachTarget(t, apiservertest.Options{}, testHTTPBehaviour)
}

func testHTTPBehaviour(t *testing.T, env *apiservertest.Env) {
	c := newRaw(t, env)
	cms := "/api/v1/namespaces/" + env.Namespace + "/configmaps"
	// Warn (the default) accepts unknown fields with a warning.
	resp, b := c.do("POST", cms, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"w"},"bogus":1}`)
	if resp.StatusCode != 201 || !strings.Contains(resp.Header.Get("Warning"), `unknown field \"bogus\"`) {
		t.Fatalf("warn: %d %q %s", resp.StatusCode, resp.Header.Get("Warning"), b)
	}
	// Dry run stores nothing.
	resp, _ = c.do("POST", cms+"?dryRun=All", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dry"}}`)
	if resp.StatusCode != 201 {
		t.Fatalf("dry run: %d", resp.StatusCode)
	}
	if resp, _ := c.do("GET", cms+"/dry", ""); resp.StatusCode != 404 {
		t.Fatalf("dry run stored the object: %d", resp.StatusCode)
	}
	// DELETE answers 200 with the object, also when a foreground deletion
	// waits for finalizers (202 only for the deprecated orphanDependents=false);
	// the foreground deletion's own finalizer is in the answer.
	c.do("POST", cms, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"held","finalizers":["x.io/y"]}}`)
	resp, b = c.do("DELETE", cms+"/held", `{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Foreground"}`)
	if resp.StatusCode != 200 || !strings.Contains(string(b), "deletionTimestamp") || !strings.Contains(string(b), `"foregroundDeletion"`) {
		t.Fatalf("foreground delete with finalizer: %d %s", resp.StatusCode, b)
	}
	resp, b = c.do("DELETE", cms+"/w", "")
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"name":"w"`) {
		t.Fatalf("delete: %d %s", resp.StatusCode, b)
	}
	// A body without kind (and apiVersion) takes them from the URL.
	for _, body := range []string{`{"metadata":{"name":"nokind"}}`, `{"apiVersion":"v1","metadata":{"name":"nokind2"}}`} {
		if resp, b := c.do("POST", cms, body); resp.StatusCode != 201 || !strings.Contains(string(b), `"kind":"ConfigMap"`) {
			t.Fatalf("create without kind: %d %s", resp.StatusCode, b)
		}
	}
	// An unknown group is a plain-text 404 from the end of the handler chain.
	if resp, b := c.do("GET", "/apis/nope.io/v1/things", ""); resp.StatusCode != 404 || strings.TrimSpace(string(b)) != "404 page not found" {
		t.Fatalf("unknown group: %d %s", resp.StatusCode, b)
	}
	// Table output, served as plain application/json (kind Table in the body).
	pods := "/api/v1/namespaces/" + env.Namespace + "/pods"
	c.do("POST", pods, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i"}]}}`)
	resp, b = c.do("GET", pods, "", "Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
	var tbl metav1.Table
	if err := json.Unmarshal(b, &tbl); err != nil || tbl.Kind != "Table" || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("table: %v %q %s", err, resp.Header.Get("Content-Type"), b)
	}
	var cols []string
	for _, c := range tbl.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	if strings.Join(cols, ",") != "Name,Ready,Status,Restarts,Age,IP,Node,Nominated Node,Readiness Gates" || len(tbl.Rows) != 1 || tbl.Rows[0].Cells[1] != "0/1" || tbl.Rows[0].Cells[2] != "Pending" {
		t.Fatalf("pod table %v %v", cols, tbl.Rows)
	}
	// Aggregated discovery.
	resp, b = c.do("GET", "/apis", "", "Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json")
	if resp.Header.Get("Content-Type") != "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList" || !strings.Contains(string(b), `"deployments"`) {
		t.Fatalf("aggregated discovery: %q %s", resp.Header.Get("Content-Type"), b)
	}
	// OpenAPI.
	if resp, b := c.do("GET", "/openapi/v3", ""); resp.StatusCode != 200 || !strings.Contains(string(b), "apis/apps/v1") {
		t.Fatalf("openapi v3: %d %s", resp.StatusCode, b)
	}
	// A watch is a stream of JSON lines; timeoutSeconds ends it. Without a
	// resourceVersion it starts with the current objects, ADDED.
	resp, b = c.do("GET", cms+"?watch=true&timeoutSeconds=1", "")
	sc := bufio.NewScanner(bytes.NewReader(b))
	var events []string
	for sc.Scan() {
		var ev struct {
			Type   string
			Object corev1.ConfigMap
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("watch line %q: %v", sc.Text(), err)
		}
		events = append(events, ev.Type+":"+ev.Object.Name)
	}
	slices.Sort(events)
	if resp.StatusCode != 200 || strings.Join(events, ",") != "ADDED:held,ADDED:kube-root-ca.crt,ADDED:nokind,ADDED:nokind2" {
		t.Fatalf("watch: %d %v", resp.StatusCode, events)
	}
}

// TestSlowWatcherDisconnected: a watch client that stops reading falls
// behind the history; the server ends its stream (writers are not slowed),
// and re-watching from the last revision it saw gets 410 Expired, after which
// the client relists. Embedded only: it depends on the embedded server's
// HistoryEvents window and its policy for slow watchers.
func TestSlowWatcherDisconnected(t *testing.T) {
	env, cs := embedded(t, apiservertest.Options{HistoryEvents: 20})
	cfg := env.Config()
	ctx := ctxT(t)
	cms := cs.CoreV1().ConfigMaps(env.Namespace)
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "big"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := &rawClient{t: t, cfg: cfg}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(cfg.CAData)
	c.client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	t.Cleanup(c.client.CloseIdleConnections)
	req, _ := http.NewRequest("GET", cfg.Host+"/api/v1/namespaces/"+env.Namespace+"/configmaps?watch=true&resourceVersion="+cm.ResourceVersion, nil)
	req.Header.Set("Authorization", "Bearer "+cfg.BearerToken)
	resp, err := c.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// Write much more than the socket buffers hold while the client does not read.
	payload := strings.Repeat("x", 64<<10)
	const writes = 200
	for i := range writes {
		cm.Data = map[string]string{"v": fmt.Sprint(i), "payload": payload}
		if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Now read: the stream ends early, without an error event.
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n, last := 0, ""
	for sc.Scan() {
		var ev struct {
			Type   string
			Object corev1.ConfigMap
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type != "MODIFIED" {
			t.Fatalf("unexpected %s event", ev.Type)
		}
		n, last = n+1, ev.Object.ResourceVersion
	}
	if n == 0 || n >= writes {
		t.Fatalf("the slow watch delivered %d of %d events; it should have been cut", n, writes)
	}
	// Re-watching from the last revision seen: 410, then a relist works.
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: last})
	if err != nil {
		t.Fatal(err)
	}
	ev := <-w.ResultChan()
	w.Stop()
	if st, ok := ev.Object.(*metav1.Status); ev.Type != watch.Error || !ok || st.Code != http.StatusGone {
		t.Fatalf("re-watch: %v %+v", ev.Type, ev.Object)
	}
	l, err := cms.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name!=kube-root-ca.crt"})
	if err != nil || len(l.Items) != 1 || l.Items[0].Data["v"] != fmt.Sprint(writes-1) {
		t.Fatalf("relist: %v", err)
	}
}
