package reflector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// Defaults of Options.
const (
	DefaultPageSize        int64 = 500
	DefaultInitialBackoff        = 800 * time.Millisecond
	DefaultMaxBackoff            = 30 * time.Second
	DefaultBackoffReset          = 2 * time.Minute
	DefaultMinWatchTimeout       = 5 * time.Minute
)

// A watch that ends normally within veryShortWatch without a single event
// counts as a failure: it is retried after a backoff, not at once.
const veryShortWatch = time.Second

// A streaming list that ends this many times in a row without the
// initial-events-end bookmark means the server ignores sendInitialEvents:
// the reflector lists from then on.
const maxWatchListMisses = 3

// Options configures a Reflector. The zero value works.
type Options struct {
	// Name identifies the reflector in logs and metrics. Default: the Go
	// type of the objects, such as "*v1.Pod".
	Name string
	// Logger receives the reflector's logs. Default: slog.Default().
	Logger *slog.Logger
	// Clock is the source of time. Default: the real clock.
	Clock Clock
	// Metrics receives measurements. Default: none are recorded.
	Metrics Metrics
	// PageSize is the number of objects asked per page of a list (limit).
	// Default 500 (DefaultPageSize); negative disables pagination. As in
	// client-go, a relist at a specific resourceVersion is not paginated
	// (so that the watch cache can serve it) unless the initial list came
	// back in pages.
	PageSize int64
	// DisableWatchList turns off streaming lists (sendInitialEvents); the
	// reflector then always lists and watches. Default false: stream where
	// the server supports it, fall back to list+watch where it does not.
	DisableWatchList bool
	// InitialBackoff is the first wait after a failure. Default 800 ms.
	InitialBackoff time.Duration
	// MaxBackoff caps the base wait, which doubles with each consecutive
	// failure; each wait adds up to 100 % random jitter to the base (so at
	// the cap waits are in [MaxBackoff, 2·MaxBackoff)). Default 30 s.
	MaxBackoff time.Duration
	// BackoffReset is how long without failure resets the wait to
	// InitialBackoff. Default 2 min.
	BackoffReset time.Duration
	// MinWatchTimeout is the shortest timeoutSeconds asked of a watch; each
	// watch asks for a random timeout in [MinWatchTimeout, MaxWatchTimeout]
	// so that watches of many clients do not end together. Default 5 min.
	MinWatchTimeout time.Duration
	// MaxWatchTimeout is the longest watch timeout. Default 2·MinWatchTimeout.
	MaxWatchTimeout time.Duration
	// WatchSilenceMargin is how much longer than the timeoutSeconds it
	// asked for the reflector waits on a watch (or a streaming list) that
	// sends nothing — no event, no bookmark — before it takes the stream
	// for hung: a server that honours timeoutSeconds has ended the watch by
	// then. The reflector then stops the watch and, after a backoff wait,
	// watches again from the last resourceVersion it reached (no relist, no
	// gap); the error it reports wraps ErrSilentWatch. Only time spent
	// waiting on the stream counts, not time spent in the store; the watch
	// is given up at most a sixteenth of timeout+margin after it has been
	// silent that long (its watchdog looks that often). Default
	// 30 s (DefaultWatchSilenceMargin), or MinWatchTimeout if that is
	// shorter; negative turns the check off (for a ListerWatcher whose
	// watches ignore TimeoutSeconds and may rightly stay silent longer).
	WatchSilenceMargin time.Duration
}

