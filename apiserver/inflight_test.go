package apiserver

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"kloop.dev/kloop/internal/testutil"
)

// blockingWriter is a ResponseWriter whose first Write blocks until release
// is closed: its request holds its in-flight slot until then.
type blockingWriter struct {
	*httptest.ResponseRecorder
	release chan struct{}
}

func (w *blockingWriter) Write(p []byte) (int, error) {
	<-w.release
	return w.ResponseRecorder.Write(p)
}

// blockingBody is a request body that sends nothing until release is
// closed.
type blockingBody struct{ release chan struct{} }

func (b blockingBody) Read([]byte) (int, error) {
	<-b.release
	return 0, io.ErrUnexpectedEOF
}

// Each class of request has its bound; past it, kube-apiserver's 429 with
// Retry-After: 1, and the other classes are still served. Unauthenticated
// requests are refused before they are counted.
func TestInflightBounds(t *testing.T) {
	s, addr := serveLoopback(t, Options{MaxRequestsInFlight: 2, MaxMutatingRequestsInFlight: 1, MaxWatches: 1})
	release := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	var once sync.Once
	releaseAll := func() { once.Do(func() { close(release) }) }
	defer releaseAll()
	hold := func(class requestClass, want int64, req *http.Request) {
		t.Helper()
		req.Header.Set("Authorization", "Bearer t")
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.Handler().ServeHTTP(&blockingWriter{httptest.NewRecorder(), release}, req)
		}()
		testutil.Eventually(t, "the request holds its slot", func() bool { return s.limits.inflight(class) == want })
	}
	send := func(method, target, body string, token bool) *httptest.ResponseRecorder {
		t.Helper()
		req := httptest.NewRequest(method, target, strings.NewReader(body))
		if token {
			req.Header.Set("Authorization", "Bearer t")
		}
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		return rec
	}
	tooMany := func(what string, rec *httptest.ResponseRecorder) {
		t.Helper()
		if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "1" ||
			rec.Body.String() != "Too many requests, please try again later.\n" || rec.Header().Get("Content-Type") != "text/plain; charset=utf-8" {
			t.Fatalf("%s: %d %v %q, want kube-apiserver's 429", what, rec.Code, rec.Header(), rec.Body)
		}
	}
	const cms = "/api/v1/namespaces/default/configmaps"

	hold(readOnly, 1, httptest.NewRequest(http.MethodGet, cms, nil))
	hold(readOnly, 2, httptest.NewRequest(http.MethodGet, "/version", nil))
	tooMany("a third read", send(http.MethodGet, cms, "", true))
	if rec := send(http.MethodGet, cms, "", false); rec.Code != http.StatusUnauthorized {
		t.Fatalf("without a token: %d", rec.Code)
	}
	if rec := send(http.MethodPost, cms, `{"metadata":{"name":"a"}}`, true); rec.Code != http.StatusCreated {
		t.Fatalf("a write beside full reads: %d %s", rec.Code, rec.Body)
	}

	post := httptest.NewRequest(http.MethodPost, cms, blockingBody{release})
	post.ContentLength = -1
	hold(mutating, 1, post)
	tooMany("a second write", send(http.MethodDelete, cms+"/a", "", true))
	// Over the network, a refused write's unsent body holds nothing.
	c := dialRaw(t, s, addr)
	if _, err := io.WriteString(c, "POST "+cms+" HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\nContent-Length: 1000\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	if line, err := readStatusLine(c, br, 5*time.Second); err != nil || !strings.HasPrefix(line, "HTTP/1.1 429 ") {
		t.Fatalf("status line %q, %v", line, err)
	}
	if !closedWithin(c, br, 5*time.Second) {
		t.Fatal("the connection stays open after a refused write")
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hold(longRunning, 1, httptest.NewRequest(http.MethodGet, cms+"?watch=true", nil).WithContext(ctx))
	tooMany("a second watch", send(http.MethodGet, cms+"?watch=true", "", true))
	tooMany("a pod's log beside a watch", send(http.MethodGet, "/api/v1/namespaces/default/pods/p/log", "", true))

	releaseAll()
	cancel()
	for _, c := range []requestClass{readOnly, mutating, longRunning} {
		testutil.Eventually(t, "the slots released", func() bool { return s.limits.inflight(c) == 0 })
	}
	if rec := send(http.MethodGet, cms, "", true); rec.Code != http.StatusOK {
		t.Fatalf("after: %d", rec.Code)
	}
}

func TestInflightLimitsAcquire(t *testing.T) {
	l := newInflightLimits(3, 1, 2)
	for c, max := range []int{3, 1, 2} {
		class := requestClass(c)
		for i := range max {
			if !l.acquire(class) {
				t.Fatalf("class %d: slot %d refused", c, i)
			}
		}
		if l.acquire(class) {
			t.Fatalf("class %d: a slot past %d", c, max)
		}
		l.release(class)
		if !l.acquire(class) {
			t.Fatalf("class %d: a released slot refused", c)
		}
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				if l.acquire(readOnly) {
					l.release(readOnly)
				}
			}
		})
	}
	wg.Wait()
	if n := l.inflight(readOnly); n != 3 {
		t.Fatalf("after concurrent use: %d in flight", n)
	}
}
