package apiserver

import (
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"kloop.dev/kloop/apiserver/storage"
)

// The admission engine against webhook configurations put in the store
// (the kinds are served by the registry; these tests need only the
// stored form) and webhooks on an httptest TLS server.

// hookServer is a webhook server whose answers the test sets per path; it
// records the reviews it received.
type hookServer struct {
	srv *httptest.Server
	ca  []byte

	mu       sync.Mutex // guards answers, received
	answers  map[string]func(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse
	received map[string][]*admissionv1.AdmissionRequest
}

func newHookServer(t *testing.T) *hookServer {
	h := &hookServer{answers: map[string]func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse{},
		received: map[string][]*admissionv1.AdmissionRequest{}}
	h.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var review admissionv1.AdmissionReview
		if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		if got := r.URL.Query().Get("timeout"); got == "" {
			http.Error(w, "no timeout parameter", http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		answer := h.answers[r.URL.Path]
		h.received[r.URL.Path] = append(h.received[r.URL.Path], review.Request)
		h.mu.Unlock()
		if answer == nil {
			http.Error(w, "no such hook", http.StatusNotFound)
			return
		}
		resp := answer(review.Request)
		resp.UID = review.Request.UID
		out, _ := json.Marshal(admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Response: resp})
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
	}))
	t.Cleanup(h.srv.Close)
	h.ca = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: h.srv.Certificate().Raw})
	return h
}

func (h *hookServer) answer(path string, f func(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.answers[path] = f
}

func (h *hookServer) calls(path string) []*admissionv1.AdmissionRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*admissionv1.AdmissionRequest(nil), h.received[path]...)
}

func (h *hookServer) url(path string) *string { u := h.srv.URL + path; return &u }

func patchResponse(patch string) *admissionv1.AdmissionResponse {
	pt := admissionv1.PatchTypeJSONPatch
	return &admissionv1.AdmissionResponse{Allowed: true, Patch: []byte(patch), PatchType: &pt}
}

// storeConfig puts a webhook configuration in the store, as the registry
// would have stored it.
func storeConfig(t *testing.T, s *Server, resource string, cfg any) {
	t.Helper()
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal(data, &m)
	name := meta(m)["name"].(string)
	_, err = s.store.Create(resource, "", name, func(rev int64) (*storage.Object, error) {
		return &storage.Object{Name: name, Data: data, APIVersion: "admissionregistration.k8s.io/v1"}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func deleteConfig(t *testing.T, s *Server, resource, name string) {
	t.Helper()
	if _, err := s.store.Delete(resource, "", name, func(cur *storage.Object) (storage.EncodeFunc, error) {
		return func(int64) (*storage.Object, error) { c := *cur; return &c, nil }, nil
	}); err != nil {
		t.Fatal(err)
	}
}

var (
	sideNone   = admissionregistrationv1.SideEffectClassNone
	sideSome   = admissionregistrationv1.SideEffectClassSome
	failFail   = admissionregistrationv1.Fail
	failIgnore = admissionregistrationv1.Ignore
	equivalent = admissionregistrationv1.Equivalent
	exact      = admissionregistrationv1.Exact
	ifNeeded   = admissionregistrationv1.IfNeededReinvocationPolicy
)

func configMapRules(ops ...admissionregistrationv1.OperationType) []admissionregistrationv1.RuleWithOperations {
	return []admissionregistrationv1.RuleWithOperations{{Operations: ops,
		Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}}
}

func mutatingHook(name string, url *string, ca []byte, rules []admissionregistrationv1.RuleWithOperations) admissionregistrationv1.MutatingWebhook {
	return admissionregistrationv1.MutatingWebhook{Name: name, ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: url, CABundle: ca},
		Rules: rules, FailurePolicy: &failFail, SideEffects: &sideNone, AdmissionReviewVersions: []string{"v1"}, MatchPolicy: &equivalent}
}

func validatingHook(name string, url *string, ca []byte, rules []admissionregistrationv1.RuleWithOperations) admissionregistrationv1.ValidatingWebhook {
	return admissionregistrationv1.ValidatingWebhook{Name: name, ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: url, CABundle: ca},
		Rules: rules, FailurePolicy: &failFail, SideEffects: &sideNone, AdmissionReviewVersions: []string{"v1"}, MatchPolicy: &equivalent}
}

func statusOf(t *testing.T, rec *httptest.ResponseRecorder) metav1.Status {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || st.Kind != "Status" {
		t.Fatalf("HTTP %d, not a Status: %s", rec.Code, rec.Body)
	}
	return st
}

const cmPath = "/api/v1/namespaces/default/configmaps"

func configMap(name string, labels map[string]string, data map[string]string) string {
	b, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "labels": labels}, "data": data})
	return string(b)
}

