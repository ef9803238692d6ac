package liveview

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"strconv"
	"time"
)

//go:embed static
var static embed.FS

// DefaultInterval is the default of Options.Interval.
const DefaultInterval = time.Second

// Options configures a Server.
type Options struct {
	// Read reads the pipeline's statistics into s (its Time is set by the
	// server). Required.
	Read func(s *Sample)
	// Timeline answers the per-object timelines. Default nil: the page
	// shows none.
	Timeline *Timeline
	// Interval is how often the page's figures are pushed. Default
	// DefaultInterval (1 s).
	Interval time.Duration
	// Logger receives the server's diagnostics. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock of the samples. Default time.Now.
	Now func() time.Time
}

func (o *Options) setDefaults() {
	if o.Interval == 0 {
		o.Interval = DefaultInterval
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

func (o *Options) validate() error {
	var errs []error
	if o.Read == nil {
		errs = append(errs, errors.New("Options.Read is required"))
	}
	if o.Interval < 0 {
		errs = append(errs, fmt.Errorf("Options.Interval %s is negative", o.Interval))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("liveview: %w", err)
	}
	return nil
}

// Server serves the live view: the page (GET /), its figures as
// server-sent events (GET /events, one "stats" event per Interval, a View
// in JSON), one frame (GET /stats), the objects of the timeline
// (GET /objects?limit=N) and one object's timeline (GET
// /timeline?controller=C&namespace=NS&name=N). It starts no goroutine:
// each /events stream samples on its own request's goroutine, until the
// request's context ends.
type Server struct {
	opts Options
	mux  *http.ServeMux
	// streams holds a token per open /events stream: at most MaxStreams
	// sample the pipeline at once, the next are answered 503.
	streams chan struct{}
}

// MaxStreams is how many /events streams a Server serves at once.
const MaxStreams = 16

// New returns a Server.
func New(opts Options) (*Server, error) {
	opts.setDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	s := &Server{opts: opts, mux: http.NewServeMux(), streams: make(chan struct{}, MaxStreams)}
	s.mux.Handle("GET /", http.FileServerFS(mustSub(static, "static")))
	s.mux.HandleFunc("GET /events", s.events)
	s.mux.HandleFunc("GET /stats", s.stats)
	s.mux.HandleFunc("GET /objects", s.objects)
	s.mux.HandleFunc("GET /timeline", s.timeline)
	return s, nil
}

// ServeHTTP serves the live view's routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

func (s *Server) sample() Sample {
	var smp Sample
	s.opts.Read(&smp)
	smp.Time = s.opts.Now()
	return smp
}

func (s *Server) stats(w http.ResponseWriter, _ *http.Request) {
	h := history{}
	h.add(s.sample())
	writeJSON(w, h.view())
}

func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	if _, ok := w.(http.Flusher); !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	select {
	case s.streams <- struct{}{}:
		defer func() { <-s.streams }()
	default:
		http.Error(w, fmt.Sprintf("%d live view streams are open already", MaxStreams), http.StatusServiceUnavailable)
		return
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	t := time.NewTicker(s.opts.Interval)
	defer t.Stop()
	var h history
	for {
		h.add(s.sample())
		b, err := json.Marshal(h.view())
		if err != nil {
			s.opts.Logger.Error("liveview: encoding a frame", "err", err)
			return
		}
		// A viewer that stops reading must not hold the stream (and the
		// manager's shutdown) on a blocked write.
		_ = rc.SetWriteDeadline(time.Now().Add(max(5*time.Second, 2*s.opts.Interval)))
		if _, err := fmt.Fprintf(w, "event: stats\ndata: %s\n\n", b); err != nil {
			return // the viewer left
		}
		if rc.Flush() != nil {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
		}
	}
}

func (s *Server) objects(w http.ResponseWriter, r *http.Request) {
	limit := 200
	if l := r.URL.Query().Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 0 {
			http.Error(w, fmt.Sprintf("limit %q is not a non-negative integer", l), http.StatusBadRequest)
			return
		}
		limit = n
	}
	out := []ObjectSummary{}
	if s.opts.Timeline != nil {
		out = s.opts.Timeline.Objects(limit)
	}
	writeJSON(w, out)
}

// TimelineAnswer is the answer of /timeline.
type TimelineAnswer struct {
	Object  ObjectKey `json:"object"`
	Entries []Entry   `json:"entries"`
}

func (s *Server) timeline(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	key := ObjectKey{Controller: q.Get("controller"), Namespace: q.Get("namespace"), Name: q.Get("name")}
	if key.Controller == "" || key.Name == "" {
		http.Error(w, "controller and name are required (namespace too, for a namespaced object)", http.StatusBadRequest)
		return
	}
	if s.opts.Timeline == nil {
		http.Error(w, "no timeline is recorded", http.StatusNotFound)
		return
	}
	entries, ok := s.opts.Timeline.Entries(key)
	if !ok {
		http.Error(w, fmt.Sprintf("no timeline for %s %s/%s (never reconciled, or forgotten)", key.Controller, key.Namespace, key.Name), http.StatusNotFound)
		return
	}
	writeJSON(w, TimelineAnswer{Object: key, Entries: entries})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// mustSub is fs.Sub of a directory embedded in the binary: it cannot fail.
func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		panic("liveview: embedded " + dir + ": " + err.Error())
	}
	return sub
}
