package rest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// TracerName is the instrumentation scope of the spans of API calls and of
// reconciles.
const TracerName = "kloop.dev/kloop"

// The attributes of an API call's span, besides OpenTelemetry's HTTP ones
// (http.request.method, url.path, http.response.status_code).
const (
	AttrVerb            = "k8s.api.verb"
	AttrGroup           = "k8s.api.group"
	AttrVersion         = "k8s.api.version"
	AttrResource        = "k8s.api.resource"
	AttrSubresource     = "k8s.api.subresource"
	AttrNamespace       = "k8s.namespace.name"
	AttrName            = "k8s.object.name"
	AttrResourceVersion = "k8s.object.resource_version"
)

// Call is what a request's path and method say of a Kubernetes API call:
// its verb (get, list, watch, create, update, patch, delete,
// deletecollection; "" for a path outside the resource APIs, such as
// discovery's) and its resource.
type Call struct {
	Verb, Group, Version, Resource, Subresource, Namespace, Name string
}

// ParseCall reads the API call of a request to path (with an optional
// prefix before /api or /apis) with method and query.
func ParseCall(method, path string, query func(string) string) Call {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	i := 0
	for i < len(segs) && segs[i] != "api" && segs[i] != "apis" {
		i++
	}
	var c Call
	rest := segs[i:]
	switch {
	case len(rest) >= 3 && rest[0] == "api":
		c.Version, rest = rest[1], rest[2:]
	case len(rest) >= 4 && rest[0] == "apis":
		c.Group, c.Version, rest = rest[1], rest[2], rest[3:]
	default:
		return c
	}
	if rest[0] == "namespaces" && len(rest) >= 3 && rest[2] != "status" && rest[2] != "finalize" {
		// (…/namespaces/x/status and /finalize are a namespace's
		// subresources, as kube-apiserver reads them.)
		c.Namespace, rest = rest[1], rest[2:]
	}
	if rest[0] == "" {
		return Call{} // an empty segment: no resource path
	}
	c.Resource = rest[0]
	if len(rest) > 1 {
		c.Name = rest[1]
	}
	if len(rest) > 2 {
		c.Subresource = strings.Join(rest[2:], "/")
	}
	switch method {
	case http.MethodGet:
		switch {
		case c.Name != "":
			c.Verb = "get"
		case query("watch") == "true" || query("watch") == "1":
			c.Verb = "watch"
		default:
			c.Verb = "list"
		}
	case http.MethodPost:
		c.Verb = "create"
	case http.MethodPut:
		c.Verb = "update"
	case http.MethodPatch:
		c.Verb = "patch"
	case http.MethodDelete:
		if c.Name != "" {
			c.Verb = "delete"
		} else {
			c.Verb = "deletecollection"
		}
	default:
		c.Verb = strings.ToLower(method)
	}
	return c
}

// SpanName is the name of the call's span: "<VERB> <resource>" (with
// "/<subresource>"), or "<METHOD> <path>" outside the resource APIs.
func (c Call) SpanName(method, path string) string {
	if c.Verb == "" {
		return method + " " + path
	}
	r := c.Resource
	if c.Subresource != "" {
		r += "/" + c.Subresource
	}
	return strings.ToUpper(c.Verb) + " " + r
}

// Tracing wraps round trippers so that each request they send is an
// OpenTelemetry span (see Transport). The zero value is not usable; make
// one with NewTracing.
type Tracing struct {
	tracer trace.Tracer
	prop   propagation.TraceContext
}

// NewTracing returns the tracing of tp's tracer, nil when tp is nil (no
// tracing: Transport returns its argument).
func NewTracing(tp trace.TracerProvider) *Tracing {
	if tp == nil {
		return nil
	}
	return &Tracing{tracer: tp.Tracer(TracerName)}
}

// Transport returns rt (http.DefaultTransport when nil) wrapped so that each
// request is a client span, child of the span in the request's context
// (a reconcile's), named by SpanName, with the call's attributes, the
// answer's status code and — for a JSON answer — the resourceVersion it
// returned; the W3C traceparent header carries it to the server. The span
// ends once the answer's body is read or closed (a watch's at its
// headers). A context made by WithSpanSink receives the span's context.
// On a nil Tracing, Transport returns rt.
func (t *Tracing) Transport(rt http.RoundTripper) http.RoundTripper {
	if t == nil {
		return rt
	}
	if rt == nil {
		rt = http.DefaultTransport
	}
	return &tracingTransport{t: t, next: rt}
}