func (o *Options) defaults() {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Clock == nil {
		o.Clock = realClock{}
	}
	if o.Metrics == nil {
		o.Metrics = noMetrics{}
	}
	if o.PageSize == 0 {
		o.PageSize = DefaultPageSize
	}
	if o.InitialBackoff == 0 {
		o.InitialBackoff = DefaultInitialBackoff
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	if o.BackoffReset == 0 {
		o.BackoffReset = DefaultBackoffReset
	}
	if o.MinWatchTimeout == 0 {
		o.MinWatchTimeout = DefaultMinWatchTimeout
	}
	if o.MaxWatchTimeout == 0 {
		o.MaxWatchTimeout = 2 * o.MinWatchTimeout
	}
	if o.WatchSilenceMargin == 0 {
		o.WatchSilenceMargin = min(DefaultWatchSilenceMargin, o.MinWatchTimeout)
	}
}

// Validate reports the error New would return for these options (after
// filling their defaults), for code that takes reflector Options to use
// later, as the informer factory does.
func (o Options) Validate() error {
	o.defaults()
	return o.validate()
}

func (o *Options) validate() error {
	switch {
	case o.InitialBackoff < 0:
		return fmt.Errorf("reflector: InitialBackoff %v is negative", o.InitialBackoff)
	case o.MaxBackoff < o.InitialBackoff:
		return fmt.Errorf("reflector: MaxBackoff %v is less than InitialBackoff %v", o.MaxBackoff, o.InitialBackoff)
	case o.BackoffReset < 0:
		return fmt.Errorf("reflector: BackoffReset %v is negative", o.BackoffReset)
	case o.MinWatchTimeout < time.Second:
		return fmt.Errorf("reflector: MinWatchTimeout %v is less than 1s", o.MinWatchTimeout)
	case o.MaxWatchTimeout < o.MinWatchTimeout:
		return fmt.Errorf("reflector: MaxWatchTimeout %v is less than MinWatchTimeout %v", o.MaxWatchTimeout, o.MinWatchTimeout)
	}
	return nil
}

// Reflector keeps a Store in step with the server's objects of one kind and
// scope: it lists (or streams the list), then watches from the list's
// resourceVersion, and starts over when the server no longer has that
// position. See the package documentation for the state machine.
type Reflector[T Object] struct {
	lw    ListerWatcher[T]
	store Store[T]
	opts  Options
	log   *slog.Logger
	rand  func() float64 // in [0,1); jitter of backoff and watch timeouts

	running atomic.Bool // Run has been called

	// mu guards lastRV and synced, which any goroutine may read.
	mu sync.RWMutex
	// lastRV is the resourceVersion of the last list handed to the store or
	// of the last watch event received: the position the next watch starts
	// from.
	lastRV string
	// synced becomes true when the first list has been handed to the store
	// and stays true.
	synced bool

	// The fields below belong to the Run goroutine.

	backoff backoff
	// rvUnavailable: the server said lastRV is gone (410) or too new; the
	// next list or streaming list asks for resourceVersion="" (a
	// consistent read) until one succeeds.
	rvUnavailable bool
	// noWatchList: streaming lists are disabled or the server cannot do
	// them; remembered for the reflector's life.
	noWatchList bool
	// paginated: the initial list (resourceVersion="0") came back in
	// pages, so the server does not serve lists from a watch cache; relists
	// at a specific resourceVersion keep paginating.
	paginated bool
	// watchListMisses counts streaming lists in a row that ended without
	// the initial-events-end bookmark.
	watchListMisses int
}

// New returns a reflector that feeds store from lw. Start it with Run.
func New[T Object](lw ListerWatcher[T], store Store[T], opts Options) (*Reflector[T], error) {
	if lw == nil || nilValue(lw) {
		return nil, errors.New("reflector: nil ListerWatcher")
	}
	if store == nil || nilValue(store) {
		return nil, errors.New("reflector: nil Store")
	}
	if opts.Name == "" {
		var zero T
		opts.Name = fmt.Sprintf("%T", zero)
	}
	opts.defaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	r := &Reflector[T]{
		lw:          lw,
		store:       store,
		opts:        opts,
		log:         opts.Logger.With("reflector", opts.Name),
		rand:        rand.Float64,
		noWatchList: opts.DisableWatchList,
	}
	r.backoff = backoff{
		initial:    opts.InitialBackoff,
		max:        opts.MaxBackoff,
		resetAfter: opts.BackoffReset,
		rand:       func() float64 { return r.rand() },
	}
	return r, nil
}

// LastSyncResourceVersion returns the resourceVersion the reflector has
// reached: that of the last list handed to the store or of the last watch
// event. Empty before the first list.
func (r *Reflector[T]) LastSyncResourceVersion() string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.lastRV
}

