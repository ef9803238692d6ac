package cloud

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"kloop.dev/kloop/examples/cloud/cloudclient"
)

// Clock is the cloud's source of time.
type Clock interface {
	Now() time.Time
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// Options configure a Cloud. The zero value is a prompt, reliable cloud on
// a free loopback port, without a state file.
type Options struct {
	// Addr is where Start listens. Default "127.0.0.1:0" (a free port).
	Addr string
	// ProvisionDelay is how long an instance stays pending after a create
	// or a modify, and shutting-down after a delete. Default 0: the next
	// describe sees it running (or terminated).
	ProvisionDelay time.Duration
	// VisibilityDelay is how long a new instance is invisible to
	// describes. Default 0: visible at once.
	VisibilityDelay time.Duration
	// RateLimit is how many requests a second the cloud answers; beyond it
	// (after Burst at once) it answers 429 Throttled. Default 0: no limit.
	RateLimit float64
	// Burst is how many requests the rate limit lets through at once.
	// Default: RateLimit rounded up, at least 1.
	Burst int
	// RetryAfter is the Retry-After of a 429, sent in whole seconds.
	// Default 1 s.
	RetryAfter time.Duration
	// FailureRate is the fraction of requests, from 0 to 1, that fail with
	// 500 InternalError (half of the failed writes after the change was
	// made). Default 0.
	FailureRate float64
	// Seed seeds the random failures. Default 0: a random seed.
	Seed uint64
	// StateFile, when set, is loaded by New (if it exists) and written
	// while Start runs, every SaveInterval when something changed, and
	// when it returns. Default "": the instances live in memory only.
	StateFile string
	// SaveInterval is how often Start writes a changed state. Default 200 ms.
	SaveInterval time.Duration
	// Clock is the source of time. Default: the wall clock.
	Clock Clock
	// Logger receives the cloud's logs. Default: slog.Default().
	Logger *slog.Logger
}

func (o *Options) defaults() {
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	if o.Burst == 0 && o.RateLimit > 0 {
		o.Burst = max(1, int(math.Ceil(o.RateLimit)))
	}
	if o.RetryAfter == 0 {
		o.RetryAfter = time.Second
	}
	if o.Seed == 0 {
		o.Seed = rand.Uint64()
	}
	if o.SaveInterval == 0 {
		o.SaveInterval = 200 * time.Millisecond
	}
	if o.Clock == nil {
		o.Clock = realClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

func (o *Options) validate() error {
	var errs []error
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"ProvisionDelay", o.ProvisionDelay}, {"VisibilityDelay", o.VisibilityDelay}, {"RetryAfter", o.RetryAfter}, {"SaveInterval", o.SaveInterval}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s %v is negative", d.name, d.v))
		}
	}
	if o.RateLimit < 0 || math.IsNaN(o.RateLimit) || math.IsInf(o.RateLimit, 0) {
		errs = append(errs, fmt.Errorf("RateLimit %v is not a rate (requests a second, 0 for none)", o.RateLimit))
	}
	if o.Burst < 0 {
		errs = append(errs, fmt.Errorf("Burst %d is negative", o.Burst))
	}
	if !(o.FailureRate >= 0 && o.FailureRate <= 1) {
		errs = append(errs, fmt.Errorf("FailureRate %v is not between 0 and 1", o.FailureRate))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cloud: %w", err)
	}
	return nil
}

// Stats counts what the cloud answered.
type Stats struct {
	// Requests is every request, by operation (create, get, list, modify,
	// delete).
	Requests map[string]int64
	// Throttled is how many were answered 429.
	Throttled int64
	// Failed is how many were answered 500 on purpose (FailureRate).
	Failed int64
	// Created is how many instances creates made (a repeated client token
	// makes none).
	Created int64
	// Live is how many instances are pending or running now.
	Live int64
}

// Cloud is the local cloud. Serve it with Start, or mount it as an
// http.Handler.
type Cloud struct {
	opts    Options
	handler http.Handler
	ready   chan struct{}
	url     string      // set before ready is closed ("" if Start could not listen)
	started atomic.Bool // Start ran

	mu        sync.Mutex // guards the fields below
	instances map[string]*cloudclient.Instance
	// byTag indexes instances by tag: tagKey(k, v) -> ID -> instance; it
	// holds every instance of instances under each of its tags.
	byTag   map[string]map[string]*cloudclient.Instance
	tokens  map[string]token // by client token
	nextID  uint64
	rng     *rand.Rand
	limiter *rate.Limiter
	stats   Stats
	version uint64 // bumped by every change of instances, tokens, nextID

	saveMu sync.Mutex // serialises writes of the state file; guards saved
	saved  uint64     // the version last written
}

