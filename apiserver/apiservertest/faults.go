package apiservertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"kloop.dev/kloop/apiserver"
)

// Faults injects faults into an embedded server, each scoped to one client
// (a user or a bearer token), so that a test perturbs the controller it
// tests and not the checker that watches it. Get it with [Server.Faults] or
// [Env.Faults]; [Faults.For] scopes it to a client. Every fault is a
// [Fault] value that ends when released, when its count is spent, or after
// a time ([Fault.ReleaseAfter]). [Faults.Record] keeps a record of every
// request the server answers.
//
// Faults work by the server's hooks (apiserver.Server.SetInterceptor): the
// first call of Server.Faults installs them, and from then on every
// authenticated request pays a look-up of the faults in effect; a server
// that never called it pays nothing.
type Faults struct {
	srv *apiserver.Server

	mu sync.Mutex // guards the fields below and every Fault's left and timer
	// faults are those in effect, oldest first.
	faults []*Fault
	// watches are the open watches.
	watches map[*watchWriter]struct{}
	record  *Record // nil until Record
}

func newFaults(srv *apiserver.Server) *Faults {
	f := &Faults{srv: srv, watches: map[*watchWriter]struct{}{}}
	srv.SetInterceptor(f.intercept)
	return f
}

// Faults returns the fault injector of the server (the same one on every
// call).
func (s *Server) Faults() *Faults {
	s.faultsOnce.Do(func() { s.faults = newFaults(s.Server) })
	return s.faults
}

// Faults returns the fault injector of the embedded server. Faults are the
// embedded server's alone: on the real kube-apiserver it skips the test,
// saying so (a test that runs on both targets and injects faults runs on
// the embedded one only; one that injects faults in a part of it checks
// env.Embedded != nil first).
func (e *Env) Faults() *Faults {
	e.t.Helper()
	if e.Embedded == nil {
		e.t.Skipf("SKIPPED ON THE REAL KUBE-APISERVER: fault injection (apiservertest.Faults) needs the embedded server")
	}
	return e.Embedded.Faults()
}

// Client selects the requests of one client: those authenticated as a
// user, or with a bearer token. The zero Client is every client.
type Client struct {
	user, token string
}

// AnyClient is every client.
var AnyClient = Client{}

// User is the client authenticated as the user name (whatever its token:
// every configuration ConfigFor made for that user), before any
// impersonation.
func User(name string) Client { return Client{user: name} }

// Token is the client authenticated with the bearer token.
func Token(token string) Client { return Client{token: token} }

// ClientOf is the client of a configuration made by Config, ConfigFor or
// ServiceAccountConfig: the one authenticated with its bearer token, so two
// configurations of the same user are two clients. A configuration without
// a bearer token is no client: ClientOf returns a Client that matches no
// request.
func ClientOf(cfg *rest.Config) Client {
	if cfg.BearerToken == "" {
		return Client{token: "\x00none"} // no bearer token is ever this
	}
	return Client{token: cfg.BearerToken}
}

func (c Client) String() string {
	switch {
	case c.user != "":
		return "user " + strconv.Quote(c.user)
	case c.token != "":
		return "a token"
	}
	return "any client"
}

func (c Client) matches(req *apiserver.Request) bool {
	switch {
	case c.user != "":
		return req.User.Name == c.user
	case c.token != "":
		return req.Token == c.token
	}
	return true
}

// Match selects requests by what they ask, as RBAC names it; empty fields
// match anything.
type Match struct {
	// Client sends the request. Ignored by ClientFaults.Fail, which takes
	// its own.
	Client Client
	// Verb is kube's: get, list, watch, create, update, patch, delete or
	// deletecollection.
	Verb string
	// Resource is a resource's plural name, with its group after a dot
	// unless it is the core group: "configmaps", "deployments.apps". A
	// name without a dot matches the resource in any group.
	Resource string
	// Subresource such as "status" or "scale".
	Subresource string
	// Namespace and Name of the object (a create's name is its answer's in
	// the record, none for a Fail).
	Namespace, Name string
}