func TestAdmissionWebhooks(t *testing.T) {
	s := newTestServer(t, Options{Token: "t"})
	hooks := newHookServer(t)
	t.Cleanup(s.hooks.closeIdle)

	hooks.answer("/mutate", func(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		if req.Operation == admissionv1.Delete {
			return &admissionv1.AdmissionResponse{Allowed: true}
		}
		patch := `[{"op":"add","path":"/data/defaulted","value":"yes"}]`
		if !strings.Contains(string(req.Object.Raw), `"data"`) {
			patch = `[{"op":"add","path":"/data","value":{"defaulted":"yes"}}]`
		}
		r := patchResponse(patch)
		r.Warnings = []string{"mutated by the test"}
		return r
	})
	hooks.answer("/validate", func(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		var obj map[string]any
		raw := req.Object.Raw
		if req.Operation == admissionv1.Delete {
			raw = req.OldObject.Raw
		}
		_ = json.Unmarshal(raw, &obj)
		data, _ := obj["data"].(map[string]any)
		if data["forbidden"] != nil {
			return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{Code: 403, Reason: metav1.StatusReasonForbidden, Message: "no forbidden keys"},
				Warnings: []string{"think again"}}
		}
		if data["bare"] != nil {
			return &admissionv1.AdmissionResponse{Allowed: false}
		}
		return &admissionv1.AdmissionResponse{Allowed: true}
	})
	down := "https://127.0.0.1:1/down"
	storeConfig(t, s, mutatingConfigs, admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "m"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{
			mutatingHook("mutate.test.io", hooks.url("/mutate"), hooks.ca, configMapRules(admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete)),
		},
	})
	downFail := validatingHook("down-fail.test.io", &down, hooks.ca, configMapRules(admissionregistrationv1.Create))
	downFail.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"down": "fail"}}
	downIgnore := validatingHook("down-ignore.test.io", &down, hooks.ca, configMapRules(admissionregistrationv1.Create))
	downIgnore.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"down": "ignore"}}
	downIgnore.FailurePolicy = &failIgnore
	checked := validatingHook("validate.test.io", hooks.url("/validate"), hooks.ca, configMapRules(admissionregistrationv1.OperationAll))
	checked.MatchConditions = []admissionregistrationv1.MatchCondition{
		{Name: "not-skipped", Expression: `object == null || !has(object.metadata.labels) || !('skip' in object.metadata.labels)`},
		{Name: "allowed-user", Expression: `authorizer.group('').resource('configmaps').namespace('default').check('get').allowed()`},
	}
	storeConfig(t, s, validatingConfigs, admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "v"},
		Webhooks:   []admissionregistrationv1.ValidatingWebhook{checked, downFail, downIgnore},
	})

	t.Run("mutated, warned", func(t *testing.T) {
		rec := serveOnce(t, s, http.MethodPost, cmPath, "application/json", configMap("a", nil, map[string]string{"k": "v"}))
		if rec.Code != http.StatusCreated || !strings.Contains(rec.Body.String(), `"defaulted":"yes"`) {
			t.Fatalf("HTTP %d %s", rec.Code, rec.Body)
		}
		if w := rec.Header().Values("Warning"); len(w) != 1 || w[0] != `299 - "mutated by the test"` {
			t.Fatalf("warnings %q", w)
		}
		calls := hooks.calls("/mutate")
		last := calls[len(calls)-1]
		if last.Operation != admissionv1.Create || last.Namespace != "default" || last.Name != "a" || last.UserInfo.Username != "kloop-admin" ||
			last.Kind.Kind != "ConfigMap" || last.Resource.Resource != "configmaps" || last.RequestKind == nil || *last.DryRun {
			t.Fatalf("review %+v", last)
		}
		var opts map[string]any
		_ = json.Unmarshal(last.Options.Raw, &opts)
		if opts["kind"] != "CreateOptions" {
			t.Fatalf("options %s", last.Options.Raw)
		}
	})
	t.Run("denied with the webhook's status", func(t *testing.T) {
		rec := serveOnce(t, s, http.MethodPost, cmPath, "application/json", configMap("b", nil, map[string]string{"forbidden": "x"}))
		st := statusOf(t, rec)
		if rec.Code != 403 || st.Code != 403 || st.Reason != metav1.StatusReasonForbidden ||
			st.Message != `admission webhook "validate.test.io" denied the request: no forbidden keys` {
			t.Fatalf("HTTP %d %+v", rec.Code, st)
		}
		if w := rec.Header().Values("Warning"); len(w) != 2 {
			t.Fatalf("warnings %q", w)
		}
	})
	t.Run("denied without explanation: 400", func(t *testing.T) {
		rec := serveOnce(t, s, http.MethodPost, cmPath, "application/json", configMap("c", nil, map[string]string{"bare": "x"}))
		st := statusOf(t, rec)
		if rec.Code != 400 || st.Message != `admission webhook "validate.test.io" denied the request without explanation` {
			t.Fatalf("HTTP %d %+v", rec.Code, st)
		}
	})
	t.Run("match condition", func(t *testing.T) {
		rec := serveOnce(t, s, http.MethodPost, cmPath, "application/json", configMap("d", map[string]string{"skip": "1"}, map[string]string{"forbidden": "x"}))
		if rec.Code != http.StatusCreated {
			t.Fatalf("HTTP %d %s", rec.Code, rec.Body)
		}
	})
	t.Run("a missing namespace before any webhook", func(t *testing.T) {
		before := len(hooks.calls("/mutate"))
		rec := serveOnce(t, s, http.MethodPost, "/api/v1/namespaces/nowhere/configmaps", "application/json", configMap("n", nil, nil))
		if st := statusOf(t, rec); rec.Code != 404 || st.Message != `namespaces "nowhere" not found` {
			t.Fatalf("HTTP %d %+v", rec.Code, st)
		}
		if len(hooks.calls("/mutate")) != before {
			t.Fatal("a webhook was called")
		}
	})
	t.Run("failurePolicy Fail", func(t *testing.T) {
		rec := serveOnce(t, s, http.MethodPost, cmPath, "application/json", configMap("e", map[string]string{"down": "fail"}, nil))
		st := statusOf(t, rec)
		if rec.Code != 500 || st.Reason != metav1.StatusReasonInternalError ||
			!strings.HasPrefix(st.Message, `Internal error occurred: failed calling webhook "down-fail.test.io": failed to call webhook: Post "https://127.0.0.1:1/down?timeout=10s": dial tcp 127.0.0.1:1: connect: connection refused`) {
			t.Fatalf("HTTP %d %+v", rec.Code, st)
		}
	})
	t.Run("failurePolicy Ignore", func(t *testing.T) {
		rec := serveOnce(t, s, http.MethodPost, cmPath, "application/json", configMap("f", map[string]string{"down": "ignore"}, nil))
		if rec.Code != http.StatusCreated {
			t.Fatalf("HTTP %d %s", rec.Code, rec.Body)
		}
	})
	t.Run("update and patch", func(t *testing.T) {
		rec := serveOnce(t, s, http.MethodPatch, cmPath+"/a", "application/merge-patch+json", `{"data":{"forbidden":"now"}}`)
		if rec.Code != 403 {
			t.Fatalf("HTTP %d %s", rec.Code, rec.Body)
		}
		rec = serveOnce(t, s, http.MethodPatch, cmPath+"/a", "application/merge-patch+json", `{"data":{"defaulted":null,"k":"w"}}`)
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"defaulted":"yes"`) {
			t.Fatalf("HTTP %d %s", rec.Code, rec.Body)
		}
		calls := hooks.calls("/mutate")
		last := calls[len(calls)-1]
		var opts map[string]any
		_ = json.Unmarshal(last.Options.Raw, &opts)
		if last.Operation != admissionv1.Update || len(last.OldObject.Raw) == 0 || opts["kind"] != "PatchOptions" {
			t.Fatalf("review %+v %s", last, last.Options.Raw)
		}
	})
	t.Run("delete", func(t *testing.T) {
		// The validating webhook refuses the deletion of an object with a
		// forbidden key: d, which the match condition let in (at a
		// delete, object is null).
		rec := serveOnce(t, s, http.MethodDelete, cmPath+"/d", "", "")
		if st := statusOf(t, rec); rec.Code != 403 || st.Message != `admission webhook "validate.test.io" denied the request: no forbidden keys` {
			t.Fatalf("HTTP %d %+v", rec.Code, st)
		}
		if rec := serveOnce(t, s, http.MethodDelete, cmPath+"/a", "", ""); rec.Code != 200 {
			t.Fatalf("HTTP %d %s", rec.Code, rec.Body)
		}
		calls := hooks.calls("/mutate")
		last := calls[len(calls)-1]
		if last.Operation != admissionv1.Delete || len(last.OldObject.Raw) == 0 || len(last.Object.Raw) != 0 && string(last.Object.Raw) != "null" {
			t.Fatalf("review %+v", last)
		}
	})
	t.Run("dry run and side effects", func(t *testing.T) {
		rec := serveOnce(t, s, http.MethodPost, cmPath+"?dryRun=All", "application/json", configMap("g", nil, nil))
		if rec.Code != http.StatusCreated {
			t.Fatalf("HTTP %d %s", rec.Code, rec.Body)
		}
		calls := hooks.calls("/mutate")
		if last := calls[len(calls)-1]; last.DryRun == nil || !*last.DryRun {
			t.Fatalf("dryRun %v", last.DryRun)
		}
		storeConfig(t, s, mutatingConfigs, admissionregistrationv1.MutatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "side-effects"},
			Webhooks: []admissionregistrationv1.MutatingWebhook{func() admissionregistrationv1.MutatingWebhook {
				h := mutatingHook("some.test.io", hooks.url("/mutate"), hooks.ca, configMapRules(admissionregistrationv1.Create))
				h.SideEffects = &sideSome
				h.FailurePolicy = &failIgnore // not a failure to call: refused whatever the policy
				return h
			}()},
		})
		defer deleteConfig(t, s, mutatingConfigs, "side-effects")
		rec = serveOnce(t, s, http.MethodPost, cmPath+"?dryRun=All", "application/json", configMap("g", nil, nil))
		st := statusOf(t, rec)
		if rec.Code != 400 || st.Message != `admission webhook "some.test.io" does not support dry run` {
			t.Fatalf("HTTP %d %+v", rec.Code, st)
		}
	})
}

func TestAdmissionReinvocationAndTimeout(t *testing.T) {
	s := newTestServer(t, Options{Token: "t"})
	hooks := newHookServer(t)
	t.Cleanup(s.hooks.closeIdle)
	// first adds a label if missing (IfNeeded); second adds data; first
	// is called again after second changed the object.
	hooks.answer("/first", func(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return patchResponse(`[{"op":"add","path":"/metadata/annotations","value":{"first":"seen"}}]`)
	})
	hooks.answer("/second", func(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		if strings.Contains(string(req.Object.Raw), `"second":"x"`) {
			return &admissionv1.AdmissionResponse{Allowed: true}
		}
		return patchResponse(`[{"op":"add","path":"/data","value":{"second":"x"}}]`)
	})
	hooks.answer("/slow", func(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		time.Sleep(1500 * time.Millisecond)
		return &admissionv1.AdmissionResponse{Allowed: true}
	})
	first := mutatingHook("first.test.io", hooks.url("/first"), hooks.ca, configMapRules(admissionregistrationv1.Create))
	first.ReinvocationPolicy = &ifNeeded
	storeConfig(t, s, mutatingConfigs, admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "a-first"}, Webhooks: []admissionregistrationv1.MutatingWebhook{first}})
	storeConfig(t, s, mutatingConfigs, admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "b-second"},
		Webhooks:   []admissionregistrationv1.MutatingWebhook{mutatingHook("second.test.io", hooks.url("/second"), hooks.ca, configMapRules(admissionregistrationv1.Create))}})
	rec := serveOnce(t, s, http.MethodPost, cmPath, "application/json", configMap("r", nil, nil))
	if rec.Code != http.StatusCreated || !strings.Contains(rec.Body.String(), `"second":"x"`) || !strings.Contains(rec.Body.String(), `"first":"seen"`) {
		t.Fatalf("HTTP %d %s", rec.Code, rec.Body)
	}
	if n, m := len(hooks.calls("/first")), len(hooks.calls("/second")); n != 2 || m != 1 {
		t.Fatalf("first called %d times, second %d; want 2 and 1", n, m)
	}

	one := int32(1)
	slow := validatingHook("slow.test.io", hooks.url("/slow"), hooks.ca, configMapRules(admissionregistrationv1.Create))
	slow.TimeoutSeconds = &one
	slow.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"slow": "yes"}}
	storeConfig(t, s, validatingConfigs, admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "slow"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{slow}})
	start := time.Now()
	rec = serveOnce(t, s, http.MethodPost, cmPath, "application/json", configMap("s", map[string]string{"slow": "yes"}, nil))
	st := statusOf(t, rec)
	if rec.Code != 500 || !strings.Contains(st.Message, `failed calling webhook "slow.test.io": failed to call webhook: Post "`+hooks.srv.URL+`/slow?timeout=1s": context deadline exceeded`) {
		t.Fatalf("HTTP %d %+v", rec.Code, st)
	}
	if d := time.Since(start); d > 1400*time.Millisecond {
		t.Fatalf("took %v with timeoutSeconds 1", d)
	}
}

func TestAdmissionNamespaceSelectorAndEquivalent(t *testing.T) {
	s := newTestServer(t, Options{Token: "t"})
	hooks := newHookServer(t)
	t.Cleanup(s.hooks.closeIdle)
	hooks.answer("/deny", func(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{Message: "no " + req.Kind.Version + " " + req.RequestKind.Version}}
	})
	h := validatingHook("ns.test.io", hooks.url("/deny"), hooks.ca, configMapRules(admissionregistrationv1.Create))
	h.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"guarded": "yes"}}
	// events.k8s.io/v1 events, equivalent to core/v1 events.
	ev := validatingHook("events.test.io", hooks.url("/deny"), hooks.ca, []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"events"}}}})
	evExact := ev
	evExact.Name, evExact.MatchPolicy = "events-exact.test.io", &exact
	storeConfig(t, s, validatingConfigs, admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "v"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{h, evExact}})
	if rec := serveOnce(t, s, http.MethodPost, cmPath, "application/json", configMap("free", nil, nil)); rec.Code != http.StatusCreated {
		t.Fatalf("unguarded namespace: HTTP %d %s", rec.Code, rec.Body)
	}
	if rec := serveOnce(t, s, http.MethodPost, "/api/v1/namespaces", "application/json",
		`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"guarded","labels":{"guarded":"yes"}}}`); rec.Code != http.StatusCreated {
		t.Fatalf("namespace: HTTP %d %s", rec.Code, rec.Body)
	}
	rec := serveOnce(t, s, http.MethodPost, "/api/v1/namespaces/guarded/configmaps", "application/json", configMap("held", nil, nil))
	if st := statusOf(t, rec); rec.Code != 400 || st.Message != `admission webhook "ns.test.io" denied the request: no v1 v1` {
		t.Fatalf("guarded namespace: HTTP %d %+v", rec.Code, st)
	}
	event := `{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"e1"},"eventTime":"2026-01-01T00:00:00.000000Z","reportingController":"x/y","reportingInstance":"i","action":"A","reason":"R","type":"Normal","regarding":{"kind":"Pod","name":"p","namespace":"default"}}`
	// Exact: an events.k8s.io event is not a core event.
	if rec := serveOnce(t, s, http.MethodPost, "/apis/events.k8s.io/v1/namespaces/default/events", "application/json", event); rec.Code != http.StatusCreated {
		t.Fatalf("exact: HTTP %d %s", rec.Code, rec.Body)
	}
	deleteConfig(t, s, validatingConfigs, "v")
	storeConfig(t, s, validatingConfigs, admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "v"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{ev}})
	// Equivalent: sent as a core/v1 event, requestKind events.k8s.io/v1.
	rec = serveOnce(t, s, http.MethodPost, "/apis/events.k8s.io/v1/namespaces/default/events", "application/json", strings.Replace(event, "e1", "e2", 1))
	if st := statusOf(t, rec); rec.Code != 400 || st.Message != `admission webhook "events.test.io" denied the request: no v1 v1` {
		t.Fatalf("equivalent: HTTP %d %+v", rec.Code, st)
	}
	calls := hooks.calls("/deny")
	last := calls[len(calls)-1]
	if last.Kind.Group != "" || last.RequestKind.Group != "events.k8s.io" || !strings.Contains(string(last.Object.Raw), `"involvedObject"`) {
		t.Fatalf("review kind %+v request kind %+v object %s", last.Kind, last.RequestKind, last.Object.Raw)
	}
}

// A webhook's answer is input the server does not control: whatever it
// holds, reading it returns a response or an error.
func FuzzWebhookResponses(f *testing.F) {
	f.Add(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u","allowed":true,"patchType":"JSONPatch","patch":"W10="}}`, true)
	f.Add(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u","allowed":false,"status":{"code":403,"message":"no"},"warnings":["w"]}}`, false)
	f.Add(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"u","result":{"status":"Success"},"convertedObjects":[{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","labels":{"a":"b"}}}]}}`, true)
	f.Add(`{"response":{"uid":"u","result":{"status":"Failure","message":"m"}}}`, false)
	in := map[string]any{"apiVersion": "example.com/v1alpha1", "kind": "Widget", "metadata": map[string]any{"name": "w", "uid": "x"}}
	f.Fuzz(func(t *testing.T, body string, v1 bool) {
		version := "admission.k8s.io/v1beta1"
		if v1 {
			version = "admission.k8s.io/v1"
		}
		for _, mutating := range []bool{true, false} {
			if r, err := verifyAdmissionResponse([]byte(body), version, "u", mutating); err == nil {
				if !mutating && len(r.patch) > 0 {
					t.Fatal("a validating webhook's patch accepted")
				}
				_ = denied("hook", r.result)
			}
		}
		cv := "apiextensions.k8s.io/v1beta1"
		if v1 {
			cv = "apiextensions.k8s.io/v1"
		}
		obj := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(in)}
		if out, err := checkConversionResponse([]byte(body), cv, "u", obj, "example.com/v1"); err == nil {
			u := &unstructured.Unstructured{Object: out}
			if u.GetName() != "w" || u.GetUID() != "x" || u.GetAPIVersion() != "example.com/v1" {
				t.Fatalf("accepted a conversion that changed what it may not: %v", out)
			}
		}
	})
}
