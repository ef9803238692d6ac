package apiserver

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"

	"kloop.dev/kloop/internal/testutil"
)

// serveLoopback serves s (made with opts, token "t") on a port of
// 127.0.0.1 until the test ends, and returns it with its address.
func serveLoopback(t *testing.T, opts Options) (*Server, string) {
	t.Helper()
	opts.Token = "t"
	s := newTestServer(t, opts)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	<-s.Ready()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return s, ln.Addr().String()
}

// dialRaw opens a connection to addr, over TLS (HTTP/1.1) when s serves TLS.
func dialRaw(t *testing.T, s *Server, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if s.CAData() == nil {
		return c
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.CAData())
	tc := tls.Client(c, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12})
	_ = tc.SetDeadline(time.Now().Add(5 * time.Second))
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	_ = tc.SetDeadline(time.Time{})
	return tc
}

// readStatusLine reads the status line of a response within d.
func readStatusLine(c net.Conn, br *bufio.Reader, d time.Duration) (string, error) {
	_ = c.SetReadDeadline(time.Now().Add(d))
	line, err := br.ReadString('\n')
	return strings.TrimSpace(line), err
}

// closedWithin reports whether the server closes c within d (whatever it
// sends first is read and dropped).
func closedWithin(c net.Conn, br *bufio.Reader, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, br)
	var ne net.Error
	return err == nil || !(errors.As(err, &ne) && ne.Timeout())
}

// The answer to a request refused on its headers comes at once, however
// much body the request declares, and the connection closes: a client that
// declares a body and never sends it holds nothing. Without closeConnection
// net/http waits for (up to 256 KiB of) the body before answering, and
// keeps unauthenticated connections open.
func TestRefusedBeforeBody(t *testing.T) {
	const post = "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
	for _, useTLS := range []bool{false, true} {
		s, addr := serveLoopback(t, Options{TLS: useTLS})
		for _, tc := range []struct {
			name, req string
			status    string
		}{
			{"no token, 1 MB declared", post + "Content-Length: 1000000\r\n\r\n", "401"},
			{"no token, 1 kB declared", post + "Content-Length: 1000\r\n\r\n", "401"},
			{"no token, chunked", post + "Transfer-Encoding: chunked\r\n\r\n", "401"},
			{"no token, no body", "GET /api/v1/namespaces HTTP/1.1\r\nHost: x\r\n\r\n", "401"},
			{"wrong token, 1 kB declared", post + "Authorization: Bearer nope\r\nContent-Length: 1000\r\n\r\n", "401"},
			{"token, too large", post + "Authorization: Bearer t\r\nContent-Length: 4000000\r\n\r\n", "413"},
			{"token, bad timeout, 1 kB declared", strings.Replace(post, "configmaps", "configmaps?timeout=x", 1) + "Authorization: Bearer t\r\nContent-Length: 1000\r\n\r\n", "400"},
		} {
			t.Run(fmt.Sprintf("tls=%v/%s", useTLS, tc.name), func(t *testing.T) {
				c := dialRaw(t, s, addr)
				start := time.Now()
				if _, err := io.WriteString(c, tc.req); err != nil {
					t.Fatal(err)
				}
				br := bufio.NewReader(c)
				line, err := readStatusLine(c, br, 5*time.Second)
				if err != nil || !strings.HasPrefix(line, "HTTP/1.1 "+tc.status+" ") {
					t.Fatalf("status line %q, %v (after %v), want %s at once", line, err, time.Since(start), tc.status)
				}
				if !closedWithin(c, br, 5*time.Second) {
					t.Fatalf("the connection stays open after %s", line)
				}
				if d := time.Since(start); d > 3*time.Second {
					t.Errorf("answered and closed after %v", d)
				}
			})
		}
	}
}

// Over HTTP/2, a 401 sends a GOAWAY: the client's next request takes a new
// connection.
func TestUnauthorizedHTTP2Goaway(t *testing.T) {
	s, addr := serveLoopback(t, Options{TLS: true})
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.CAData())
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	get := func() (proto string, reused bool) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "https://"+addr+"/api/v1/namespaces", nil)
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("status %d", resp.StatusCode)
		}
		return resp.Proto, reused
	}
	if proto, _ := get(); proto != "HTTP/2.0" {
		t.Fatalf("proto %s", proto)
	}
	testutil.Eventually(t, "a new connection after a 401", func() bool {
		time.Sleep(20 * time.Millisecond) // let the client read the GOAWAY
		_, reused := get()
		return !reused
	})
}

// A client that sends its headers slowly, or never completes a TLS
// handshake, is disconnected after ReadHeaderTimeout.
func TestReadHeaderTimeout(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", useTLS), func(t *testing.T) {
			_, addr := serveLoopback(t, Options{TLS: useTLS, ReadHeaderTimeout: 300 * time.Millisecond})
			// start is read before the dial: the server's deadline runs
			// from its accept, which follows it, whereas a reading after
			// the dial may come late on a loaded machine.
			start := time.Now()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			stop := make(chan struct{})
			defer close(stop)
			go func() { // a header byte every 50 ms (or a handshake that never starts)
				if useTLS {
					return
				}
				_, _ = io.WriteString(c, "GET /version HTTP/1.1\r\n")
				for {
					select {
					case <-stop:
						return
					case <-time.After(50 * time.Millisecond):
						if _, err := io.WriteString(c, "X"); err != nil {
							return
						}
					}
				}
			}()
			if !closedWithin(c, bufio.NewReader(c), 5*time.Second) {
				t.Fatal("a slow client is still connected")
			}
			if d := time.Since(start); d < 250*time.Millisecond {
				t.Fatalf("disconnected after %v, before the header timeout", d)
			}
		})
	}
}