// HasSynced reports whether the first complete list has been handed to the
// store (with Replace). Whether the store's consumers have processed it is
// the store's business.
func (r *Reflector[T]) HasSynced() bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.synced
}

// Run lists and watches until ctx is cancelled, then returns nil. It
// returns an error only if it is called more than once.
func (r *Reflector[T]) Run(ctx context.Context) error {
	if !r.running.CompareAndSwap(false, true) {
		return errors.New("reflector: Run called more than once")
	}
	r.log.Debug("reflector starting", "watchList", !r.noWatchList)
	s := state[T]{kind: r.relist()}
	for s.kind != stopped {
		s = r.step(ctx, s)
	}
	r.log.Debug("reflector stopped", "resourceVersion", r.LastSyncResourceVersion())
	return nil
}

// stateKind names a state of the reflector.
type stateKind uint8

const (
	// stopped: ctx is cancelled; Run returns.
	stopped stateKind = iota
	// listing: a paginated list, handed to the store as one Replace.
	listing
	// watchListing: a streaming list (watch with sendInitialEvents=true),
	// handed to the store as one Replace at the initial-events-end bookmark.
	watchListing
	// watching: a watch from lastRV, each event passed to the store.
	watching
	// backingOff: waiting before the next attempt.
	backingOff
)

func (k stateKind) String() string {
	switch k {
	case stopped:
		return "Stopped"
	case listing:
		return "Listing"
	case watchListing:
		return "WatchListing"
	case watching:
		return "Watching"
	case backingOff:
		return "Backoff"
	}
	return fmt.Sprintf("stateKind(%d)", uint8(k))
}

// state is where the reflector is, with what that state needs.
type state[T Object] struct {
	kind stateKind
	// then is the state after the wait (backingOff only).
	then stateKind
	// wait is how long to wait (backingOff only).
	wait time.Duration
	// open is a watch already open, handed over by a streaming list after
	// its initial events (watching only); nil means open a new one.
	open *liveWatch[T]
}

// step performs one state and returns the next one. It is the whole
// behaviour of the reflector; Run only loops over it.
func (r *Reflector[T]) step(ctx context.Context, s state[T]) state[T] {
	if ctx.Err() != nil {
		if s.open != nil {
			s.open.stop()
		}
		return state[T]{kind: stopped}
	}
	switch s.kind {
	case listing:
		return r.list(ctx)
	case watchListing:
		return r.watchList(ctx)
	case watching:
		return r.watch(ctx, s.open)
	case backingOff:
		select {
		case <-ctx.Done():
			return state[T]{kind: stopped}
		case <-r.opts.Clock.After(s.wait):
			return state[T]{kind: s.then}
		}
	}
	return state[T]{kind: stopped}
}

// relist returns the state that rebuilds the store from scratch.
func (r *Reflector[T]) relist() stateKind {
	if r.noWatchList {
		return listing
	}
	return watchListing
}

// fail logs err and returns a wait before the state then. The wait is the
// backoff's, or the server's Retry-After when that is longer.
func (r *Reflector[T]) fail(err error, then stateKind) state[T] {
	d := r.backoff.next(r.opts.Clock.Now())
	if ra := retryAfter(err); ra > d {
		d = ra
	}
	r.log.Info("backing off", "then", then.String(), "wait", d, "err", err)
	return state[T]{kind: backingOff, then: then, wait: d}
}

// relistAfter returns the relist state after the server said the position
// is gone: at once if the reflector had been healthy, after a backoff wait
// if it had failed recently.
func (r *Reflector[T]) relistAfter(err error) state[T] {
	d := r.backoff.relist(r.opts.Clock.Now())
	if d == 0 {
		return state[T]{kind: r.relist()}
	}
	r.log.Info("backing off before relisting", "wait", d, "err", err)
	return state[T]{kind: backingOff, then: r.relist(), wait: d}
}

// done reports whether ctx is cancelled.
func (r *Reflector[T]) done(ctx context.Context) bool { return ctx.Err() != nil }