func (m Match) String() string {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	add("verb", m.Verb)
	add("resource", m.Resource)
	add("subresource", m.Subresource)
	add("namespace", m.Namespace)
	add("name", m.Name)
	if len(parts) == 0 {
		return "every request"
	}
	return strings.Join(parts, " ")
}

// matchesRequest reports whether the request's attributes match m (its
// Client aside).
func (m Match) matchesRequest(verb, group, resource, subresource, namespace, name string) bool {
	if m.Resource != "" {
		res, grp, hasGroup := strings.Cut(m.Resource, ".")
		if res != resource || hasGroup && grp != group {
			return false
		}
	}
	return (m.Verb == "" || m.Verb == verb) && (m.Subresource == "" || m.Subresource == subresource) &&
		(m.Namespace == "" || m.Namespace == namespace) && (m.Name == "" || m.Name == name)
}

// For returns the faults of one client.
func (f *Faults) For(c Client) *ClientFaults { return &ClientFaults{f: f, c: c} }

// ClientFaults inject faults into the requests of one client.
type ClientFaults struct {
	f *Faults
	c Client
}

// faultKind is what a Fault does.
type faultKind uint8

const (
	kindExpire faultKind = iota + 1
	kindFail
	kindDelay
	kindHold
	kindStale
	kindReorder
	kindDuplicate
	kindDropBookmarks
)

// A Fault is one fault in effect. It ends when released, when its count is
// spent (faults on the next n requests or watches), or after the time
// ReleaseAfter gives it; once ended it does nothing more, and releasing it
// again does nothing.
type Fault struct {
	f      *Faults
	kind   faultKind
	client Client
	desc   string

	match   Match         // kindFail
	failure Failure       // kindFail
	delay   time.Duration // kindDelay
	rev     int64         // kindStale

	// left counts the requests or watches the fault still applies to; -1:
	// until released. Guarded by f.mu.
	left  int
	timer *time.Timer // ReleaseAfter's; guarded by f.mu
	hits  atomic.Int64
	done  chan struct{} // closed when the fault ends
}

func (x *Fault) String() string { return x.desc }

// Done is closed when the fault ends.
func (x *Fault) Done() <-chan struct{} { return x.done }

// Hits returns how many times the fault acted: requests failed, requests
// and watches served stale, watches expired or reordered, events delayed,
// held, duplicated or dropped.
func (x *Fault) Hits() int { return int(x.hits.Load()) }

// Release ends the fault now. The watch events it delayed or held are
// delivered (in order) at once.
func (x *Fault) Release() {
	x.f.mu.Lock()
	ended := x.f.endLocked(x)
	x.f.mu.Unlock()
	if ended {
		x.f.wakeWatches()
	}
}

// ReleaseAfter makes the fault end d from now (unless it ended before),
// and returns it.
func (x *Fault) ReleaseAfter(d time.Duration) *Fault {
	x.f.mu.Lock()
	defer x.f.mu.Unlock()
	if x.timer != nil {
		x.timer.Stop()
	}
	x.timer = time.AfterFunc(d, x.Release)
	return x
}

// endLocked removes x from the faults in effect; it reports whether x was
// in effect. f.mu is held.
func (f *Faults) endLocked(x *Fault) bool {
	i := slices.Index(f.faults, x)
	if i < 0 {
		return false
	}
	f.faults = slices.Delete(f.faults, i, i+1)
	if x.timer != nil {
		x.timer.Stop()
	}
	close(x.done)
	return true
}

// ReleaseAll ends every fault in effect.
func (f *Faults) ReleaseAll() {
	f.mu.Lock()
	for len(f.faults) > 0 {
		f.endLocked(f.faults[0])
	}
	f.mu.Unlock()
	f.wakeWatches()
}

// add puts a new fault in effect.
func (f *Faults) add(x *Fault) *Fault {
	x.f, x.done = f, make(chan struct{})
	x.desc = fmt.Sprintf("%s for %s", x.desc, x.client)
	f.mu.Lock()
	f.faults = append(f.faults, x)
	f.mu.Unlock()
	f.wakeWatches()
	return x
}

