package apiserver

import (
	"context"
	"log/slog"
	"net/http"
	"time"
)

// loggedResponse records the code of a response, for Options.LogRequests.
type loggedResponse struct {
	http.ResponseWriter
	code int
}

func (w *loggedResponse) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *loggedResponse) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (flushes of
// watches, deadlines, hijacks of exec and portforward).
func (w *loggedResponse) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// logRequest logs r once answered, with kube-apiserver's httplog fields.
func (s *Server) logRequest(r *http.Request, id *identity, w *loggedResponse, start time.Time) {
	user := ""
	if id != nil {
		user = id.Name
	}
	code := w.code
	if code == 0 {
		code = http.StatusOK
	}
	s.opts.Logger.LogAttrs(context.Background(), slog.LevelInfo, "HTTP",
		slog.String("verb", verbOf(r)), slog.String("URI", r.URL.RequestURI()), slog.String("user", user),
		slog.Int("resp", code), slog.Duration("latency", time.Since(start)),
		slog.String("userAgent", r.UserAgent()), slog.String("srcIP", r.RemoteAddr))
}

// verbOf is the request's HTTP verb as httplog names it (WATCH for a watch).
func verbOf(r *http.Request) string {
	if r.Method == http.MethodGet && (r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1") {
		return "WATCH"
	}
	return r.Method
}
