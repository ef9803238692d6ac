package conformance

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"kloop.dev/kloop/apiserver/apiservertest"
)

// exchange is one recorded request and what the server answered.
type exchange struct {
	// Step names the request ("PUT /api/v1/namespaces/{ns}/configmaps/a"),
	// for the report; it is not compared.
	Step string `json:"-"`
	// Code is the HTTP status code.
	Code int `json:"code"`
	// Body is the decoded JSON body (a string when it is not JSON); for a
	// watch, the response's non-event body if any.
	Body any `json:"body,omitempty"`
	// Warnings are the Warning headers' texts, in order.
	Warnings []string `json:"warnings,omitempty"`
	// Events are the events of a watch, in order.
	Events []any `json:"events,omitempty"`
	// ContentType is the response's, recorded where the transcript asked
	// for a representation (GetTable).
	ContentType string `json:"contentType,omitempty"`
}

// transcript is a named sequence of requests. run issues them through tr;
// every response is recorded, normalized and compared between the targets.
type transcript struct {
	name string
	run  func(tr *T)
}

// fixture is what a target's transcripts share: the client, the custom
// resource definition made for this run, and the run's unique suffix.
type fixture struct {
	target apiservertest.Target
	env    *apiservertest.Env
	client *http.Client
	host   string
	// run is a random suffix unique to this test run; the real server is
	// shared by every test of the binary, so cluster-scoped names carry it.
	run string
	// group is the API group of the run's CRD (Gadget, gadgets).
	group string
}

// T runs one transcript on one target and records its exchanges.
type T struct {
	t   *testing.T
	ctx context.Context
	fx  *fixture
	// ns is the transcript's own namespace.
	ns  string
	log []exchange
	// accept overrides the Accept header of the next request (GetTable).
	accept string
}

// Resp is a response as a transcript sees it, to read values from (the
// recorded copy is separate).
type Resp struct {
	Code int
	Obj  map[string]any
	tr   *T
	step string
}

// Want fails the test (not the comparison) when the status code is not
// code: transcripts state the code they expect, so a mistake in a
// transcript (or a server that answers something else on both targets)
// shows even when only one target runs.
func (r *Resp) Want(code int) *Resp {
	r.tr.t.Helper()
	if r.Code != code {
		b, _ := json.Marshal(r.Obj)
		r.tr.t.Errorf("%s: %s: got %d, want %d: %s", r.tr.fx.target, r.step, r.Code, code, b)
	}
	return r
}

// Str returns the string at a dotted path of the response ("" if absent).
func (r *Resp) Str(path string) string {
	var v any = r.Obj
	for _, p := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = m[p]
	}
	s, _ := v.(string)
	return s
}

// RV is the response object's metadata.resourceVersion.
func (r *Resp) RV() string { return r.Str("metadata.resourceVersion") }

// UID is the response object's metadata.uid.
func (r *Resp) UID() string { return r.Str("metadata.uid") }

// expand replaces the placeholders {ns} (the transcript's namespace) and
// {group} (the CRD's group) in a path or body.
func (tr *T) expand(s string) string {
	return strings.NewReplacer("{ns}", tr.ns, "{group}", tr.fx.group).Replace(s)
}

// Get, Post, Put, Delete and Patch issue one request and record it. A body
// is JSON; "" sends none.
func (tr *T) Get(path string) *Resp { return tr.Do(http.MethodGet, path, "", "") }

// GetTable issues a GET asking for a meta.k8s.io Table, as kubectl get
// does, and records the response's Content-Type with it.
func (tr *T) GetTable(path string) *Resp {
	tr.t.Helper()
	tr.accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
	defer func() { tr.accept = "" }()
	return tr.Do(http.MethodGet, path, "", "")
}

// GetAs issues a GET with the given Accept header (a metadata-only read,
// a protobuf one), recording the response's Content-Type with it (and a
// protobuf or YAML answer as JSON: see Accepting).
func (tr *T) GetAs(path, accept string) *Resp {
	tr.t.Helper()
	tr.accept = accept
	defer func() { tr.accept = "" }()
	return tr.Do(http.MethodGet, path, "", "")
}

// WatchAs is Watch with the given Accept header.
func (tr *T) WatchAs(path, accept string, stop func(events []map[string]any) bool) *Resp {
	tr.t.Helper()
	tr.accept = accept
	defer func() { tr.accept = "" }()
	return tr.Watch(path, stop)
}

// Accepting issues the requests of f with the given Accept header (an
// answer in protobuf or YAML, a metadata-only one), recording each
// response's Content-Type with it; protobuf and YAML answers are recorded
// as JSON.
func (tr *T) Accepting(accept string, f func()) {
	tr.t.Helper()
	tr.accept = accept
	defer func() { tr.accept = "" }()
	f()
}

// Post creates.
func (tr *T) Post(path, body string) *Resp {
	return tr.Do(http.MethodPost, path, "application/json", body)
}

// Put updates.
func (tr *T) Put(path, body string) *Resp {
	return tr.Do(http.MethodPut, path, "application/json", body)
}