// takeLocked counts one hit of x and, for a fault with a count, spends one
// of it (ending it on the last). f.mu is held.
func (f *Faults) takeLocked(x *Fault) {
	x.hits.Add(1)
	if x.left > 0 {
		x.left--
		if x.left == 0 {
			f.endLocked(x)
		}
	}
}

func count(n int) int { return max(n, 1) }

// DropWatches ends the client's open watches now, as a server or a proxy
// that closes them: each stream ends cleanly, and the client watches again
// from the last resourceVersion it saw (client-go's reflector and kloop's
// do). It returns how many it ended.
func (c *ClientFaults) DropWatches() int {
	c.f.mu.Lock()
	var ended []*watchWriter
	for w := range c.f.watches {
		if c.c.matches(w.req) {
			ended = append(ended, w)
		}
	}
	c.f.mu.Unlock()
	for _, w := range ended {
		w.drop()
	}
	return len(ended)
}

// ExpireWatches answers the client's next n watches (n < 1 counts as 1)
// with 410 Gone, as kube-apiserver answers a watch from a resourceVersion
// it no longer has: a successful response whose only event is an ERROR
// carrying a Status with reason Expired. A client then lists again
// (client-go's reflector relists; kloop's relists with a consistent read).
func (c *ClientFaults) ExpireWatches(n int) *Fault {
	return c.f.add(&Fault{kind: kindExpire, client: c.c, left: count(n), desc: fmt.Sprintf("ExpireWatches(%d)", n)})
}

// DelayWatches delays every event of the client's watches, open and new,
// until d after the server wrote it, as a lagging connection or API server
// would: events keep their order, nothing is lost, and bookmarks are
// delayed too (d ≤ 0 delays nothing). Past 64 MiB of delayed events a
// watch ends, as kube-apiserver ends a watcher that does not keep up; the
// client watches again.
func (c *ClientFaults) DelayWatches(d time.Duration) *Fault {
	return c.f.add(&Fault{kind: kindDelay, client: c.c, delay: d, left: -1, desc: fmt.Sprintf("DelayWatches(%s)", d)})
}

// HoldWatches holds every event of the client's watches, open and new,
// until the fault is released, when they are delivered in order: the
// client's view lags (a held informer's cache stays behind) while its
// requests are answered at once. Past 64 MiB of held events a watch ends,
// as kube-apiserver ends a watcher that does not keep up; the client
// watches again, and that watch is held too.
func (c *ClientFaults) HoldWatches() *Fault {
	return c.f.add(&Fault{kind: kindHold, client: c.c, left: -1, desc: "HoldWatches()"})
}

// StaleReads makes the server answer the client as an API server whose
// view stopped at revision rev (Sieve's stale API server, behind the
// others in an HA cluster): its GETs answer the objects as they were at
// rev, its LISTs the state at rev (at resourceVersion rev, whatever
// consistency they ask: a server does not know it is behind; one that asks
// for a later resourceVersion gets 504 Too large resource version), its
// watches' initial events (sendInitialEvents, or a watch from "" or "0")
// the state at rev, and every watch event after rev is held until the
// fault is released, when the view catches up. Its writes go to the
// present state, as a stale server's go to etcd. rev must be a revision
// the server has reached; a revision older than the resource's history
// (compacted) gets 410 Expired on the reads.
func (c *ClientFaults) StaleReads(rev int64) (*Fault, error) {
	if rev <= 0 || rev > c.f.srv.Revision() {
		return nil, fmt.Errorf("apiservertest: StaleReads(%d): the server's revision is %d", rev, c.f.srv.Revision())
	}
	return c.f.add(&Fault{kind: kindStale, client: c.c, rev: rev, left: -1, desc: fmt.Sprintf("StaleReads(%d)", rev)}), nil
}

