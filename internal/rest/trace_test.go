package rest

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func TestParseCall(t *testing.T) {
	tests := []struct {
		method, path, query string
		want                Call
		span                string
	}{
		{"GET", "/api/v1/namespaces/ns/pods/p", "", Call{Verb: "get", Version: "v1", Resource: "pods", Namespace: "ns", Name: "p"}, "GET pods"},
		{"GET", "/api/v1/namespaces/ns/pods", "", Call{Verb: "list", Version: "v1", Resource: "pods", Namespace: "ns"}, "LIST pods"},
		{"GET", "/apis/example.com/v1/widgets", "watch=true", Call{Verb: "watch", Group: "example.com", Version: "v1", Resource: "widgets"}, "WATCH widgets"},
		{"PUT", "/prefix/apis/example.com/v1/namespaces/a/widgets/w/status", "", Call{Verb: "update", Group: "example.com", Version: "v1", Resource: "widgets", Subresource: "status", Namespace: "a", Name: "w"}, "UPDATE widgets/status"},
		{"POST", "/api/v1/namespaces", "", Call{Verb: "create", Version: "v1", Resource: "namespaces"}, "CREATE namespaces"},
		{"DELETE", "/api/v1/namespaces/x", "", Call{Verb: "delete", Version: "v1", Resource: "namespaces", Name: "x"}, "DELETE namespaces"},
		{"GET", "/api/v1/namespaces/x/status", "", Call{Verb: "get", Version: "v1", Resource: "namespaces", Name: "x", Subresource: "status"}, "GET namespaces/status"},
		{"PUT", "/api/v1/namespaces/x/finalize", "", Call{Verb: "update", Version: "v1", Resource: "namespaces", Name: "x", Subresource: "finalize"}, "UPDATE namespaces/finalize"},
		{"DELETE", "/api/v1/namespaces/x/configmaps", "", Call{Verb: "deletecollection", Version: "v1", Resource: "configmaps", Namespace: "x"}, "DELETECOLLECTION configmaps"},
		{"PATCH", "/apis/apps/v1/namespaces/x/deployments/d", "", Call{Verb: "patch", Group: "apps", Version: "v1", Resource: "deployments", Namespace: "x", Name: "d"}, "PATCH deployments"},
		{"GET", "/apis", "", Call{}, "GET /apis"},
		{"GET", "/api/v1", "", Call{}, "GET /api/v1"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			q, _ := url.ParseQuery(tt.query)
			got := ParseCall(tt.method, tt.path, q.Get)
			if got != tt.want {
				t.Fatalf("ParseCall = %+v, want %+v", got, tt.want)
			}
			if s := got.SpanName(tt.method, tt.path); s != tt.span {
				t.Fatalf("SpanName = %q, want %q", s, tt.span)
			}
		})
	}
}

func TestJSONResourceVersion(t *testing.T) {
	for in, want := range map[string]string{
		`{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"42"},"data":{"resourceVersion":"1"}}`: "42",
		`{"metadata":{"resourceVersion": "7"}}`: "7",
		`{"metadata":{"resourceVersion":7}}`:    "",
		`{"metadata":{"resourceVersion":"7`:     "",
		`{}`:                                    "",
	} {
		if got := jsonResourceVersion([]byte(in)); got != want {
			t.Errorf("jsonResourceVersion(%s) = %q, want %q", in, got, want)
		}
	}
}

func TestTracingTransport(t *testing.T) {
	var traceparent string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		traceparent = r.Header.Get("Traceparent")
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodDelete {
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"kind":"Status","code":404}`)
			return
		}
		_, _ = io.WriteString(w, `{"kind":"ConfigMap","metadata":{"name":"c","namespace":"ns","resourceVersion":"123"}}`)
	}))
	defer srv.Close()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	if NewTracing(nil).Transport(http.DefaultTransport) != http.DefaultTransport {
		t.Fatal("a nil TracerProvider wraps the transport")
	}
	hc := &http.Client{Transport: NewTracing(tp).Transport(nil)}

	parentCtx, parent := tp.Tracer("test").Start(context.Background(), "parent")
	var sc trace.SpanContext
	req, _ := http.NewRequestWithContext(WithSpanSink(parentCtx, &sc), http.MethodPut, srv.URL+"/api/v1/namespaces/ns/configmaps/c", nil)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	req, _ = http.NewRequestWithContext(parentCtx, http.MethodDelete, srv.URL+"/api/v1/namespaces/ns/configmaps/c", nil)
	resp, err = hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	parent.End()

	spans := rec.Ended()
	if len(spans) != 3 {
		t.Fatalf("%d spans ended, want 3", len(spans))
	}
	put, del := spans[0], spans[1]
	if put.Name() != "UPDATE configmaps" || del.Name() != "DELETE configmaps" {
		t.Fatalf("span names %q, %q", put.Name(), del.Name())
	}
	if put.Parent().SpanID() != parent.SpanContext().SpanID() || put.SpanKind() != trace.SpanKindClient {
		t.Fatal("the API call's span is not a client child of the context's span")
	}
	if sc.SpanID() != put.SpanContext().SpanID() {
		t.Fatal("WithSpanSink did not receive the call's span context")
	}
	if traceparent == "" {
		t.Fatal("no traceparent header sent")
	}
	attrs := map[attribute.Key]attribute.Value{}
	for _, kv := range put.Attributes() {
		attrs[kv.Key] = kv.Value
	}
	for k, want := range map[attribute.Key]string{
		"http.request.method": "PUT", "url.path": "/api/v1/namespaces/ns/configmaps/c",
		AttrVerb: "update", AttrResource: "configmaps", AttrVersion: "v1", AttrNamespace: "ns", AttrName: "c",
		AttrResourceVersion: "123",
	} {
		if got := attrs[k].Emit(); got != want {
			t.Errorf("attribute %s = %q, want %q", k, got, want)
		}
	}
	if attrs["http.response.status_code"].AsInt64() != 200 {
		t.Errorf("status code %v", attrs["http.response.status_code"])
	}
	if del.Status().Code != codes.Error {
		t.Errorf("a 404 answer's span has status %v", del.Status())
	}
}

// FuzzParseCall: any request path and method parse without a panic, into
// a call whose resource is set exactly when its verb is, and whose span
// name starts with the verb.
func FuzzParseCall(f *testing.F) {
	for _, seed := range []string{"/api/v1/namespaces/ns/pods/p", "/apis/g/v/namespaces", "/api", "/apis/g/v/x/y/z/w", "//api//v1", "/prefix/apis/a/b/namespaces/x/y", "/api/v1//x", "/api/v1/namespaces/ns//p"} {
		f.Add("GET", seed, "watch=1")
	}
	f.Fuzz(func(t *testing.T, method, path, query string) {
		q, _ := url.ParseQuery(query)
		c := ParseCall(method, path, q.Get)
		if (c.Verb == "") != (c.Resource == "") {
			t.Fatalf("ParseCall(%q, %q) = %+v: a verb without a resource or the reverse", method, path, c)
		}
		if name := c.SpanName(method, path); c.Verb != "" && !strings.HasPrefix(name, strings.ToUpper(c.Verb)+" ") {
			t.Fatalf("span name %q of %+v", name, c)
		}
	})
}