// replace hands a complete list at rv to the store. LastSyncResourceVersion
// says rv before the store has it (and goes back if the store refuses it),
// so that whoever sees the list in the store — an informer synced on it —
// never reads an older resourceVersion.
func (r *Reflector[T]) replace(items []T, rv string) error {
	r.mu.Lock()
	prev := r.lastRV
	r.lastRV = rv
	r.mu.Unlock()
	if err := r.store.Replace(items, rv); err != nil {
		r.mu.Lock()
		if r.lastRV == rv {
			r.lastRV = prev
		}
		r.mu.Unlock()
		return fmt.Errorf("reflector: store Replace: %w", err)
	}
	return nil
}

func (r *Reflector[T]) setSynced(rv string) {
	r.mu.Lock()
	r.lastRV = rv
	r.synced = true
	r.mu.Unlock()
	r.rvUnavailable = false
	r.opts.Metrics.ObserveResourceVersion(r.opts.Name, rv)
}

func (r *Reflector[T]) setRV(rv string) {
	if rv == "" {
		return
	}
	r.mu.Lock()
	r.lastRV = rv
	r.mu.Unlock()
	r.opts.Metrics.ObserveResourceVersion(r.opts.Name, rv)
}

// listRV is the resourceVersion of a list: "" (a consistent read) after the
// server said the position is gone; "0" (any version, served from the
// watch cache) for the first list; otherwise "not older than" lastRV, so
// the store never goes back in time.
func (r *Reflector[T]) listRV() string {
	if r.rvUnavailable {
		return ""
	}
	if rv := r.LastSyncResourceVersion(); rv != "" {
		return rv
	}
	return "0"
}

// pageLimit is the limit of the first page of a list at rv.
func (r *Reflector[T]) pageLimit(rv string) int64 {
	if r.opts.PageSize < 0 {
		return 0
	}
	if rv != "" && rv != "0" && !r.paginated {
		// Unpaginated, a list at a specific version is served from the
		// watch cache instead of etcd.
		return 0
	}
	return r.opts.PageSize
}

func (r *Reflector[T]) watchTimeout() *int64 {
	lo, hi := r.opts.MinWatchTimeout.Seconds(), r.opts.MaxWatchTimeout.Seconds()
	s := int64(lo + r.rand()*(hi-lo))
	return &s
}

// list performs the Listing state.
func (r *Reflector[T]) list(ctx context.Context) state[T] {
	start := r.opts.Clock.Now()
	rv := r.listRV()
	items, listRV, err := r.listPages(ctx, rv)
	if r.done(ctx) {
		return state[T]{kind: stopped}
	}
	d := r.opts.Clock.Now().Sub(start)
	if err == nil {
		if err = r.checkNotOlder(listRV); err != nil {
			// Refused: the store keeps the newer state it has.
			items = nil
		}
	}
	if err == nil {
		err = r.replace(items, listRV)
	}
	r.opts.Metrics.ObserveList(r.opts.Name, d, len(items), err)
	if err != nil {
		return r.fail(fmt.Errorf("list: %w", err), listing)
	}
	r.log.Debug("listed", "resourceVersion", listRV, "items", len(items), "duration", d)
	r.setSynced(listRV)
	return state[T]{kind: watching}
}

// listPages lists all pages starting at rv. When the server no longer has
// the version asked for (rv gone or too large, or a continue token
// expired), it starts over once with resourceVersion="".
func (r *Reflector[T]) listPages(ctx context.Context, rv string) ([]T, string, error) {
	opts := metav1.ListOptions{ResourceVersion: rv, Limit: r.pageLimit(rv)}
	var items []T
	listRV := ""
	restarted := false
	for page := 0; ; page++ {
		l, err := r.lw.List(ctx, opts)
		if err != nil {
			if isRVUnavailable(err) && !restarted && (opts.Continue != "" || opts.ResourceVersion != "") {
				r.log.Info("list position unavailable; listing again with a consistent read",
					"resourceVersion", opts.ResourceVersion, "continue", opts.Continue != "", "err", err)
				restarted = true
				r.rvUnavailable = true
				items, listRV, page = nil, "", -1
				opts = metav1.ListOptions{Limit: r.pageLimit("")}
				continue
			}
			return nil, "", err
		}
		if l == nil {
			return nil, "", errors.New("ListerWatcher returned a nil list")
		}
		if page == 0 {
			listRV = l.ResourceVersion
			items = l.Items
		} else {
			items = append(items, l.Items...)
		}
		if l.Continue == "" {
			return items, listRV, nil
		}
		if l.Continue == opts.Continue {
			return nil, "", fmt.Errorf("the server answered continue token %q with itself", l.Continue)
		}
		if page == 0 && opts.ResourceVersion == "0" {
			r.paginated = true
		}
		opts = metav1.ListOptions{Limit: opts.Limit, Continue: l.Continue}
	}
}