// ReorderInitialEvents delivers the initial events of the client's next n
// watches (n < 1 counts as 1) that have them — sendInitialEvents, or a
// watch from resourceVersion "" or "0" — in reverse order: the watch
// protocol makes them the state at a revision, a set with no order (the
// initial-events-end bookmark still comes after all of them). A client
// that builds its state from them, as informers do, ends with the same
// state; one that relies on their order (parents before children, the
// first one first) does not.
func (c *ClientFaults) ReorderInitialEvents(n int) *Fault {
	return c.f.add(&Fault{kind: kindReorder, client: c.c, left: count(n), desc: fmt.Sprintf("ReorderInitialEvents(%d)", n)})
}

// DuplicateEvents sends every object event (ADDED, MODIFIED, DELETED) of
// the client's next n watches (n < 1 counts as 1) twice in a row, the
// second time with the same object and resourceVersion. A watch sends
// each change once; a client sees the same state again at the same
// resourceVersion on every relist and resync, and one that resumes a watch
// can tell an event not newer than its position (resourceVersions compare,
// KEP-5504). A client that keeps state by resourceVersion, as an
// informer's cache, is unchanged by the copy; one that counts events, or
// acts once per event, is not.
func (c *ClientFaults) DuplicateEvents(n int) *Fault {
	return c.f.add(&Fault{kind: kindDuplicate, client: c.c, left: count(n), desc: fmt.Sprintf("DuplicateEvents(%d)", n)})
}

// DropBookmarks drops the periodic bookmarks of the client's watches, open
// and new, while the fault is in effect: kube's API promises none ("nor may
// clients assume the server will send any BOOKMARK event"). The bookmark
// that ends a watch's initial events (k8s.io/initial-events-end), which
// sendInitialEvents promises, is still sent.
func (c *ClientFaults) DropBookmarks() *Fault {
	return c.f.add(&Fault{kind: kindDropBookmarks, client: c.c, left: -1, desc: "DropBookmarks()"})
}

// Failure is how Fail answers a request.
type Failure struct {
	// Code is the HTTP status: 409 Conflict (as for a stale
	// resourceVersion), 429 Too Many Requests (as kube-apiserver's
	// priority and fairness), 500 Internal Server Error, 503 Service
	// Unavailable, or 504 Gateway Timeout (as kube-apiserver's request
	// timeout: "the server was unable to return a response in the time
	// allotted, but may still be processing the request").
	Code int
	// RetryAfter, when positive, is sent as the Retry-After header (whole
	// seconds, rounded up) and the Status' retryAfterSeconds. client-go
	// and kloop retry a 429 or 5xx answer that has one, after that long.
	RetryAfter time.Duration
	// AfterCommit serves the request first, its write committed, and then
	// answers the failure instead of the server's answer: the client
	// cannot tell whether its write happened (an ambiguous outcome). A
	// watch is failed at once.
	AfterCommit bool
}

// The usual failures.
var (
	Conflict        = Failure{Code: http.StatusConflict}
	TooManyRequests = Failure{Code: http.StatusTooManyRequests, RetryAfter: time.Second}
	InternalError   = Failure{Code: http.StatusInternalServerError}
	Unavailable     = Failure{Code: http.StatusServiceUnavailable}
	// TimeoutAfterCommit commits the write, then answers 504 Timeout.
	TimeoutAfterCommit = Failure{Code: http.StatusGatewayTimeout, AfterCommit: true}
)

func (fl Failure) validate() error {
	switch fl.Code {
	case http.StatusConflict, http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
	default:
		return fmt.Errorf("apiservertest: a failure's code is 409, 429, 500, 503 or 504, not %d", fl.Code)
	}
	if fl.RetryAfter < 0 {
		return fmt.Errorf("apiservertest: a failure's RetryAfter is negative (%s)", fl.RetryAfter)
	}
	return nil
}

func (fl Failure) String() string {
	s := strconv.Itoa(fl.Code)
	if fl.RetryAfter > 0 {
		s += fmt.Sprintf(" Retry-After %s", fl.RetryAfter)
	}
	if fl.AfterCommit {
		s += " after commit"
	}
	return s
}