type tracingTransport struct {
	t    *Tracing
	next http.RoundTripper
}

type sinkKey struct{}

// WithSpanSink returns ctx carrying dst: a request sent with the context
// through a tracing Transport stores its span's context in *dst.
func WithSpanSink(ctx context.Context, dst *trace.SpanContext) context.Context {
	return context.WithValue(ctx, sinkKey{}, dst)
}

// SpanSinkFrom returns the sink of WithSpanSink in ctx, nil without one.
func SpanSinkFrom(ctx context.Context) *trace.SpanContext {
	dst, _ := ctx.Value(sinkKey{}).(*trace.SpanContext)
	return dst
}

func (tt *tracingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	q := req.URL.Query()
	call := ParseCall(req.Method, req.URL.Path, q.Get)
	attrs := make([]attribute.KeyValue, 0, 10)
	attrs = append(attrs,
		attribute.String("http.request.method", req.Method),
		attribute.String("url.path", req.URL.Path))
	if call.Verb != "" {
		attrs = append(attrs,
			attribute.String(AttrVerb, call.Verb),
			attribute.String(AttrGroup, call.Group),
			attribute.String(AttrVersion, call.Version),
			attribute.String(AttrResource, call.Resource))
		if call.Subresource != "" {
			attrs = append(attrs, attribute.String(AttrSubresource, call.Subresource))
		}
		if call.Namespace != "" {
			attrs = append(attrs, attribute.String(AttrNamespace, call.Namespace))
		}
		if call.Name != "" {
			attrs = append(attrs, attribute.String(AttrName, call.Name))
		}
	}
	ctx, span := tt.t.tracer.Start(ctx, call.SpanName(req.Method, req.URL.Path),
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	if dst := SpanSinkFrom(ctx); dst != nil {
		*dst = span.SpanContext()
	}
	out := req.Clone(ctx)
	tt.t.prop.Inject(ctx, propagation.HeaderCarrier(out.Header))
	resp, err := tt.next.RoundTrip(out)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		span.End()
		return resp, err
	}
	span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
	if resp.StatusCode >= 400 {
		span.SetStatus(codes.Error, strconv.Itoa(resp.StatusCode)+" "+http.StatusText(resp.StatusCode))
	}
	if call.Verb == "watch" || resp.Body == nil || resp.Body == http.NoBody {
		span.End()
		return resp, nil
	}
	json := strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json")
	resp.Body = &tracedBody{ReadCloser: resp.Body, span: span, json: json}
	return resp, nil
}

// rvPrefix is how much of a JSON answer tracedBody keeps to find its
// resourceVersion in: an object's and a list's metadata come first.
const rvPrefix = 4096

// tracedBody ends its span at EOF or Close, with the resourceVersion found
// in the first rvPrefix bytes of a JSON answer.
type tracedBody struct {
	io.ReadCloser
	span  trace.Span
	json  bool
	ended bool
	head  []byte
}

func (b *tracedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.json && len(b.head) < rvPrefix && n > 0 {
		if b.head == nil {
			b.head = make([]byte, 0, rvPrefix)
		}
		b.head = append(b.head, p[:min(n, rvPrefix-len(b.head))]...)
	}
	if err != nil {
		b.end()
	}
	return n, err
}

func (b *tracedBody) Close() error {
	err := b.ReadCloser.Close()
	b.end()
	return err
}

func (b *tracedBody) end() {
	if b.ended {
		return
	}
	b.ended = true
	if rv := jsonResourceVersion(b.head); rv != "" {
		b.span.SetAttributes(attribute.String(AttrResourceVersion, rv))
	}
	b.head = nil
	b.span.End()
}

// jsonResourceVersion returns the first "resourceVersion" string of a JSON
// document: its metadata's, for an object or a list as the API server
// encodes them (metadata before spec, status or items).
func jsonResourceVersion(b []byte) string {
	const key = `"resourceVersion":`
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return ""
	}
	v := bytes.TrimLeft(b[i+len(key):], " ")
	if len(v) == 0 || v[0] != '"' {
		return ""
	}
	end := bytes.IndexByte(v[1:], '"')
	if end < 0 {
		return ""
	}
	return string(v[1 : 1+end])
}
