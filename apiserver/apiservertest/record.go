package apiservertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"

	"kloop.dev/kloop/apiserver"
)

// DefaultRecordSize is how many requests a Record keeps unless told
// otherwise: the newest 10,000.
const DefaultRecordSize = 10_000

// RecordOptions configure a Record. The zero value works.
type RecordOptions struct {
	// Size is how many requests the record keeps, the newest ones (older
	// ones are dropped, and counted by Dropped). Zero or negative: the
	// default, DefaultRecordSize.
	Size int
	// OnRequest, when set, is called with every request as it is recorded
	// (kept or not), on the request's own goroutine before the client gets
	// the end of its answer: keep it short, and do not make requests of
	// the server from it.
	OnRequest func(Request)
}

// Request is one request the server answered, as a Record keeps it.
type Request struct {
	// Time is when the server received the request.
	Time time.Time `json:"time"`
	// Duration is how long the server took to answer it; for a watch, to
	// start its stream (watches are recorded as their stream starts).
	Duration time.Duration `json:"duration"`
	// User is the user the request authenticated as.
	User string `json:"user"`
	// Verb is kube's: get, list, watch, create, update, patch, delete,
	// deletecollection; for a request on a path that is no resource
	// (/version, /apis), the method in lower case.
	Verb string `json:"verb"`
	// APIGroup, Resource, Subresource, Namespace and Name say what the
	// request is about; for a create, Name is the created object's.
	APIGroup    string `json:"apiGroup,omitempty"`
	Resource    string `json:"resource,omitempty"`
	Subresource string `json:"subresource,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	Name        string `json:"name,omitempty"`
	// InitialEvents is true for a watch that asked for the initial state
	// (sendInitialEvents=true, or resourceVersion "" or "0"): a list
	// streamed, or a watch from scratch.
	InitialEvents bool `json:"initialEvents,omitempty"`
	// SentResourceVersion is the resourceVersion the request carried: its
	// query's (get, list, watch), or the metadata.resourceVersion of its
	// body (update, patch: a precondition), or the preconditions of its
	// delete options; bodies are read in JSON, and in protobuf for
	// built-in kinds.
	SentResourceVersion string `json:"sentResourceVersion,omitempty"`
	// ResourceVersion is the answer's: the object's (get and writes), the
	// list's; empty for an error, a watch, or an answer neither JSON nor
	// protobuf of a built-in kind.
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// Revision is the server's revision when it answered: every write
	// committed before the answer is at or below it.
	Revision int64 `json:"revision"`
	// Code is the HTTP status of the answer (200 for a watch whose stream
	// began, even one that then ends with an ERROR event).
	Code int `json:"code"`
	// Fault names the fault that answered or changed the request, if any.
	Fault string `json:"fault,omitempty"`

	token string
}

// Matches reports whether the request matches m.
func (r *Request) Matches(m Match) bool {
	return m.Client.matches(&apiserver.Request{User: apiserver.UserInfo{Name: r.User}, Token: r.token}) &&
		m.matchesRequest(r.Verb, r.APIGroup, r.Resource, r.Subresource, r.Namespace, r.Name)
}

// GroupResource is the request's resource as Match names it:
// "configmaps", "deployments.apps".
func (r *Request) GroupResource() string {
	if r.APIGroup == "" {
		return r.Resource
	}
	return r.Resource + "." + r.APIGroup
}

func (r Request) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s", r.Time.Format("15:04:05.000000"), r.User, r.Verb)
	if res := r.GroupResource(); res != "" {
		b.WriteString(" " + res)
		if r.Subresource != "" {
			b.WriteString("/" + r.Subresource)
		}
	}
	if r.Namespace != "" || r.Name != "" {
		fmt.Fprintf(&b, " %s/%s", r.Namespace, r.Name)
	}
	if r.InitialEvents {
		b.WriteString(" initial-events")
	}
	if r.SentResourceVersion != "" || r.ResourceVersion != "" {
		fmt.Fprintf(&b, " rv %q→%q", r.SentResourceVersion, r.ResourceVersion)
	}
	fmt.Fprintf(&b, " %d @%d", r.Code, r.Revision)
	if r.Fault != "" {
		b.WriteString(" [" + r.Fault + "]")
	}
	return b.String()
}

// Record is the record of the requests a server answered, the newest
// RecordOptions.Size of them, for a test to check its invariants against.
// It is safe for concurrent use.
type Record struct {
	opts RecordOptions
	srv  *apiserver.Server

	mu      sync.Mutex // guards the fields below
	ring    []Request  // the kept requests; ring[start] is the oldest
	start   int
	dropped int
	stopped bool
	// changed is closed, and replaced, at every request recorded.
	changed chan struct{}
}

// Record starts recording every request the server answers (authenticated
// ones: a 401 is not recorded), replacing the record started before if
// any, which stops. A server without a record spends nothing on one.
func (f *Faults) Record(opts RecordOptions) *Record {
	if opts.Size <= 0 {
		opts.Size = DefaultRecordSize
	}
	rec := &Record{opts: opts, srv: f.srv, changed: make(chan struct{})}
	f.mu.Lock()
	old := f.record
	f.record = rec
	f.mu.Unlock()
	if old != nil {
		old.Stop()
	}
	return rec
}

// Stop stops the record: it keeps what it has and records nothing more.
func (rec *Record) Stop() {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.stopped = true
}

func (rec *Record) add(r Request) {
	if rec.opts.OnRequest != nil {
		rec.opts.OnRequest(r)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.stopped {
		return
	}
	if len(rec.ring) < rec.opts.Size {
		rec.ring = append(rec.ring, r)
	} else {
		rec.ring[rec.start] = r
		rec.start = (rec.start + 1) % len(rec.ring)
		rec.dropped++
	}
	close(rec.changed)
	rec.changed = make(chan struct{})
}

// Requests returns the kept requests that match m, oldest first.
func (rec *Record) Requests(m Match) []Request {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.matchingLocked(m)
}

func (rec *Record) matchingLocked(m Match) []Request {
	var out []Request
	for i := range rec.ring {
		r := &rec.ring[(rec.start+i)%len(rec.ring)]
		if r.Matches(m) {
			out = append(out, *r)
		}
	}
	return out
}

// Count returns how many kept requests match m.
func (rec *Record) Count(m Match) int { return len(rec.Requests(m)) }

// Dropped returns how many requests the record dropped, the oldest, to
// keep within its size.
func (rec *Record) Dropped() int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.dropped
}

// Wait waits until at least n kept requests match m and returns them, or
// returns ctx's error with those there are.
func (rec *Record) Wait(ctx context.Context, m Match, n int) ([]Request, error) {
	for {
		rec.mu.Lock()
		got := rec.matchingLocked(m)
		changed := rec.changed
		rec.mu.Unlock()
		if len(got) >= n {
			return got, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return got, fmt.Errorf("apiservertest: %d requests matching %s recorded, waiting for %d: %w", len(got), m, n, ctx.Err())
		}
	}
}

// maxRecordedBody bounds the bytes of a request's or an answer's body the
// record reads resourceVersions from.
const maxRecordedBody = 4 << 20

// recordWriter records one request: its code and, from the bodies, the
// resourceVersions and the created object's name.
type recordWriter struct {
	http.ResponseWriter
	rec   *Record
	r     *http.Request
	entry Request
	start time.Time
	watch bool
	fault string // the fault that answered or changed it

	code     int
	body     bytes.Buffer // the answer, up to maxRecordedBody
	reqBody  *teeBody     // the request's body as the server read it
	recorded bool
}

func (rec *Record) begin(w http.ResponseWriter, r *http.Request, req *apiserver.Request, start time.Time, watch bool) *recordWriter {
	rw := &recordWriter{ResponseWriter: w, rec: rec, r: r, start: start, watch: watch}
	rw.entry = Request{
		Time: start, User: req.User.Name, Verb: req.Verb, APIGroup: req.APIGroup, Resource: req.Resource,
		Subresource: req.Subresource, Namespace: req.Namespace, Name: req.Name, token: req.Token,
	}
	switch req.Verb {
	case "get", "list", "watch":
		q := r.URL.Query()
		rw.entry.SentResourceVersion = q.Get("resourceVersion")
		rw.entry.InitialEvents = watch && wantsInitialEvents(q)
	case "update", "patch", "delete":
		if r.Body != nil && r.Body != http.NoBody {
			rw.reqBody = &teeBody{ReadCloser: r.Body}
			r.Body = rw.reqBody
		}
	}
	return rw
}

func (rw *recordWriter) WriteHeader(code int) {
	if rw.code == 0 {
		rw.code = code
		if rw.watch {
			rw.record()
		}
	}
	rw.ResponseWriter.WriteHeader(code)
}

func (rw *recordWriter) Write(b []byte) (int, error) {
	if rw.code == 0 {
		rw.WriteHeader(http.StatusOK)
	}
	if !rw.watch && rw.body.Len()+len(b) <= maxRecordedBody {
		rw.body.Write(b)
	}
	return rw.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (rw *recordWriter) Unwrap() http.ResponseWriter { return rw.ResponseWriter }

// end records the request once answered, unless it was recorded before.
func (rw *recordWriter) end() {
	if !rw.recorded {
		rw.record()
	}
}

func (rw *recordWriter) record() {
	rw.recorded = true
	e := rw.entry
	e.Duration = time.Since(rw.start)
	e.Code = rw.code
	if e.Code == 0 {
		e.Code = http.StatusOK
	}
	e.Fault = rw.fault
	e.Revision = rw.rec.srv.Revision()
	if rw.reqBody != nil {
		if m, ok := metadataOf(rw.r.Header.Get("Content-Type"), rw.reqBody.buf.Bytes()); ok {
			e.SentResourceVersion = m.Metadata.ResourceVersion
			if p := m.Preconditions.ResourceVersion; p != nil {
				e.SentResourceVersion = *p
			}
		}
	}
	if !rw.watch {
		if m, ok := metadataOf(rw.Header().Get("Content-Type"), rw.body.Bytes()); ok {
			e.ResourceVersion = m.Metadata.ResourceVersion
			if e.Name == "" && e.Verb == "create" {
				e.Name = m.Metadata.Name
			}
		}
	}
	rw.rec.add(e)
}

// bodyMetadata is what the record reads of a body.
type bodyMetadata struct {
	Metadata struct {
		Name            string `json:"name"`
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
	// Preconditions of DeleteOptions.
	Preconditions struct {
		ResourceVersion *string `json:"resourceVersion"`
	} `json:"preconditions"`
}

// metadataOf reads the name and resourceVersion of a body: JSON (an
// object, a list, DeleteOptions), or protobuf of a built-in kind.
func metadataOf(contentType string, b []byte) (bodyMetadata, bool) {
	var m bodyMetadata
	if len(b) == 0 {
		return m, false
	}
	if !strings.HasPrefix(contentType, "application/vnd.kubernetes.protobuf") {
		return m, json.Unmarshal(b, &m) == nil
	}
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(b, nil, nil)
	if err != nil {
		return m, false
	}
	if do, ok := obj.(*metav1.DeleteOptions); ok {
		if do.Preconditions != nil {
			m.Preconditions.ResourceVersion = do.Preconditions.ResourceVersion
		}
		return m, true
	}
	if o, err := meta.Accessor(obj); err == nil {
		m.Metadata.Name, m.Metadata.ResourceVersion = o.GetName(), o.GetResourceVersion()
		return m, true
	}
	if l, err := meta.ListAccessor(obj); err == nil {
		m.Metadata.ResourceVersion = l.GetResourceVersion()
		return m, true
	}
	return m, false
}

// teeBody keeps a copy of what the server reads of a request's body, up to
// maxRecordedBody.
type teeBody struct {
	io.ReadCloser
	buf bytes.Buffer
}

func (t *teeBody) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if n > 0 && t.buf.Len()+n <= maxRecordedBody {
		t.buf.Write(p[:n])
	}
	return n, err
}