// An idle keep-alive connection is closed after IdleTimeout.
func TestIdleTimeout(t *testing.T) {
	s, addr := serveLoopback(t, Options{IdleTimeout: 300 * time.Millisecond})
	c := dialRaw(t, s, addr)
	if _, err := io.WriteString(c, "GET /version HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("status %d, close %v", resp.StatusCode, resp.Close)
	}
	if !closedWithin(c, br, 5*time.Second) {
		t.Fatal("an idle connection stays open")
	}
}

// A body that does not arrive within the request timeout (Options or the
// request's timeout parameter, whichever is shorter) gets kube-apiserver's
// 504.
func TestBodyTimeout(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  Options
		query string
	}{
		{"option", Options{RequestTimeout: 300 * time.Millisecond}, ""},
		{"parameter", Options{}, "?timeout=300ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, addr := serveLoopback(t, tc.opts)
			c := dialRaw(t, s, addr)
			start := time.Now()
			_, err := io.WriteString(c, "POST /api/v1/namespaces/default/configmaps"+tc.query+" HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\n"+
				"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"apiVersion\":")
			if err != nil {
				t.Fatal(err)
			}
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusGatewayTimeout || !strings.Contains(string(body), `"message":"Timeout: request did not complete within the allotted timeout","reason":"Timeout"`) {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			if d := time.Since(start); d < 250*time.Millisecond || d > 5*time.Second {
				t.Fatalf("answered after %v", d)
			}
		})
	}
}

// A client that does not read its response loses the connection once the
// request timeout passes: the request ends instead of blocking for ever.
func TestWriteTimeout(t *testing.T) {
	s, addr := serveLoopback(t, Options{RequestTimeout: 500 * time.Millisecond})
	big := strings.Repeat("x", 900_000)
	for i := range 30 { // 27 MB: more than the sockets' buffers
		body := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big%d"},"data":{"k":%q}}`, i, big)
		if rec := serveOnce(t, s, http.MethodPost, "/api/v1/namespaces/default/configmaps", "application/json", body); rec.Code != http.StatusCreated {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.(*net.TCPConn).SetReadBuffer(4096)
	if _, err := io.WriteString(c, "GET /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the list request is being served", func() bool { return s.inflight.Load() == 1 })
	start := time.Now()
	for s.inflight.Load() != 0 {
		if time.Since(start) > 10*time.Second {
			t.Fatal("the list request still blocks on a client that does not read")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Watches are long-running: the request timeout does not cut them.
func TestWatchOutlivesRequestTimeout(t *testing.T) {
	s, addr := serveLoopback(t, Options{RequestTimeout: 200 * time.Millisecond})
	c := dialRaw(t, s, addr)
	if _, err := io.WriteString(c, "GET /api/v1/namespaces/default/configmaps?watch=true HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%v %v", resp, err)
	}
	time.Sleep(600 * time.Millisecond)
	if rec := serveOnce(t, s, http.MethodPost, "/api/v1/namespaces/default/configmaps", "application/json", `{"metadata":{"name":"late"}}`); rec.Code != http.StatusCreated {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	// The watch starts with what default holds (its kube-root-ca.crt),
	// then the late ConfigMap.
	body := bufio.NewReader(resp.Body)
	for {
		line, err := body.ReadString('\n')
		if err != nil || !strings.Contains(line, `"type":"ADDED"`) {
			t.Fatalf("watch: %q %v", line, err)
		}
		if strings.Contains(line, `"name":"late"`) {
			break
		}
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		method, target string
		want           requestClass
	}{
		{"GET", "/version", readOnly},
		{"GET", "/apis", readOnly},
		{"GET", "/api/v1/namespaces", readOnly},
		{"GET", "/api/v1/namespaces?watch=false&allowWatchBookmarks=true", readOnly},
		{"GET", "/api/v1/namespaces?watch=true", longRunning},
		{"GET", "/api/v1/namespaces?watch=1", longRunning},
		{"GET", "/api/v1/namespaces?watch", longRunning},
		{"GET", "/api/v1/watch/namespaces", longRunning},
		{"GET", "/api/v1/watch/namespaces/default/configmaps/x", longRunning},
		{"GET", "/apis/apps/v1/namespaces/d/deployments?watch=true", longRunning},
		{"GET", "/version?watch=true", readOnly},
		{"POST", "/api/v1/namespaces/d/configmaps?watch=true", mutating},
		{"GET", "/api/v1/namespaces/d/pods/p/log", longRunning},
		{"POST", "/api/v1/namespaces/d/pods/p/exec", longRunning},
		{"POST", "/api/v1/namespaces/d/pods/p/attach", longRunning},
		{"POST", "/api/v1/namespaces/d/pods/p/portforward", longRunning},
		{"GET", "/api/v1/namespaces/d/configmaps/log", readOnly},
		{"PUT", "/api/v1/namespaces/d/configmaps/x", mutating},
		{"PATCH", "/api/v1/namespaces/d/configmaps/x", mutating},
		{"DELETE", "/api/v1/namespaces/d/configmaps", mutating},
		{"HEAD", "/api/v1/namespaces", readOnly},
	} {
		if got := classify(httptest.NewRequest(tc.method, tc.target, nil)); got != tc.want {
			t.Errorf("%s %s: class %d, want %d", tc.method, tc.target, got, tc.want)
		}
	}
}