// token is what a client token created.
type token struct {
	ID     string `json:"id"`
	Region string `json:"region"`
	Size   string `json:"size"`
}

// state is the state file's content.
type state struct {
	NextID    uint64                 `json:"nextID"`
	Instances []cloudclient.Instance `json:"instances"`
	Tokens    map[string]token       `json:"tokens"`
}

// New returns a cloud; it loads Options.StateFile if it exists.
func New(opts Options) (*Cloud, error) {
	opts.defaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	c := &Cloud{
		opts:      opts,
		ready:     make(chan struct{}),
		instances: map[string]*cloudclient.Instance{},
		byTag:     map[string]map[string]*cloudclient.Instance{},
		tokens:    map[string]token{},
		version:   1,
		rng:       rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15)),
		stats:     Stats{Requests: map[string]int64{}},
	}
	if opts.RateLimit > 0 {
		c.limiter = rate.NewLimiter(rate.Limit(opts.RateLimit), opts.Burst)
	}
	if opts.StateFile != "" {
		if err := c.load(); err != nil {
			return nil, err
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/instances", c.create)
	mux.HandleFunc("GET /v1/instances", c.list)
	mux.HandleFunc("GET /v1/instances/{id}", c.get)
	mux.HandleFunc("PATCH /v1/instances/{id}", c.modify)
	mux.HandleFunc("DELETE /v1/instances/{id}", c.delete)
	c.handler = mux
	return c, nil
}

// ServeHTTP serves the cloud's API.
func (c *Cloud) ServeHTTP(w http.ResponseWriter, r *http.Request) { c.handler.ServeHTTP(w, r) }

// Ready is closed once Start listens, or failed to (URL is then "").
func (c *Cloud) Ready() <-chan struct{} { return c.ready }

// URL is where Start serves (http://host:port), once Ready is closed; ""
// if Start could not listen (its error says why).
func (c *Cloud) URL() string {
	<-c.ready
	return c.url
}

// Start serves the cloud on Options.Addr until ctx is done, writing the
// state file (if any) as it changes and when it returns.
func (c *Cloud) Start(ctx context.Context) error {
	if !c.started.CompareAndSwap(false, true) {
		return errors.New("cloud: Start runs once")
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", c.opts.Addr)
	if err != nil {
		close(c.ready) // whoever waits on Ready or URL is not left waiting
		return fmt.Errorf("cloud: %w", err)
	}
	srv := &http.Server{Handler: c, ReadHeaderTimeout: 10 * time.Second}
	c.url = "http://" + ln.Addr().String()
	close(c.ready)
	c.opts.Logger.Info("cloud serving", "url", c.url)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	var tick <-chan time.Time
	if c.opts.StateFile != "" {
		t := time.NewTicker(c.opts.SaveInterval)
		defer t.Stop()
		tick = t.C
	}
	var serveErr error
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case serveErr = <-served:
			break loop
		case <-tick:
			if err := c.save(); err != nil {
				c.opts.Logger.Error("cloud: writing the state file", "err", err)
			}
		}
	}
	// Requests in flight get a moment to finish; then the connections are
	// closed (one a client opened and never used counts as busy to
	// Shutdown for 5 s).
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	shutErr := srv.Shutdown(sctx)
	if errors.Is(shutErr, context.DeadlineExceeded) {
		shutErr = srv.Close()
	}
	if serveErr == nil {
		<-served
	} else if errors.Is(serveErr, http.ErrServerClosed) {
		serveErr = nil
	}
	var saveErr error
	if c.opts.StateFile != "" {
		saveErr = c.save()
	}
	if err := errors.Join(serveErr, shutErr, saveErr); err != nil {
		return fmt.Errorf("cloud: %w", err)
	}
	return nil
}