// errNoInitialEventsEnd: a streaming list ended before its initial events did.
var errNoInitialEventsEnd = errors.New("watch ended before the initial-events-end bookmark")

// errNilWatch: the ListerWatcher returned neither a watch nor an error.
var errNilWatch = errors.New("ListerWatcher returned a nil Watch")

// errVeryShortWatch: a watch ended at once without any event.
var errVeryShortWatch = errors.New("very short watch: the server closed it at once without any event")

// watchList performs the WatchListing state.
func (r *Reflector[T]) watchList(ctx context.Context) state[T] {
	start := r.opts.Clock.Now()
	rv := ""
	if !r.rvUnavailable {
		rv = r.LastSyncResourceVersion()
	}
	sendInitialEvents := true
	opts := metav1.ListOptions{
		ResourceVersion:      rv,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		SendInitialEvents:    &sendInitialEvents,
		AllowWatchBookmarks:  true,
		TimeoutSeconds:       r.watchTimeout(),
	}
	w, err := r.openWatch(ctx, opts)
	if err != nil {
		if r.done(ctx) {
			return state[T]{kind: stopped}
		}
		if w.silent() {
			err = r.silentErr(w)
			r.opts.Metrics.ObserveList(r.opts.Name, r.opts.Clock.Now().Sub(start), 0, err)
			return r.fail(fmt.Errorf("streaming list: %w", err), watchListing)
		}
		r.opts.Metrics.ObserveList(r.opts.Name, r.opts.Clock.Now().Sub(start), 0, err)
		return r.watchListFailed(err, rv)
	}
	var c collector[T]
	for {
		ev, err := w.next()
		if err != nil {
			w.stop()
			if r.done(ctx) {
				return state[T]{kind: stopped}
			}
			if w.silent() {
				err = r.silentErr(w)
				r.opts.Metrics.ObserveList(r.opts.Name, r.opts.Clock.Now().Sub(start), 0, err)
				return r.fail(fmt.Errorf("streaming list: %w", err), watchListing)
			}
			if errors.Is(err, io.EOF) {
				r.opts.Metrics.ObserveList(r.opts.Name, r.opts.Clock.Now().Sub(start), 0, errNoInitialEventsEnd)
				r.watchListMisses++
				if r.watchListMisses >= maxWatchListMisses {
					r.log.Info("server does not end the initial events of streaming lists; using list+watch from now on",
						"attempts", r.watchListMisses)
					r.noWatchList = true
					return state[T]{kind: listing}
				}
				return r.fail(errNoInitialEventsEnd, watchListing)
			}
			r.opts.Metrics.ObserveList(r.opts.Name, r.opts.Clock.Now().Sub(start), 0, err)
			return r.fail(fmt.Errorf("streaming list: %w", err), watchListing)
		}
		if ev.Type == watch.Error {
			w.stop()
			err := statusError(ev.Status)
			r.opts.Metrics.ObserveList(r.opts.Name, r.opts.Clock.Now().Sub(start), 0, err)
			return r.watchListFailed(err, rv)
		}
		if isNil(ev.Object) {
			r.log.Warn("watch event without object", "type", string(ev.Type))
			continue
		}
		switch ev.Type {
		case watch.Added, watch.Modified:
			c.put(ev.Object)
		case watch.Deleted:
			c.remove(ev.Object)
		case watch.Bookmark:
			if ev.Object.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" {
				continue
			}
			rv := ev.Object.GetResourceVersion()
			items := c.items
			err := r.checkNotOlder(rv)
			if err != nil {
				// Refused: the store keeps the newer state it has.
				items = nil
			} else {
				err = r.replace(items, rv)
			}
			d := r.opts.Clock.Now().Sub(start)
			if err != nil {
				w.stop()
				r.opts.Metrics.ObserveList(r.opts.Name, d, len(items), err)
				return r.fail(fmt.Errorf("streaming list: %w", err), watchListing)
			}
			r.opts.Metrics.ObserveList(r.opts.Name, d, len(items), nil)
			r.log.Debug("streamed list", "resourceVersion", rv, "items", len(items), "duration", d)
			r.watchListMisses = 0
			r.setSynced(rv)
			return state[T]{kind: watching, open: w}
		default:
			r.log.Warn("unknown watch event type", "type", string(ev.Type))
		}
	}
}

