package testutil

import (
	"io"
	"net/http"
	"sync"
	"time"
)

// DelayWatches returns a wrapper of an HTTP transport (for
// apiservertest.Env.HTTPClient) that delays every byte of every watch
// response (a request with watch=true or watch=1) by d: a cache fed by such
// watches lags the server by d, as an informer does under load — the
// condition in which a reconcile reads a cache older than its own writes.
// Lists, gets and writes are not delayed.
func DelayWatches(d time.Duration) func(http.RoundTripper) http.RoundTripper {
	return func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := next.RoundTrip(req)
			if err != nil {
				return resp, err
			}
			if w := req.URL.Query().Get("watch"); w == "true" || w == "1" {
				resp.Body = newDelayedBody(resp.Body, d)
			}
			return resp, nil
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// delayedBody hands out what its body sends d after it came.
type delayedBody struct {
	body io.ReadCloser
	d    time.Duration
	ch   chan chunk
	done chan struct{}
	once sync.Once
	cur  []byte
	err  error
}

type chunk struct {
	data []byte
	at   time.Time
	err  error
}

func newDelayedBody(body io.ReadCloser, d time.Duration) *delayedBody {
	b := &delayedBody{body: body, d: d, ch: make(chan chunk, 1024), done: make(chan struct{})}
	go b.pump()
	return b
}

// pump reads the body as it comes and queues each chunk with its time.
func (b *delayedBody) pump() {
	for {
		buf := make([]byte, 32<<10)
		n, err := b.body.Read(buf)
		select {
		case b.ch <- chunk{data: buf[:n], at: time.Now(), err: err}:
		case <-b.done:
			return
		}
		if err != nil {
			return
		}
	}
}

func (b *delayedBody) Read(p []byte) (int, error) {
	for len(b.cur) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		var c chunk
		select {
		case c = <-b.ch:
		case <-b.done:
			return 0, io.ErrClosedPipe
		}
		if wait := time.Until(c.at.Add(b.d)); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-b.done:
				t.Stop()
				return 0, io.ErrClosedPipe
			}
		}
		b.cur, b.err = c.data, c.err
	}
	n := copy(p, b.cur)
	b.cur = b.cur[n:]
	return n, nil
}

func (b *delayedBody) Close() error {
	b.once.Do(func() { close(b.done) })
	return b.body.Close()
}
