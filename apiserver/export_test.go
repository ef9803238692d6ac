package apiserver

import "testing"

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