// Delete deletes; body, if any, holds DeleteOptions.
func (tr *T) Delete(path, body string) *Resp {
	ct := ""
	if body != "" {
		ct = "application/json"
	}
	return tr.Do(http.MethodDelete, path, ct, body)
}

// Patch patches with the given patch type: "merge", "json", "strategic",
// "apply" or a content type.
func (tr *T) Patch(path, patchType, body string) *Resp {
	ct := map[string]string{
		"merge":     "application/merge-patch+json",
		"json":      "application/json-patch+json",
		"strategic": "application/strategic-merge-patch+json",
		"apply":     "application/apply-patch+yaml",
	}[patchType]
	if ct == "" {
		ct = patchType
	}
	return tr.Do(http.MethodPatch, path, ct, body)
}

// Do issues a request with a content type and body (both may be empty).
func (tr *T) Do(method, path, contentType, body string) *Resp {
	tr.t.Helper()
	path, body = tr.expand(path), tr.expand(body)
	step := method + " " + path
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	ctx, cancel := context.WithTimeout(tr.ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, tr.fx.host+path, rd)
	if err != nil {
		tr.t.Fatalf("%s: %v", step, err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	if tr.accept != "" {
		req.Header.Set("Accept", tr.accept)
	}
	resp, err := tr.fx.client.Do(req)
	if err != nil {
		tr.t.Fatalf("%s: %s: %v", tr.fx.target, step, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		tr.t.Fatalf("%s: %s: reading the response: %v", tr.fx.target, step, err)
	}
	if tr.accept != "" {
		if raw, err = asJSON(resp.Header.Get("Content-Type"), raw); err != nil {
			tr.t.Fatalf("%s: %s: %v", tr.fx.target, step, err)
		}
	}
	ex := exchange{Step: step, Code: resp.StatusCode, Body: decodeBody(raw), Warnings: warnings(resp.Header)}
	if tr.accept != "" {
		ex.ContentType = resp.Header.Get("Content-Type")
	}
	tr.log = append(tr.log, ex)
	r := &Resp{Code: resp.StatusCode, tr: tr, step: step}
	r.Obj, _ = decodeBody(raw).(map[string]any)
	return r
}

// Watch issues a watch request (path includes the query) and records its
// events until stop says so or the stream ends; a watch that does not stop
// within 15 seconds is recorded with what it got so far and a "timeout"
// marker, so a missing event shows as a difference rather than a hang.
//
// Bookmarks are recorded only when they carry the initial-events-end
// annotation: kube-apiserver sends the others on a timer (about once a
// minute, and on its own schedule), so whether one falls inside a short
// watch is not deterministic on the real server.
func (tr *T) Watch(path string, stop func(events []map[string]any) bool) *Resp {
	tr.t.Helper()
	path = tr.expand(path)
	step := "WATCH " + path
	ctx, cancel := context.WithTimeout(tr.ctx, 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, tr.fx.host+path, nil)
	if err != nil {
		tr.t.Fatalf("%s: %v", step, err)
	}
	req.Header.Set("Accept", "application/json")
	if tr.accept != "" {
		req.Header.Set("Accept", tr.accept)
	}
	resp, err := tr.fx.client.Do(req)
	if err != nil {
		tr.t.Fatalf("%s: %s: %v", tr.fx.target, step, err)
	}
	defer resp.Body.Close()
	ex := exchange{Step: step, Code: resp.StatusCode, Warnings: warnings(resp.Header)}
	if tr.accept != "" {
		ex.ContentType = resp.Header.Get("Content-Type")
	}
	r := &Resp{Code: resp.StatusCode, tr: tr, step: step}
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(resp.Body)
		if tr.accept != "" {
			if raw, err = asJSON(resp.Header.Get("Content-Type"), raw); err != nil {
				tr.t.Fatalf("%s: %s: %v", tr.fx.target, step, err)
			}
		}
		ex.Body = decodeBody(raw)
		r.Obj, _ = ex.Body.(map[string]any)
		tr.log = append(tr.log, ex)
		return r
	}
	var events []map[string]any
	dec := json.NewDecoder(bufio.NewReader(resp.Body))
	dec.UseNumber()
	next := func() (ev map[string]any, err error) { return ev, dec.Decode(&ev) }
	if mediaType(resp.Header.Get("Content-Type")) == protobufType {
		pe := &protobufEvents{r: bufio.NewReader(resp.Body)}
		next = pe.next
	}
	for !stop(events) {
		ev, err := next()
		if err != nil {
			if ctx.Err() != nil {
				ex.Events = append(ex.Events, "timeout")
			} else if !errors.Is(err, io.EOF) {
				ex.Events = append(ex.Events, "stream error")
			}
			break
		}
		if ev["type"] == "BOOKMARK" && !initialEventsEnd(ev) {
			continue
		}
		events = append(events, ev)
		ex.Events = append(ex.Events, ev)
	}
	tr.log = append(tr.log, ex)
	return r
}

// Events stops a watch after n events.
func Events(n int) func([]map[string]any) bool {
	return func(evs []map[string]any) bool { return len(evs) >= n }
}

// UntilInitialEventsEnd stops a watch after the bookmark that ends the
// initial events of a watch-list (or after an ERROR event).
func UntilInitialEventsEnd(evs []map[string]any) bool {
	if len(evs) == 0 {
		return false
	}
	last := evs[len(evs)-1]
	return initialEventsEnd(last) || last["type"] == "ERROR"
}

func initialEventsEnd(ev map[string]any) bool {
	obj, _ := ev["object"].(map[string]any)
	md, _ := obj["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	return ev["type"] == "BOOKMARK" && ann["k8s.io/initial-events-end"] == "true"
}

// decodeBody decodes a JSON body with numbers kept exact, or returns the
// text of a body that is not JSON.
func decodeBody(raw []byte) any {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return string(raw)
	}
	return v
}

func warnings(h http.Header) []string {
	var out []string
	for _, w := range h.Values("Warning") {
		// 299 - "text"
		if _, rest, ok := strings.Cut(w, " - "); ok {
			w = rest
			if u, err := strconv.Unquote(rest); err == nil {
				w = u
			}
		}
		out = append(out, w)
	}
	return out
}

// newFixture prepares a target for the transcripts: an HTTP client and the
// run's CRD, served (Established and listable) before it returns.
func newFixture(t *testing.T, env *apiservertest.Env, run string) *fixture {
	t.Helper()
	cfg := env.Config()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fx := &fixture{target: env.Target, env: env, client: client, host: strings.TrimRight(cfg.Host, "/"), run: run, group: "c" + run + ".conformance.kloop.dev"}
	tr := &T{t: t, ctx: t.Context(), fx: fx}
	tr.Post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", gadgetCRD(fx.group)).Want(http.StatusCreated)
	deadline := time.Now().Add(30 * time.Second)
	for {
		crd := tr.Get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets." + fx.group)
		list := tr.Get("/apis/" + fx.group + "/v1/gadgets")
		if established(crd.Obj) && list.Code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the CRD gadgets.%s is not served after 30 s", env.Target, fx.group)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fx
}

func established(crd map[string]any) bool {
	st, _ := crd["status"].(map[string]any)
	conds, _ := st["conditions"].([]any)
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// gadgetCRD is the run's custom resource: namespaced, one version, a
// structural schema with a default, a status subresource, a selectable
// field.
func gadgetCRD(group string) string {
	return `{
  "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "gadgets.` + group + `"},
  "spec": {
    "group": "` + group + `",
    "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
    "scope": "Namespaced",
    "versions": [{
      "name": "v1", "served": true, "storage": true,
      "subresources": {"status": {}},
      "selectableFields": [{"jsonPath": ".spec.color"}],
      "schema": {"openAPIV3Schema": {
        "type": "object",
        "properties": {
          "spec": {"type": "object", "properties": {
            "size": {"type": "integer", "default": 1, "minimum": 0, "maximum": 100},
            "color": {"type": "string", "enum": ["red", "green", "blue"]},
            "tags": {"type": "array", "items": {"type": "string"}}
          }},
          "status": {"type": "object", "properties": {
            "ready": {"type": "boolean"},
            "observedGeneration": {"type": "integer"}
          }}
        }
      }}
    }]
  }
}`
}

// runTranscript runs one transcript on a target in a namespace of its own.
func runTranscript(t *testing.T, fx *fixture, tc transcript) []exchange {
	t.Helper()
	tr := &T{t: t, ctx: t.Context(), fx: fx, ns: namespaceName(tc.name, fx.run)}
	tr.Post("/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"`+tr.ns+`"}}`).Want(http.StatusCreated)
	// What kube-controller-manager's controllers (and the embedded
	// server's) put in a new namespace comes a moment later: wait for it,
	// so that lists and watches of the namespace see it on both targets.
	ctx, cancel := context.WithTimeout(tr.ctx, 30*time.Second)
	defer cancel()
	if err := apiservertest.WaitForNamespaceDefaults(ctx, fx.env.Config(), tr.ns); err != nil {
		t.Fatalf("%s: %v", fx.target, err)
	}
	tr.log = nil // the namespace's creation is set-up, not part of the transcript
	tc.run(tr)
	return tr.log
}

// namespaceName is a transcript's namespace: unique per run, valid as a
// DNS label.
func namespaceName(transcript, run string) string {
	base := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(transcript))
	if len(base) > 40 {
		base = base[:40]
	}
	return strings.Trim("conf-"+base, "-") + "-" + run
}

// runID returns a random lower-case suffix for this run's names.
func runID() string {
	return strings.ToLower(rand.Text()[:6])
}

// describe prints an exchange list compactly, for debugging a transcript.
func describe(log []exchange) string {
	var b strings.Builder
	for i, ex := range log {
		j, _ := json.Marshal(ex)
		fmt.Fprintf(&b, "%d %s: %s\n", i, ex.Step, j)
	}
	return b.String()
}