// status is the Status kube-apiserver answers for the failure.
func (fl Failure) status(gr schema.GroupResource, name string) *metav1.Status {
	retry := int((fl.RetryAfter + time.Second - 1) / time.Second)
	var err *apierrors.StatusError
	switch fl.Code {
	case http.StatusConflict:
		err = apierrors.NewConflict(gr, name, errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	case http.StatusTooManyRequests:
		err = apierrors.NewTooManyRequests("Too many requests, please try again later.", retry)
	case http.StatusInternalServerError:
		err = apierrors.NewInternalError(errors.New("fault injected by apiservertest"))
	case http.StatusServiceUnavailable:
		err = apierrors.NewServiceUnavailable("fault injected by apiservertest")
	default:
		err = apierrors.NewTimeoutError("request did not complete within the allotted timeout", 0)
	}
	st := err.ErrStatus
	if retry > 0 {
		if st.Details == nil {
			st.Details = &metav1.StatusDetails{}
		}
		st.Details.RetryAfterSeconds = int32(retry)
	}
	return &st
}

// Fail answers the client's next n requests (n < 1 counts as 1) matching
// m (its Client aside) with the failure, instead of the server's answer
// (or, AfterCommit, after the server served them). The failure is answered
// before the request is authorized, as a failing server or proxy in front
// of it would.
func (c *ClientFaults) Fail(m Match, n int, how Failure) (*Fault, error) {
	if err := how.validate(); err != nil {
		return nil, err
	}
	m.Client = c.c
	return c.f.add(&Fault{kind: kindFail, client: c.c, match: m, failure: how, left: count(n),
		desc: fmt.Sprintf("Fail(%s, %d, %s)", m, n, how)}), nil
}

// CompactResource discards the history of one resource ("configmaps",
// "deployments.apps") up to and including revision rev, as an etcd
// compaction would for it alone: watches and lists of it from an older
// resourceVersion get 410 Gone from then on, whoever sends them. rev 0 is
// the current revision.
func (f *Faults) CompactResource(resource string, rev int64) error {
	res, group, _ := strings.Cut(resource, ".")
	if rev == 0 {
		rev = f.srv.Revision()
	}
	return f.srv.CompactResource(schema.GroupResource{Group: group, Resource: res}, rev)
}

// watchGate returns what holds back the events of a watch of req: the
// longest delay, whether they are held, and the revision of a stale view
// (0: none), and the faults that apply (to count their hits).
func (f *Faults) watchGate(req *apiserver.Request) (g gate) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, x := range f.faults {
		if !x.client.matches(req) {
			continue
		}
		switch x.kind {
		case kindDelay:
			if x.delay > g.delay {
				g.delay, g.delayF = x.delay, x
			}
		case kindHold:
			g.hold = x
		case kindStale:
			g.stale = x
		case kindDropBookmarks:
			g.dropBookmarks = x
		}
	}
	return g
}

// gate is what holds back the events of one watch (watchGate).
type gate struct {
	delay         time.Duration
	delayF        *Fault
	hold          *Fault
	stale         *Fault // the newest
	dropBookmarks *Fault
}

// wakeWatches makes every open watch look at its held events again.
func (f *Faults) wakeWatches() {
	f.mu.Lock()
	ws := make([]*watchWriter, 0, len(f.watches))
	for w := range f.watches {
		ws = append(ws, w)
	}
	f.mu.Unlock()
	for _, w := range ws {
		w.poke()
	}
}

