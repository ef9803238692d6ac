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
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"kloop.dev/kloop/apiserver/apiservertest"
)

// rawClient sends plain HTTP requests to a server.
type rawClient struct {
	t      *testing.T
	cfg    *rest.Config
	client *http.Client
}

func newRaw(t *testing.T) *rawClient {
	srv := apiservertest.NewServer(t, apiservertest.Options{})
	cfg := srv.Config()
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

func TestHTTPErrors(t *testing.T) {
	c := newRaw(t)
	big := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"x":"` + strings.Repeat("a", 3<<20) + `"}}`
	const cms = "/api/v1/namespaces/default/configmaps"
	for _, tc := range []struct {
		name, method, path, body string
		headers                  []string
		code                     int
		reason                   metav1.StatusReason
		message                  string
	}{
		{"no token", "GET", cms, "", []string{"Authorization", ""}, 401, metav1.StatusReasonUnauthorized, "Unauthorized"},
		{"wrong token", "GET", cms, "", []string{"Authorization", "Bearer nope"}, 401, metav1.StatusReasonUnauthorized, "Unauthorized"},
		{"too large", "POST", cms, big, nil, 413, metav1.StatusReasonRequestEntityTooLarge, "limit is 3145728"},
		{"malformed json", "POST", cms, `{"apiVersion":`, nil, 400, metav1.StatusReasonBadRequest, "unknown format"},
		{"not an object", "POST", cms, `[1,2]`, nil, 400, metav1.StatusReasonBadRequest, "expected a JSON object"},
		{"missing kind", "POST", cms, `{"apiVersion":"v1","metadata":{"name":"x"}}`, nil, 400, metav1.StatusReasonBadRequest, "Object 'Kind' is missing"},
		{"wrong apiVersion", "POST", cms, `{"apiVersion":"apps/v1","kind":"ConfigMap","metadata":{"name":"x"}}`, nil, 400, metav1.StatusReasonBadRequest, "does not match the expected API version"},
		{"wrong kind", "POST", cms, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"}}`, nil, 400, metav1.StatusReasonBadRequest, "does not match the expected kind"},
		{"missing name", "POST", cms, `{"apiVersion":"v1","kind":"ConfigMap"}`, nil, 422, metav1.StatusReasonInvalid, "name or generateName is required"},
		{"wrong field type", "POST", cms, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":5}`, nil, 400, metav1.StatusReasonBadRequest, "unknown format"},
		{"bad metadata", "POST", cms, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","labels":"nope"}}`, nil, 400, metav1.StatusReasonBadRequest, "metadata.labels"},
		{"strict unknown field", "POST", cms + "?fieldValidation=Strict", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"bogus":1}`, nil, 400, metav1.StatusReasonBadRequest, `unknown field "bogus"`},
		{"post to a name", "POST", cms + "/x", `{}`, nil, 405, metav1.StatusReasonMethodNotAllowed, "not supported"},
		{"unknown resource", "GET", "/api/v1/widgets", "", nil, 404, metav1.StatusReasonNotFound, "could not find the requested resource"},
		{"unknown group", "GET", "/apis/nope.io/v1/things", "", nil, 404, metav1.StatusReasonNotFound, "could not find the requested resource"},
		{"unknown subresource", "GET", cms + "/x/bogus", "", nil, 404, metav1.StatusReasonNotFound, "could not find"},
		{"not found", "GET", cms + "/missing", "", nil, 404, metav1.StatusReasonNotFound, `configmaps "missing" not found`},
		{"bad limit", "GET", cms + "?limit=x", "", nil, 400, metav1.StatusReasonBadRequest, "invalid limit"},
		{"bad continue", "GET", cms + "?continue=zzz", "", nil, 400, metav1.StatusReasonBadRequest, "invalid continue"},
		{"bad patch type", "PATCH", cms + "/x", `{}`, []string{"Content-Type", "text/plain"}, 415, metav1.StatusReasonUnsupportedMediaType, "accepted media types"},
		{"bad rv match", "GET", cms + "?resourceVersionMatch=Exact", "", nil, 400, metav1.StatusReasonBadRequest, "resourceVersionMatch is forbidden"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := c.do(tc.method, tc.path, tc.body, tc.headers...)
			var st metav1.Status
			if err := json.Unmarshal(b, &st); err != nil {
				t.Fatalf("body is not a Status: %v: %s", err, b)
			}
			if resp.StatusCode != tc.code || int(st.Code) != tc.code || st.Reason != tc.reason || st.Kind != "Status" || !strings.Contains(st.Message, tc.message) {
				t.Fatalf("got %d %+v, want %d %s %q", resp.StatusCode, st, tc.code, tc.reason, tc.message)
			}
		})
	}
}

func TestHTTPBehaviour(t *testing.T) {
	c := newRaw(t)
	const cms = "/api/v1/namespaces/default/configmaps"
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
	// DELETE answers 200 with the object; 202 when a foreground deletion waits.
	c.do("POST", cms, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"held","finalizers":["x.io/y"]}}`)
	resp, b = c.do("DELETE", cms+"/held", `{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Foreground"}`)
	if resp.StatusCode != 202 || !strings.Contains(string(b), "deletionTimestamp") {
		t.Fatalf("foreground delete with finalizer: %d %s", resp.StatusCode, b)
	}
	resp, b = c.do("DELETE", cms+"/w", "")
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"name":"w"`) {
		t.Fatalf("delete: %d %s", resp.StatusCode, b)
	}
	// Table output.
	c.do("POST", "/api/v1/namespaces/default/pods", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i"}]}}`)
	resp, b = c.do("GET", "/api/v1/namespaces/default/pods", "", "Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
	var tbl metav1.Table
	if err := json.Unmarshal(b, &tbl); err != nil || resp.Header.Get("Content-Type") != "application/json;as=Table;v=v1;g=meta.k8s.io" {
		t.Fatalf("table: %v %s", err, b)
	}
	var cols []string
	for _, c := range tbl.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	if strings.Join(cols, ",") != "Name,Ready,Status,Restarts,Age,IP,Node" || len(tbl.Rows) != 1 || tbl.Rows[0].Cells[1] != "0/1" || tbl.Rows[0].Cells[2] != "Pending" {
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
	// A watch is a stream of JSON lines; timeoutSeconds ends it.
	resp, b = c.do("GET", cms+"?watch=true&timeoutSeconds=1", "")
	sc := bufio.NewScanner(bytes.NewReader(b))
	var types []string
	for sc.Scan() {
		var ev metav1.WatchEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("watch line %q: %v", sc.Text(), err)
		}
		types = append(types, ev.Type)
	}
	if resp.StatusCode != 200 || strings.Join(types, ",") != "ADDED" {
		t.Fatalf("watch: %d %v", resp.StatusCode, types)
	}
}

// TestSlowWatcherDisconnected: a watch client that stops reading falls
// behind the history; the server ends its stream (writers are not slowed),
// and re-watching from the last revision it saw gets 410 Expired, after which
// the client relists.
func TestSlowWatcherDisconnected(t *testing.T) {
	srv := apiservertest.NewServer(t, apiservertest.Options{HistoryEvents: 20})
	cfg := srv.Config()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	cms := cs.CoreV1().ConfigMaps("default")
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "big"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := &rawClient{t: t, cfg: cfg}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(cfg.CAData)
	c.client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	t.Cleanup(c.client.CloseIdleConnections)
	req, _ := http.NewRequest("GET", cfg.Host+"/api/v1/namespaces/default/configmaps?watch=true&resourceVersion="+cm.ResourceVersion, nil)
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
	l, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil || len(l.Items) != 1 || l.Items[0].Data["v"] != fmt.Sprint(writes-1) {
		t.Fatalf("relist: %v", err)
	}
}
