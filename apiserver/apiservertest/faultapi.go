package apiservertest

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"kloop.dev/kloop/apiserver"
)

// NewFaults returns the fault injector of an embedded server that is not
// an apiservertest.Server (kloop apiserver --fault-api): it installs the
// server's Interceptor, so call it once per server. Server.Faults calls it
// for its server.
func NewFaults(srv *apiserver.Server) *Faults { return newFaults(srv) }

// Handler returns the faults as a small JSON API over HTTP, for tests not
// written in Go (kloop apiserver --fault-api serves it on a loopback
// address). Every request needs "Authorization: Bearer <token>" (kloop
// apiserver gives the administrator's), else 401. Bodies and answers are
// JSON; an error is {"error": "..."} with 400, 401, 404 or 405.
//
//	POST   /faults         {"client": {"user": "u"} | {"token": "t"} | {},
//	                        "fault": "ExpireWatches" | "DelayWatches" | "HoldWatches" | "StaleReads" |
//	                                 "Fail" | "ReorderInitialEvents" | "DuplicateEvents" | "DropBookmarks",
//	                        "n": 1, "delay": "500ms", "revision": 42,
//	                        "match": {"verb": "update", "resource": "configmaps", "subresource": "",
//	                                  "namespace": "", "name": ""},
//	                        "failure": {"code": 409, "retryAfter": "1s", "afterCommit": false},
//	                        "releaseAfter": "10s"}
//	                       → 201 {"id": "1", "fault": "HoldWatches() for user \"u\"", "hits": 0}
//	GET    /faults         → 200 [{"id", "fault", "hits"}] (those in effect)
//	DELETE /faults/{id}    → 200: released (404 if it ended before)
//	DELETE /faults         → 200: every fault released
//	POST   /drop-watches   {"client": …} → 200 {"dropped": 2}
//	POST   /compact        {"resource": "configmaps", "revision": 0} → 200 {}
//	POST   /record         {"size": 10000} → 200 {}: a new record starts
//	GET    /record?user=&verb=&resource=&subresource=&namespace=&name=
//	                       → 200 {"requests": [...], "dropped": 0}
//
// Each field is the Go method's argument of the same name (durations in
// Go's syntax); the fields a fault does not take must be absent.
func (f *Faults) Handler(token string) http.Handler {
	api := &faultAPI{f: f, token: token, byID: map[string]*Fault{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /faults", api.add)
	mux.HandleFunc("GET /faults", api.list)
	mux.HandleFunc("DELETE /faults", api.releaseAll)
	mux.HandleFunc("DELETE /faults/{id}", api.release)
	mux.HandleFunc("POST /drop-watches", api.dropWatches)
	mux.HandleFunc("POST /compact", api.compact)
	mux.HandleFunc("POST /record", api.startRecord)
	mux.HandleFunc("GET /record", api.record)
	return api.auth(mux)
}

type faultAPI struct {
	f     *Faults
	token string

	mu     sync.Mutex // guards the fields below
	byID   map[string]*Fault
	nextID int
	rec    *Record
}

// maxAPIBody bounds a request body of the fault API.
const maxAPIBody = 1 << 20

func (a *faultAPI) auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || a.token == "" || subtle.ConstantTimeCompare([]byte(got), []byte(a.token)) != 1 {
			apiError(w, http.StatusUnauthorized, errors.New("the fault API needs the server's bearer token"))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxAPIBody)
		next.ServeHTTP(w, r)
	})
}

func apiError(w http.ResponseWriter, code int, err error) {
	apiJSON(w, code, map[string]string{"error": err.Error()})
}

func apiJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"error":"encoding the answer"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}

// decode reads a JSON body into v, refusing unknown fields and trailing
// data.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("the body: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("the body: more than one JSON value")
	}
	return nil
}

// duration is a time.Duration in Go's syntax, in JSON.
type duration struct {
	d   time.Duration
	set bool
}

func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"500ms\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	if v < 0 {
		return fmt.Errorf("negative duration %s", s)
	}
	d.d, d.set = v, true
	return nil
}