// intercept serves every authenticated request (the server's Interceptor).
func (f *Faults) intercept(w http.ResponseWriter, r *http.Request, req *apiserver.Request, next http.Handler) {
	start := time.Now()
	isWatch := req.Verb == "watch"
	read := isWatch || req.Verb == "get" || req.Verb == "list"
	initial := isWatch && wantsInitialEvents(r.URL.Query())
	f.mu.Lock()
	var fail, expire, stale, reorder, duplicate *Fault
	for _, x := range f.faults {
		if !x.client.matches(req) {
			continue
		}
		switch x.kind {
		case kindFail:
			if fail == nil && req.ResourceRequest && x.match.matchesRequest(req.Verb, req.APIGroup, req.Resource, req.Subresource, req.Namespace, req.Name) {
				fail = x
			}
		case kindExpire:
			if expire == nil && isWatch {
				expire = x
			}
		case kindStale:
			if read && req.ResourceRequest {
				stale = x
			}
		case kindReorder:
			if reorder == nil && initial {
				reorder = x
			}
		case kindDuplicate:
			if duplicate == nil && isWatch {
				duplicate = x
			}
		}
	}
	var applied *Fault
	switch {
	case fail != nil:
		f.takeLocked(fail)
		applied, expire, stale, reorder, duplicate = fail, nil, nil, nil, nil
	case expire != nil:
		f.takeLocked(expire)
		applied, stale, reorder, duplicate = expire, nil, nil, nil
	default:
		for _, x := range []*Fault{reorder, duplicate} {
			if x != nil {
				f.takeLocked(x)
			}
		}
		if stale != nil {
			f.takeLocked(stale)
		}
	}
	rec := f.record
	f.mu.Unlock()

	var rw *recordWriter
	if rec != nil {
		rw = rec.begin(w, r, req, start, isWatch)
		w = rw
		defer rw.end()
	}
	if applied != nil && rw != nil {
		rw.fault = applied.desc
	}
	switch {
	case fail != nil:
		f.fail(w, r, req, fail.failure, next)
		return
	case expire != nil:
		writeExpired(w)
		return
	}
	if stale != nil {
		r = apiserver.ReadAt(r, stale.rev)
		if rw != nil {
			rw.fault = stale.desc
		}
	}
	if !isWatch {
		next.ServeHTTP(w, r)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	ww := newWatchWriter(f, w, req, cancel, reorder, duplicate)
	f.mu.Lock()
	f.watches[ww] = struct{}{}
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.watches, ww)
		f.mu.Unlock()
		ww.finish()
	}()
	next.ServeHTTP(ww, r.WithContext(ctx))
}

// fail answers r with the failure: at once, or after the server served it.
func (f *Faults) fail(w http.ResponseWriter, r *http.Request, req *apiserver.Request, fl Failure, next http.Handler) {
	if fl.AfterCommit && req.Verb != "watch" { // a watch has no end to wait for
		d := &discardWriter{header: http.Header{}}
		next.ServeHTTP(d, r)
	}
	st := fl.status(req.GroupResource(), req.Name)
	writeStatus(w, st)
}

// writeStatus writes a Status as kube-apiserver does.
func writeStatus(w http.ResponseWriter, st *metav1.Status) {
	st.Kind, st.APIVersion, st.Status = "Status", "v1", metav1.StatusFailure
	b, err := json.Marshal(st)
	if err != nil {
		b = []byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","code":500}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	if st.Details != nil && st.Details.RetryAfterSeconds > 0 {
		h.Set("Retry-After", strconv.Itoa(int(st.Details.RetryAfterSeconds)))
	}
	w.WriteHeader(int(st.Code))
	_, _ = w.Write(b)
}

// writeExpired answers a watch with 410 Gone, as kube-apiserver's watch
// cache: a successful response whose one event is an ERROR carrying a
// Status with reason Expired.
func writeExpired(w http.ResponseWriter) {
	st := apierrors.NewResourceExpired("The resourceVersion for the provided watch is too old.").ErrStatus
	st.Kind, st.APIVersion = "Status", "v1"
	obj, _ := json.Marshal(st)
	b, _ := json.Marshal(metav1.WatchEvent{Type: "ERROR", Object: runtime.RawExtension{Raw: obj}})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-cache, private")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(b, '\n'))
}

// discardWriter is the ResponseWriter of a request whose answer is
// replaced (AfterCommit).
type discardWriter struct {
	header http.Header
	code   int
}

func (d *discardWriter) Header() http.Header { return d.header }
func (d *discardWriter) WriteHeader(code int) {
	if d.code == 0 {
		d.code = code
	}
}
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