// Instances returns every instance the cloud has, visible or not, by ID.
func (c *Cloud) Instances() []cloudclient.Instance {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.opts.Clock.Now()
	out := make([]cloudclient.Instance, 0, len(c.instances))
	for _, in := range c.instances {
		c.advance(in, now)
		out = append(out, clone(in))
	}
	slices.SortFunc(out, func(a, b cloudclient.Instance) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Stats returns the cloud's counters.
func (c *Cloud) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Requests = maps.Clone(c.stats.Requests)
	now := c.opts.Clock.Now()
	for _, in := range c.instances {
		c.advance(in, now)
		if in.Live() {
			s.Live++
		}
	}
	return s
}

// advance moves an instance through the states its age has reached.
// c.mu is held.
func (c *Cloud) advance(in *cloudclient.Instance, now time.Time) {
	if now.Sub(in.ChangedAt) < c.opts.ProvisionDelay {
		return
	}
	switch in.State {
	case cloudclient.Pending:
		in.State = cloudclient.Running
		in.Endpoint = fmt.Sprintf("%s.%s.cloud.local:443", in.ID, in.Region)
		c.version++
	case cloudclient.ShuttingDown:
		in.State = cloudclient.Terminated
		in.Endpoint = ""
		c.version++
	}
}

func (c *Cloud) visible(in *cloudclient.Instance, now time.Time) bool {
	return now.Sub(in.CreatedAt) >= c.opts.VisibilityDelay
}

// tagKey is the byTag key of tag k=v.
func tagKey(k, v string) string { return k + "\x00" + v }

// index adds in to byTag under its tags. c.mu is held.
func (c *Cloud) index(in *cloudclient.Instance) {
	for k, v := range in.Tags {
		key := tagKey(k, v)
		set := c.byTag[key]
		if set == nil {
			set = map[string]*cloudclient.Instance{}
			c.byTag[key] = set
		}
		set[in.ID] = in
	}
}

// unindex removes in from byTag under its tags. c.mu is held.
func (c *Cloud) unindex(in *cloudclient.Instance) {
	for k, v := range in.Tags {
		key := tagKey(k, v)
		delete(c.byTag[key], in.ID)
		if len(c.byTag[key]) == 0 {
			delete(c.byTag, key)
		}
	}
}

// candidates are the instances a describe filtered by want may match: the
// smallest of its tags' index sets, or every instance when want is empty.
// c.mu is held.
func (c *Cloud) candidates(want map[string]string) map[string]*cloudclient.Instance {
	if len(want) == 0 {
		return c.instances
	}
	var best map[string]*cloudclient.Instance
	first := true
	for k, v := range want {
		set := c.byTag[tagKey(k, v)]
		if first || len(set) < len(best) {
			best, first = set, false
		}
	}
	return best
}

func clone(in *cloudclient.Instance) cloudclient.Instance {
	out := *in
	out.Tags = maps.Clone(in.Tags)
	return out
}

// fault is what admit decided for one request.
type fault int

const (
	noFault    fault = iota
	failBefore       // answer 500 without doing anything
	failAfter        // do it, then answer 500
)

// admit counts a request and decides whether it is throttled or fails.
// c.mu is held. It writes the answer of a throttled or failed-before
// request and returns false for it.
func (c *Cloud) admit(w http.ResponseWriter, op string, write bool) (fault, bool) {
	c.stats.Requests[op]++
	if c.limiter != nil && !c.limiter.AllowN(c.opts.Clock.Now(), 1) {
		c.stats.Throttled++
		secs := int(math.Ceil(c.opts.RetryAfter.Seconds()))
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		writeError(w, http.StatusTooManyRequests, cloudclient.CodeThrottled, "request rate exceeded")
		return noFault, false
	}
	if c.opts.FailureRate > 0 && c.rng.Float64() < c.opts.FailureRate {
		if write && c.rng.IntN(2) == 0 {
			return failAfter, true // counted in Failed by answer, if it gets that far
		}
		c.stats.Failed++
		writeError(w, http.StatusInternalServerError, cloudclient.CodeInternal, "an internal error occurred (injected)")
		return failBefore, false
	}
	return noFault, true
}

// admitWrite admits a write as admit does, then answers 400 if errs (its
// request's validation) holds any. c.mu is held.
func (c *Cloud) admitWrite(w http.ResponseWriter, op string, errs []error) (fault, bool) {
	f, ok := c.admit(w, op, true)
	if !ok {
		return f, false
	}
	if err := errors.Join(errs...); err != nil {
		writeError(w, http.StatusBadRequest, cloudclient.CodeInvalidParameter, err.Error())
		return f, false
	}
	return f, true
}

var (
	regionRE = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)
)

const (
	maxBody = 1 << 20
)

func validSize(s string) error {
	if !slices.Contains(cloudclient.Sizes, s) {
		return fmt.Errorf("size %q: want one of %s", s, strings.Join(cloudclient.Sizes, ", "))
	}
	return nil
}