type clientJSON struct {
	User  string `json:"user"`
	Token string `json:"token"`
}

func (c *clientJSON) client() (Client, error) {
	switch {
	case c.User != "" && c.Token != "":
		return Client{}, errors.New("a client is a user or a token, not both")
	case c.User != "":
		return User(c.User), nil
	case c.Token != "":
		return Token(c.Token), nil
	}
	return AnyClient, nil
}

type matchJSON struct {
	Verb        string `json:"verb"`
	Resource    string `json:"resource"`
	Subresource string `json:"subresource"`
	Namespace   string `json:"namespace"`
	Name        string `json:"name"`
}

type faultJSON struct {
	Client   clientJSON `json:"client"`
	Fault    string     `json:"fault"`
	N        *int       `json:"n"`
	Delay    *duration  `json:"delay"`
	Revision *int64     `json:"revision"`
	Match    *matchJSON `json:"match"`
	Failure  *struct {
		Code        int       `json:"code"`
		RetryAfter  *duration `json:"retryAfter"`
		AfterCommit bool      `json:"afterCommit"`
	} `json:"failure"`
	ReleaseAfter *duration `json:"releaseAfter"`
}

type faultInfo struct {
	ID    string `json:"id"`
	Fault string `json:"fault"`
	Hits  int    `json:"hits"`
}

func (a *faultAPI) add(w http.ResponseWriter, r *http.Request) {
	var req faultJSON
	if err := decode(r, &req); err != nil {
		apiError(w, http.StatusBadRequest, err)
		return
	}
	x, err := a.make(&req)
	if err != nil {
		apiError(w, http.StatusBadRequest, err)
		return
	}
	if req.ReleaseAfter != nil {
		x.ReleaseAfter(req.ReleaseAfter.d)
	}
	a.mu.Lock()
	a.nextID++
	id := strconv.Itoa(a.nextID)
	a.byID[id] = x
	a.mu.Unlock()
	apiJSON(w, http.StatusCreated, faultInfo{ID: id, Fault: x.String(), Hits: x.Hits()})
}

// make puts the fault req describes in effect.
func (a *faultAPI) make(req *faultJSON) (*Fault, error) {
	c, err := req.Client.client()
	if err != nil {
		return nil, err
	}
	// takes lists the fields the fault takes; the others must be absent.
	takes := map[string]bool{}
	switch req.Fault {
	case "ExpireWatches", "ReorderInitialEvents", "DuplicateEvents":
		takes["n"] = true
	case "DelayWatches":
		takes["delay"] = true
	case "StaleReads":
		takes["revision"] = true
	case "Fail":
		takes["n"], takes["match"], takes["failure"] = true, true, true
	case "HoldWatches", "DropBookmarks":
	default:
		return nil, fmt.Errorf("unknown fault %q", req.Fault)
	}
	for field, given := range map[string]bool{"n": req.N != nil, "delay": req.Delay != nil, "revision": req.Revision != nil, "match": req.Match != nil, "failure": req.Failure != nil} {
		if given && !takes[field] {
			return nil, fmt.Errorf("%s takes no %q", req.Fault, field)
		}
		if !given && takes[field] && field != "n" && field != "match" {
			return nil, fmt.Errorf("%s needs %q", req.Fault, field)
		}
	}
	n := 1
	if req.N != nil {
		n = *req.N
	}
	cf := a.f.For(c)
	switch req.Fault {
	case "ExpireWatches":
		return cf.ExpireWatches(n), nil
	case "ReorderInitialEvents":
		return cf.ReorderInitialEvents(n), nil
	case "DuplicateEvents":
		return cf.DuplicateEvents(n), nil
	case "DelayWatches":
		return cf.DelayWatches(req.Delay.d), nil
	case "StaleReads":
		return cf.StaleReads(*req.Revision)
	case "HoldWatches":
		return cf.HoldWatches(), nil
	case "DropBookmarks":
		return cf.DropBookmarks(), nil
	}
	var m Match
	if req.Match != nil {
		m = Match{Verb: req.Match.Verb, Resource: req.Match.Resource, Subresource: req.Match.Subresource, Namespace: req.Match.Namespace, Name: req.Match.Name}
	}
	fl := Failure{Code: req.Failure.Code, AfterCommit: req.Failure.AfterCommit}
	if req.Failure.RetryAfter != nil {
		fl.RetryAfter = req.Failure.RetryAfter.d
	}
	return cf.Fail(m, n, fl)
}

