package apiserver

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// CheckDecodedCache returns opts with the check of the decoded-object
// cache's rule on (Options.decodedMutation): a test whose server writes to
// a shared entry of the cache fails. Every server of this package's tests
// is made with it: New in the internal tests through newTestServer, the
// apiservertest servers of the external ones through their helpers
// (onTargets, embedded, forEachTarget, startTarget).
func CheckDecodedCache(tb testing.TB, opts Options) Options {
	opts.decodedMutation = func(err error) {
		if _, fuzzing := tb.(*testing.F); fuzzing {
			// *F's methods cannot be called from the fuzz function: the
			// server answers 500 with the error, which fails the target.
			panic(err)
		}
		tb.Error(err)
	}
	return opts
}

// newTestServer is New with the decoded-cache check on (CheckDecodedCache).
func newTestServer(tb testing.TB, opts Options) *Server {
	tb.Helper()
	s, err := New(CheckDecodedCache(tb, opts))
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// serveOnce sends one request to s's handler (bearer token "t").
func serveOnce(t *testing.T, s *Server, method, path, ctype, body string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer t")
	req.Header.Set("Content-Type", ctype)
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	return rec
}

// WithSnapshotBytes returns opts whose data directory's store snapshots
// once its log holds n bytes (storage.Options.SnapshotBytes), so that tests
// see snapshots without writing 64 MiB.
func WithSnapshotBytes(opts Options, n int64) Options {
	opts.snapshotBytes = n
	return opts
}