func validTags(tags map[string]string) error {
	if len(tags) > cloudclient.MaxTags {
		return fmt.Errorf("%d tags: at most %d", len(tags), cloudclient.MaxTags)
	}
	for k, v := range tags {
		if k == "" || len(k) > cloudclient.MaxTagKey || len(v) > cloudclient.MaxTagValue || strings.Contains(k, "=") {
			return fmt.Errorf("tag %q=%q: keys are 1 to %d bytes without '=' (describes filter by KEY=VALUE), values at most %d", k, v, cloudclient.MaxTagKey, cloudclient.MaxTagValue)
		}
	}
	return nil
}

func (c *Cloud) create(w http.ResponseWriter, r *http.Request) {
	var in cloudclient.CreateInput
	if !decode(w, r, &in) {
		return
	}
	var errs []error
	if !regionRE.MatchString(in.Region) {
		errs = append(errs, fmt.Errorf("region %q: want lower-case letters, digits and dashes", in.Region))
	}
	errs = append(errs, validSize(in.Size), validTags(in.Tags))
	if len(in.ClientToken) > 128 {
		errs = append(errs, fmt.Errorf("client token of %d bytes: at most 128", len(in.ClientToken)))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.admitWrite(w, "create", errs)
	if !ok {
		return
	}
	now := c.opts.Clock.Now()
	if tok, seen := c.tokens[in.ClientToken]; seen && in.ClientToken != "" {
		if tok.Region != in.Region || tok.Size != in.Size {
			writeError(w, http.StatusConflict, cloudclient.CodeParameterMismatch,
				fmt.Sprintf("client token %q was used to create %s with other parameters (%s, %s)", in.ClientToken, tok.ID, tok.Region, tok.Size))
			return
		}
		old := c.instances[tok.ID]
		c.advance(old, now)
		c.answer(w, http.StatusOK, f, clone(old))
		return
	}
	c.nextID++
	in2 := &cloudclient.Instance{
		ID:          fmt.Sprintf("i-%012x", c.nextID),
		ClientToken: in.ClientToken,
		Region:      in.Region,
		Size:        in.Size,
		Tags:        maps.Clone(in.Tags),
		State:       cloudclient.Pending,
		CreatedAt:   now,
		ChangedAt:   now,
	}
	c.advance(in2, now)
	c.instances[in2.ID] = in2
	c.index(in2)
	if in.ClientToken != "" {
		c.tokens[in.ClientToken] = token{ID: in2.ID, Region: in.Region, Size: in.Size}
	}
	c.stats.Created++
	c.version++
	c.answer(w, http.StatusCreated, f, clone(in2))
}

func (c *Cloud) get(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.admit(w, "get", false); !ok {
		return
	}
	now := c.opts.Clock.Now()
	in, ok := c.instances[id]
	if !ok || !c.visible(in, now) {
		writeError(w, http.StatusNotFound, cloudclient.CodeNotFound, fmt.Sprintf("instance %q does not exist", id))
		return
	}
	c.advance(in, now)
	c.answer(w, http.StatusOK, noFault, clone(in))
}

func (c *Cloud) list(w http.ResponseWriter, r *http.Request) {
	want := map[string]string{}
	for _, t := range r.URL.Query()["tag"] {
		k, v, ok := strings.Cut(t, "=")
		if !ok || k == "" {
			writeError(w, http.StatusBadRequest, cloudclient.CodeInvalidParameter, fmt.Sprintf("tag filter %q: want KEY=VALUE", t))
			return
		}
		want[k] = v
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.admit(w, "list", false); !ok {
		return
	}
	now := c.opts.Clock.Now()
	out := cloudclient.InstanceList{Items: []cloudclient.Instance{}}
	for _, in := range c.candidates(want) {
		if !c.visible(in, now) {
			continue
		}
		c.advance(in, now)
		if !in.Live() {
			continue
		}
		match := true
		for k, v := range want {
			if got, ok := in.Tags[k]; !ok || got != v {
				match = false
				break
			}
		}
		if match {
			out.Items = append(out.Items, clone(in))
		}
	}
	slices.SortFunc(out.Items, func(a, b cloudclient.Instance) int { return strings.Compare(a.ID, b.ID) })
	c.answer(w, http.StatusOK, noFault, out)
}

func (c *Cloud) modify(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var in cloudclient.ModifyInput
	if !decode(w, r, &in) {
		return
	}
	var errs []error
	if in.Size != "" {
		errs = append(errs, validSize(in.Size))
	}
	errs = append(errs, validTags(in.Tags))
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.admitWrite(w, "modify", errs)
	if !ok {
		return
	}
	inst, ok := c.instances[id]
	if !ok {
		writeError(w, http.StatusNotFound, cloudclient.CodeNotFound, fmt.Sprintf("instance %q does not exist", id))
		return
	}
	now := c.opts.Clock.Now()
	c.advance(inst, now)
	if !inst.Live() {
		writeError(w, http.StatusBadRequest, cloudclient.CodeInvalidParameter, fmt.Sprintf("instance %s is %s", id, inst.State))
		return
	}
	if in.Tags != nil && !maps.Equal(in.Tags, inst.Tags) {
		c.unindex(inst)
		inst.Tags = maps.Clone(in.Tags)
		c.index(inst)
		c.version++
	}
	if in.Size != "" && in.Size != inst.Size {
		inst.Size = in.Size
		inst.State, inst.Endpoint, inst.ChangedAt = cloudclient.Pending, "", now
		c.advance(inst, now)
		c.version++
	}
	c.answer(w, http.StatusOK, f, clone(inst))
}

func (c *Cloud) delete(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.admit(w, "delete", true)
	if !ok {
		return
	}
	inst, ok := c.instances[id]
	if !ok {
		writeError(w, http.StatusNotFound, cloudclient.CodeNotFound, fmt.Sprintf("instance %q does not exist", id))
		return
	}
	now := c.opts.Clock.Now()
	c.advance(inst, now)
	if inst.Live() {
		inst.State, inst.Endpoint, inst.ChangedAt = cloudclient.ShuttingDown, "", now
		c.advance(inst, now)
		c.version++
	}
	c.answer(w, http.StatusOK, f, clone(inst))
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, cloudclient.CodeInvalidParameter, "decoding the body: "+err.Error())
		return false
	}
	return true
}