func (a *faultAPI) list(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	out := []faultInfo{}
	for id, x := range a.byID {
		select {
		case <-x.Done():
			delete(a.byID, id)
		default:
			out = append(out, faultInfo{ID: id, Fault: x.String(), Hits: x.Hits()})
		}
	}
	a.mu.Unlock()
	sortInfos(out)
	apiJSON(w, http.StatusOK, out)
}

func sortInfos(out []faultInfo) {
	slices.SortFunc(out, func(a, b faultInfo) int {
		x, _ := strconv.Atoi(a.ID)
		y, _ := strconv.Atoi(b.ID)
		return x - y
	})
}

func (a *faultAPI) release(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	a.mu.Lock()
	x := a.byID[id]
	delete(a.byID, id)
	a.mu.Unlock()
	if x == nil {
		apiError(w, http.StatusNotFound, fmt.Errorf("no fault %q in effect", id))
		return
	}
	select {
	case <-x.Done():
		apiError(w, http.StatusNotFound, fmt.Errorf("fault %q had ended", id))
		return
	default:
	}
	x.Release()
	apiJSON(w, http.StatusOK, faultInfo{ID: id, Fault: x.String(), Hits: x.Hits()})
}

func (a *faultAPI) releaseAll(w http.ResponseWriter, r *http.Request) {
	a.f.ReleaseAll()
	a.mu.Lock()
	clear(a.byID)
	a.mu.Unlock()
	apiJSON(w, http.StatusOK, struct{}{})
}

func (a *faultAPI) dropWatches(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Client clientJSON `json:"client"`
	}
	if err := decode(r, &req); err != nil {
		apiError(w, http.StatusBadRequest, err)
		return
	}
	c, err := req.Client.client()
	if err != nil {
		apiError(w, http.StatusBadRequest, err)
		return
	}
	apiJSON(w, http.StatusOK, map[string]int{"dropped": a.f.For(c).DropWatches()})
}

func (a *faultAPI) compact(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Resource string `json:"resource"`
		Revision int64  `json:"revision"`
	}
	if err := decode(r, &req); err != nil {
		apiError(w, http.StatusBadRequest, err)
		return
	}
	if err := a.f.CompactResource(req.Resource, req.Revision); err != nil {
		apiError(w, http.StatusBadRequest, err)
		return
	}
	apiJSON(w, http.StatusOK, struct{}{})
}

func (a *faultAPI) startRecord(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Size int `json:"size"`
	}
	if err := decode(r, &req); err != nil {
		apiError(w, http.StatusBadRequest, err)
		return
	}
	rec := a.f.Record(RecordOptions{Size: req.Size})
	a.mu.Lock()
	a.rec = rec
	a.mu.Unlock()
	apiJSON(w, http.StatusOK, struct{}{})
}

func (a *faultAPI) record(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	rec := a.rec
	a.mu.Unlock()
	if rec == nil {
		apiError(w, http.StatusNotFound, errors.New("no record: POST /record starts one"))
		return
	}
	q := r.URL.Query()
	m := Match{Verb: q.Get("verb"), Resource: q.Get("resource"), Subresource: q.Get("subresource"), Namespace: q.Get("namespace"), Name: q.Get("name")}
	if u := q.Get("user"); u != "" {
		m.Client = User(u)
	}
	reqs := rec.Requests(m)
	if reqs == nil {
		reqs = []Request{}
	}
	apiJSON(w, http.StatusOK, map[string]any{"requests": reqs, "dropped": rec.Dropped()})
}