// silentErr is the error of a watch its watchdog stopped, logged.
func (r *Reflector[T]) silentErr(w *liveWatch[T]) error {
	r.log.Warn("watch silent past its timeout and the silence margin: stopped it; trying again after a backoff",
		"timeoutSeconds", w.timeout, "silence", w.limit, "resourceVersion", r.LastSyncResourceVersion())
	return fmt.Errorf("%w: nothing for %v (timeoutSeconds=%d)", ErrSilentWatch, w.limit, w.timeout)
}

// watchListFailed decides what follows a failed streaming list that asked
// for resourceVersion rv.
func (r *Reflector[T]) watchListFailed(err error, rv string) state[T] {
	switch {
	case isWatchListRejected(err):
		r.log.Info("server rejects streaming lists; using list+watch from now on", "err", err)
		r.noWatchList = true
		return state[T]{kind: listing}
	case isRVUnavailable(err) && rv != "":
		r.log.Info("streaming list position unavailable; streaming again with a consistent read", "resourceVersion", rv, "err", err)
		r.rvUnavailable = true
		return r.relistAfter(err)
	}
	return r.fail(fmt.Errorf("streaming list: %w", err), watchListing)
}

// watch performs the Watching state: it consumes w, or a new watch from
// lastRV when w is nil, until the watch ends.
func (r *Reflector[T]) watch(ctx context.Context, w *liveWatch[T]) state[T] {
	if w == nil {
		opts := metav1.ListOptions{
			ResourceVersion:     r.LastSyncResourceVersion(),
			AllowWatchBookmarks: true,
			TimeoutSeconds:      r.watchTimeout(),
		}
		var err error
		w, err = r.openWatch(ctx, opts)
		if err != nil {
			if r.done(ctx) {
				return state[T]{kind: stopped}
			}
			if w.silent() {
				err = r.silentErr(w)
				r.opts.Metrics.ObserveWatch(r.opts.Name, 0, 0, err)
				return r.fail(fmt.Errorf("watch: %w", err), watching)
			}
			r.opts.Metrics.ObserveWatch(r.opts.Name, 0, 0, err)
			return r.watchFailed(err)
		}
	}
	defer w.stop()
	start := r.opts.Clock.Now()
	events := 0
	for {
		ev, err := w.next()
		if err != nil {
			if r.done(ctx) {
				r.opts.Metrics.ObserveWatch(r.opts.Name, r.opts.Clock.Now().Sub(start), events, nil)
				return state[T]{kind: stopped}
			}
			d := r.opts.Clock.Now().Sub(start)
			if w.silent() {
				// Nothing is lost: the next watch starts from the last
				// resourceVersion this one delivered.
				err = r.silentErr(w)
				r.opts.Metrics.ObserveWatch(r.opts.Name, d, events, err)
				return r.fail(fmt.Errorf("watch: %w", err), watching)
			}
			if errors.Is(err, io.EOF) {
				if events == 0 && d < veryShortWatch {
					r.opts.Metrics.ObserveWatch(r.opts.Name, d, events, errVeryShortWatch)
					return r.fail(errVeryShortWatch, watching)
				}
				r.opts.Metrics.ObserveWatch(r.opts.Name, d, events, nil)
				r.log.Debug("watch ended", "events", events, "duration", d)
				return state[T]{kind: watching}
			}
			r.opts.Metrics.ObserveWatch(r.opts.Name, d, events, err)
			return r.watchFailed(err)
		}
		events++
		if ev.Type == watch.Error {
			err := statusError(ev.Status)
			r.opts.Metrics.ObserveWatch(r.opts.Name, r.opts.Clock.Now().Sub(start), events, err)
			return r.watchFailed(err)
		}
		if isNil(ev.Object) {
			r.log.Warn("watch event without object", "type", string(ev.Type))
			continue
		}
		// Once the store has the object it is the store's (an informer
		// interns it in place on another goroutine): read what the
		// reflector needs of it first.
		rv := ev.Object.GetResourceVersion()
		switch ev.Type {
		case watch.Added, watch.Modified, watch.Deleted, watch.Bookmark:
		default:
			r.log.Warn("unknown watch event type", "type", string(ev.Type))
			continue
		}
		// The position moves before the store has the event (as before a
		// Replace), so that whoever sees the event there — a handler the
		// informer calls once its cache has it — never reads an older
		// LastSyncResourceVersion. A refused event moves it too: the watch
		// has gone past it.
		r.setRV(rv)
		var serr error
		switch ev.Type {
		case watch.Added:
			serr = r.store.Add(ev.Object)
		case watch.Modified:
			serr = r.store.Update(ev.Object)
		case watch.Deleted:
			serr = r.store.Delete(ev.Object)
		case watch.Bookmark:
			serr = r.store.Bookmark(rv)
		}
		if serr != nil {
			// A rejected object stays the reflector's.
			r.log.Error("store rejected a watch event", "type", string(ev.Type),
				"namespace", ev.Object.GetNamespace(), "name", ev.Object.GetName(), "err", serr)
		}
	}
}