// answer writes v, or a 500 when the request was to fail after its change
// (counted in Failed). c.mu is held.
func (c *Cloud) answer(w http.ResponseWriter, code int, f fault, v any) {
	if f == failAfter {
		c.stats.Failed++
		writeError(w, http.StatusInternalServerError, cloudclient.CodeInternal, "an internal error occurred (injected)")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, errCode, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(cloudclient.Error{Code: errCode, Message: msg})
}

// load reads the state file, if it exists.
func (c *Cloud) load() error {
	data, err := os.ReadFile(c.opts.StateFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cloud: %w", err)
	}
	var s state
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("cloud: state file %s: %w", c.opts.StateFile, err)
	}
	for i := range s.Instances {
		in := s.Instances[i]
		if in.ID == "" {
			return fmt.Errorf("cloud: state file %s: instance %d has no ID", c.opts.StateFile, i)
		}
		c.instances[in.ID] = &in
		c.index(&in)
	}
	for name, tok := range s.Tokens {
		if _, ok := c.instances[tok.ID]; !ok {
			return fmt.Errorf("cloud: state file %s: client token %q names unknown instance %q", c.opts.StateFile, name, tok.ID)
		}
		c.tokens[name] = tok
	}
	for id := range c.instances {
		var n uint64
		if _, err := fmt.Sscanf(id, "i-%x", &n); err == nil && n > s.NextID {
			return fmt.Errorf("cloud: state file %s: nextID %d is behind instance %s (a create would reuse an ID)", c.opts.StateFile, s.NextID, id)
		}
	}
	c.nextID = s.NextID
	return nil
}

// save writes the state file if the state changed since the last write:
// a snapshot under c.mu, written without it.
func (c *Cloud) save() error {
	c.saveMu.Lock()
	defer c.saveMu.Unlock()
	c.mu.Lock()
	v := c.version
	if v == c.saved {
		c.mu.Unlock()
		return nil
	}
	s := state{NextID: c.nextID, Tokens: maps.Clone(c.tokens), Instances: make([]cloudclient.Instance, 0, len(c.instances))}
	for _, in := range c.instances {
		s.Instances = append(s.Instances, clone(in))
	}
	c.mu.Unlock()
	slices.SortFunc(s.Instances, func(a, b cloudclient.Instance) int { return strings.Compare(a.ID, b.ID) })
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(c.opts.StateFile), ".cloud-state-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), c.opts.StateFile); err != nil {
		return err
	}
	c.saved = v
	return nil
}