// watchFailed decides what follows a watch that could not be opened or
// ended with err. Only a position the server no longer has (410 Gone,
// Expired, too large resourceVersion) calls for a relist; everything else —
// 429, 500, a broken connection — retries the watch from the same
// resourceVersion after a backoff, so an unhealthy server is not hit by a
// storm of relists.
func (r *Reflector[T]) watchFailed(err error) state[T] {
	if isRVUnavailable(err) {
		r.log.Info("watch position unavailable; relisting with a consistent read",
			"resourceVersion", r.LastSyncResourceVersion(), "err", err)
		r.rvUnavailable = true
		return r.relistAfter(err)
	}
	return r.fail(fmt.Errorf("watch: %w", err), watching)
}

// statusError turns the Status of an ERROR watch event into an error.
func statusError(s *metav1.Status) error {
	if s == nil {
		return errors.New("watch ERROR event without a Status")
	}
	return &apierrors.StatusError{ErrStatus: *s}
}

// isNil reports a nil object (a nil interface or a nil pointer).
func isNil[T Object](o T) bool {
	v := any(o)
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

// nilValue reports an interface holding a nil pointer, map, func, chan or
// slice (a typed nil), which would panic on its first method call in Run.
func nilValue(v any) bool {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Func, reflect.Chan, reflect.Slice, reflect.Interface:
		return rv.IsNil()
	}
	return false
}

// collector gathers the initial events of a streaming list, keyed by
// namespace/name so that a later event for the same object replaces the
// earlier one.
type collector[T Object] struct {
	items []T
	index map[string]int // key → position in items
}

func key(o metav1.Object) string {
	if ns := o.GetNamespace(); ns != "" {
		return ns + "/" + o.GetName()
	}
	return o.GetName()
}

func (c *collector[T]) put(o T) {
	if c.index == nil {
		c.index = make(map[string]int)
	}
	k := key(o)
	if i, ok := c.index[k]; ok {
		c.items[i] = o
		return
	}
	c.index[k] = len(c.items)
	c.items = append(c.items, o)
}

func (c *collector[T]) remove(o T) {
	k := key(o)
	i, ok := c.index[k]
	if !ok {
		return
	}
	last := len(c.items) - 1
	if i != last {
		c.items[i] = c.items[last]
		c.index[key(c.items[i])] = i
	}
	var zero T
	c.items[last] = zero
	c.items = c.items[:last]
	delete(c.index, k)
}
