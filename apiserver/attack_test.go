//go:build linux

package apiserver_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"kloop.dev/kloop/apiserver"
	"kloop.dev/kloop/apiserver/storage"
)

// TestAttacks replays issue 17's attacks on a server with the default
// Options, one after the other, and checks after each that a legitimate
// client was answered within latencyBound all along, and at the end that
// the server's peak memory stayed under rssCap:
//
//   - token-less requests that declare a body and never send it;
//   - connections kept idle after a 401;
//   - slowloris headers, a byte every 200 ms;
//   - a flood past the in-flight bounds: writes whose bodies trickle in
//     (holding every mutating slot: the writes past them get 429 at
//     once), beside reads as fast as 64 clients go (a flood of reads past
//     MaxRequestsInFlight would only measure the scheduler of a machine
//     that serves 400 requests at once on 2 cores; inflight_test.go tests
//     that bound);
//   - updates of 900 kB ConfigMaps, watched, until the history's byte
//     bound has been filled one and a half times (attackHistoryBytes);
//   - a JSON patch that doubles its document at each operation.
//
// The server runs in a child process (this test binary, re-executed), so
// that its memory is its own; the attacks and the legitimate client run
// here, on loopback. Each attack is bounded in connections (at most
// attackConns) and in time (a few seconds): the test takes about half a
// minute, longer under the race detector. It needs Linux's /proc for the
// server's memory and file descriptors.
func TestAttacks(t *testing.T) {
	if os.Getenv(attackServerEnv) == "1" {
		runAttackServer(t)
		return
	}
	if testing.Short() {
		t.Skip("the attacks take half a minute")
	}
	srv := startAttackServer(t)
	if _, err := srv.rss(); err != nil {
		t.Skipf("the server's memory is not readable (%v): the attacks need Linux's /proc", err)
	}
	n := attackConns
	if limit, ok := openFiles(); ok && limit < 2*attackConns+256 {
		n = max(int(limit-256)/2, 64) // this process holds the clients' ends
	}
	legit := newLegitClient(t, srv)
	legit.put(t, "legit", 10) // the object the legitimate client reads

	t.Run("half-sent token-less bodies", func(t *testing.T) {
		defer srv.logRSS(t)
		base := srv.fds(t)
		legit.during(t, func() {
			conns := srv.dialMany(t, n)
			defer closeAll(conns)
			decls := []string{"Content-Length: 1000", "Content-Length: 1000000", "Transfer-Encoding: chunked"}
			answered := onEach(conns, func(i int, c net.Conn) error {
				req := "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + decls[i%len(decls)] + "\r\n\r\n"
				return expectClosedAfter(c, req, "401")
			})
			if answered != len(conns) {
				t.Errorf("%d of %d token-less requests answered 401 and closed at once", answered, len(conns))
			}
		})
		srv.fdsBackTo(t, base)
	})

	t.Run("idle connections after 401", func(t *testing.T) {
		defer srv.logRSS(t)
		base := srv.fds(t)
		legit.during(t, func() {
			conns := srv.dialMany(t, n)
			defer closeAll(conns)
			closed := onEach(conns, func(_ int, c net.Conn) error {
				return expectClosedAfter(c, "GET /api/v1/namespaces HTTP/1.1\r\nHost: x\r\n\r\n", "401")
			})
			if closed != len(conns) {
				t.Errorf("%d of %d connections closed after their 401", closed, len(conns))
			}
		})
		srv.fdsBackTo(t, base)
	})

	t.Run("slowloris headers", func(t *testing.T) {
		defer srv.logRSS(t)
		base := srv.fds(t)
		legit.during(t, func() {
			conns := srv.dialMany(t, n)
			defer closeAll(conns)
			for _, c := range conns {
				_, _ = io.WriteString(c, "GET /api/v1/namespaces HTTP/1.1\r\nHost: x\r\n")
			}
			for range 10 { // 2 s of a header byte every 200 ms on every connection
				time.Sleep(200 * time.Millisecond)
				for _, c := range conns {
					_, _ = io.WriteString(c, "X")
				}
			}
		})
		srv.fdsBackTo(t, base)
	})

	t.Run("flood past the in-flight bounds", func(t *testing.T) {
		defer srv.logRSS(t)
		base := srv.fds(t)
		const slowWrites = 250 // 200 hold every mutating slot; 50 are refused
		var refused atomic.Int64
		legit.acceptTooMany = true // the reads compete with the flood's
		defer func() { legit.acceptTooMany = false }()
		legit.during(t, func() {
			conns := srv.dialMany(t, slowWrites)
			defer closeAll(conns)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			var wg sync.WaitGroup
			for _, c := range conns {
				wg.Go(func() {
					// A body of 100 bytes, a byte every 100 ms: the request
					// holds its slot for 10 s (RequestTimeout is 60 s), or
					// is refused at once.
					req := "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + attackToken +
						"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
					if _, err := io.WriteString(c, req); err != nil {
						return
					}
					answer := make(chan string, 1)
					go func() {
						_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
						line, _ := bufio.NewReader(c).ReadString('\n')
						answer <- line
					}()
					for {
						select {
						case line := <-answer:
							if strings.HasPrefix(line, "HTTP/1.1 429 ") {
								refused.Add(1)
							}
							return
						case <-ctx.Done():
							return
						case <-time.After(100 * time.Millisecond):
							_, _ = io.WriteString(c, " ")
						}
					}
				})
			}
			codes := srv.floodReads(ctx, 64)
			wg.Wait()
			t.Logf("flood of reads: %v; slow writes refused: %d", codes, refused.Load())
			for code := range codes {
				if code != http.StatusOK && code != http.StatusTooManyRequests {
					t.Errorf("the flood of reads got %d", code)
				}
			}
		})
		if got := refused.Load(); got < slowWrites-200 {
			t.Errorf("%d slow writes refused with 429, want at least %d (MaxMutatingRequestsInFlight is 200)", got, slowWrites-200)
		}
		srv.fdsBackTo(t, base)
	})

	t.Run("large ConfigMap updates", func(t *testing.T) {
		defer srv.logRSS(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		framed := legit.watch(ctx, t, "big=true")
		// Updates of 900 kB, watched (so framed: 1.8 MB of history
		// each), 1.6 times the history's byte bound. Two writers, to use
		// two cores.
		updates := int(attackHistoryBytes() * 16 / 10 / 1_800_000 / 2)
		legit.during(t, func() {
			var wg sync.WaitGroup
			for _, name := range []string{"big-a", "big-b"} {
				wg.Go(func() {
					for i := range updates {
						legit.put(t, name, 900_000-i)
					}
				})
			}
			wg.Wait()
		})
		cancel()
		if got := <-framed; got == 0 {
			t.Error("the watch of the big ConfigMaps got no event")
		}
		if got := srv.historyBytes(t); got > attackHistoryBytes() || got < attackHistoryBytes()/2 {
			t.Errorf("the history costs %d bytes after %d updates of 900 kB, want it full (bound %d)", got, 2*updates, attackHistoryBytes())
		}
	})

	t.Run("json-patch doubling", func(t *testing.T) {
		defer srv.logRSS(t)
		legit.put(t, "doubling", 10)
		// 220 kB doubled 4 times: 3.3 MB copied, over kube-apiserver's
		// 3 MiB bound on a JSON patch's copies (422).
		if code, body := srv.doublingPatch(t, 220_000, 4, time.Minute); code != 422 {
			t.Fatalf("a patch copying 3.3 MB got %d %.100s, want 422", code, body)
		}
		legit.during(t, func() {
			// 512 kB doubled 24 times: 8 TB without a bound.
			start := time.Now()
			code, body := srv.doublingPatch(t, 512_000, 24, 2*latencyBound)
			if code < 400 || code >= 500 {
				t.Errorf("the doubling patch got %d %.200s", code, body)
			}
			if d := time.Since(start); d > latencyBound {
				t.Errorf("the doubling patch was answered after %v", d)
			}
		})
	})

	rss, err := srv.rss()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("server's peak RSS: %d MB", rss>>20)
	if limit := rssCap(); rss > limit {
		t.Errorf("server's peak RSS %d MB, over the cap of %d MB", rss>>20, limit>>20)
	}
}

const (
	// attackServerEnv makes TestAttacks run the server (the child).
	attackServerEnv = "KLOOP_ATTACK_SERVER"
	attackToken     = "attack-test-token"
	// attackConns bounds the connections of one attack.
	attackConns = 1000
	// latencyBound is what the legitimate client's p99 latency must stay
	// under during every attack. The server answers its read in about a
	// millisecond unloaded; during the attacks the p99 measured on 2
	// cores (shared, load average 9) was at most 175 ms, and 420 ms under
	// the race detector (the 900 kB updates). 2 s leaves CI a margin of
	// about five, and is still an order of magnitude under what a
	// successful attack costs the client: a server whose connections are
	// all held answers it never (its 30 s timeout), one out of memory not
	// at all.
	latencyBound = 2 * time.Second
)

// attackHistoryBytes is the server's HistoryBytes: the default, 128 MiB;
// under the race detector, which makes every byte a request carries about
// ten times as slow to handle, 32 MiB, so that the attack that fills it
// takes seconds rather than a minute (storage's tests check the default
// bound with the thousand 900 kB updates).
func attackHistoryBytes() int64 {
	if raceEnabled {
		return 32 << 20
	}
	return storage.DefaultHistoryBytes
}

// rssCap is the bound on the server's peak resident memory over all the
// attacks: 600 MB. It is what the defaults allow for: the history's 128
// MiB (HistoryBytes), twice over for the garbage collector's headroom
// (GOGC 100), the live objects and a few MB of buffers for the attack's
// thousand connections, with a margin of about 1.9 (310 to 330 MB
// measured). The server without a byte bound reached 1.49 GB on
// the same kind of updates. Under the race detector, whose shadow memory
// multiplies the heap, 1.2 GB (550 to 560 MB measured, with a quarter of
// the history: attackHistoryBytes).
func rssCap() int64 {
	if raceEnabled {
		return 1200 << 20
	}
	return 600 << 20
}

// runAttackServer is the child: a server with the default Options (but
// HistoryBytes: attackHistoryBytes) on loopback, which prints its URL and
// serves until its standard input closes. It is the one server of this
// package's tests without the check of the decoded-object cache
// (CheckDecodedCache): the check keeps a deep copy of every entry, which
// would weigh on the memory measured.
func runAttackServer(t *testing.T) {
	srv, err := apiserver.New(apiserver.Options{Token: attackToken, HistoryBytes: attackHistoryBytes()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	<-srv.Ready()
	fmt.Printf("attack server: %s\n", srv.URL())
	for lines := bufio.NewScanner(os.Stdin); lines.Scan(); { // until the parent closes it
		if lines.Text() == "history" {
			fmt.Printf("history bytes: %d\n", apiserver.HistoryBytes(srv))
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// attackServer is the child process serving.
type attackServer struct {
	url, addr string
	pid       int
	stdin     io.Writer
	// history receives the child's answers to "history".
	history chan int64
}

// historyBytes asks the server what its watch history costs.
func (s *attackServer) historyBytes(t *testing.T) int64 {
	t.Helper()
	if _, err := io.WriteString(s.stdin, "history\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-s.history:
		return n
	case <-time.After(30 * time.Second):
		t.Fatal("the server does not answer")
		return 0
	}
}

func startAttackServer(t *testing.T) *attackServer {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestAttacks$", "-test.count=1")
	cmd.Env = append(os.Environ(), attackServerEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	t.Cleanup(func() {
		_ = stdin.Close()
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("the server: %v", err)
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("the server did not stop: %v", <-exited)
		}
	})
	lines := bufio.NewScanner(stdout)
	url := ""
	for url == "" && lines.Scan() {
		url, _ = strings.CutPrefix(lines.Text(), "attack server: ")
	}
	history := make(chan int64, 1)
	go func() {
		for lines.Scan() {
			if v, ok := strings.CutPrefix(lines.Text(), "history bytes: "); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				history <- n
				continue
			}
			fmt.Println(lines.Text()) // the child's test output, if any
		}
		exited <- cmd.Wait()
	}()
	if url == "" {
		t.Fatal("the server did not start")
	}
	return &attackServer{url: url, addr: strings.TrimPrefix(url, "http://"), pid: cmd.Process.Pid, stdin: stdin, history: history}
}

// rss returns the server's peak resident memory (VmHWM), in bytes.
func (s *attackServer) rss() (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmHWM")
}

// logRSS logs the server's peak resident memory so far.
func (s *attackServer) logRSS(t *testing.T) {
	if rss, err := s.rss(); err == nil {
		t.Logf("server's peak RSS so far: %d MB", rss>>20)
	}
}

// fds returns the number of the server's open file descriptors.
func (s *attackServer) fds(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", s.pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// fdsBackTo checks that the server let go of the attack's connections: its
// file descriptors return to about what they were before it.
func (s *attackServer) fdsBackTo(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		n := s.fds(t)
		if n <= base+20 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("the server holds %d file descriptors after the attack, %d before", n, base)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// dialMany opens n connections to the server, 32 at a time.
func (s *attackServer) dialMany(t *testing.T, n int) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range 32 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				conns[i], errs[i] = net.DialTimeout("tcp", s.addr, 10*time.Second)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		closeAll(conns)
		t.Fatal(err)
	}
	return conns
}

func closeAll(conns []net.Conn) {
	for _, c := range conns {
		if c != nil {
			_ = c.Close()
		}
	}
}

// onEach runs f on every connection, 64 at a time, and returns how many
// returned nil.
func onEach(conns []net.Conn, f func(int, net.Conn) error) int {
	var ok atomic.Int64
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range 64 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(conns); i = int(next.Add(1) - 1) {
				if f(i, conns[i]) == nil {
					ok.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return int(ok.Load())
}

// expectClosedAfter sends req on c and checks that the answer has the
// status code and comes within 10 s, and that the server then closes c.
func expectClosedAfter(c net.Conn, req, code string) error {
	if _, err := io.WriteString(c, req); err != nil {
		return err
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "HTTP/1.1 "+code+" ") {
		return fmt.Errorf("answer %q", line)
	}
	_, err = io.Copy(io.Discard, br)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return errors.New("the connection stays open")
	}
	return nil
}

// floodReads reads one object with `workers` clients, each on its own
// connection, as fast as they go until ctx is done, and counts the answers
// by status code (-1: a transport error).
func (s *attackServer) floodReads(ctx context.Context, workers int) map[int]int {
	tr := &http.Transport{MaxIdleConnsPerHost: workers}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	var mu sync.Mutex // guards codes
	codes := map[int]int{}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/api/v1/namespaces/default/configmaps/legit", nil)
				req.Header.Set("Authorization", "Bearer "+attackToken)
				code := -1
				if resp, err := client.Do(req); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					code = resp.StatusCode
					if code == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "1" {
						code = -429 // kube-apiserver's answer has Retry-After: 1
					}
				} else if ctx.Err() != nil {
					return
				}
				mu.Lock()
				codes[code]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return codes
}

// doublingPatch sends a JSON patch that adds a list holding a string of
// size bytes, then copies the list into itself `doublings` times.
func (s *attackServer) doublingPatch(t *testing.T, size, doublings int, timeout time.Duration) (int, string) {
	t.Helper()
	ops := []string{`{"op":"add","path":"/x","value":["` + strings.Repeat("y", size) + `"]}`}
	for range doublings {
		ops = append(ops, `{"op":"copy","from":"/x","path":"/x/-"}`)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPatch, s.url+"/api/v1/namespaces/default/configmaps/doubling", strings.NewReader("["+strings.Join(ops, ",")+"]"))
	req.Header.Set("Authorization", "Bearer "+attackToken)
	req.Header.Set("Content-Type", "application/json-patch+json")
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return -1, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// legitClient is the legitimate client: it reads one small object every
// 10 ms while an attack runs, and checks the latencies.
type legitClient struct {
	srv    *attackServer
	client *http.Client
	// acceptTooMany accepts 429 answers (the flood's phase); any other
	// answer than 200 fails the test.
	acceptTooMany bool
}

func newLegitClient(t *testing.T, srv *attackServer) *legitClient {
	tr := &http.Transport{MaxIdleConnsPerHost: 4}
	t.Cleanup(tr.CloseIdleConnections)
	return &legitClient{srv: srv, client: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

// put creates or replaces the ConfigMap name with size bytes of data
// (labelled big=true past 1000 bytes). It may be called from several
// goroutines: it reports with Error.
func (l *legitClient) put(t *testing.T, name string, size int) {
	t.Helper()
	body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `","labels":{"big":"` + strconv.FormatBool(size > 1000) + `"}},"data":{"k":"` + strings.Repeat("z", size) + `"}}`
	code, msg := l.do(http.MethodPut, "/api/v1/namespaces/default/configmaps/"+name, body)
	if code == http.StatusNotFound {
		code, msg = l.do(http.MethodPost, "/api/v1/namespaces/default/configmaps", body)
	}
	if code != http.StatusOK && code != http.StatusCreated {
		t.Errorf("put %s: %d %.200s", name, code, msg)
	}
}

func (l *legitClient) do(method, path, body string) (int, string) {
	req, _ := http.NewRequest(method, l.srv.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+attackToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := l.client.Do(req)
	if err != nil {
		return -1, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// watch watches the ConfigMaps a label selector selects until ctx is done,
// framing every event (the history then counts the frames), and sends how
// many events it got.
func (l *legitClient) watch(ctx context.Context, t *testing.T, selector string) <-chan int {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, l.srv.url+"/api/v1/namespaces/default/configmaps?watch=true&labelSelector="+selector, nil)
	req.Header.Set("Authorization", "Bearer "+attackToken)
	tr := &http.Transport{} // its own: no connection outlives the watch
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err == nil && resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		err = fmt.Errorf("status %s", resp.Status)
	}
	if err != nil {
		tr.CloseIdleConnections()
		t.Fatalf("watch: %v", err)
	}
	out := make(chan int, 1)
	go func() {
		defer tr.CloseIdleConnections()
		defer resp.Body.Close()
		br := bufio.NewReaderSize(resp.Body, 1<<20)
		n := 0
		for {
			if _, err := br.ReadSlice('\n'); err != nil && !errors.Is(err, bufio.ErrBufferFull) {
				break
			} else if err == nil {
				n++
			}
		}
		out <- n
	}()
	return out
}

// during runs attack while the legitimate client reads, and checks that
// every read was answered, within latencyBound at the 99th percentile.
func (l *legitClient) during(t *testing.T, attack func()) {
	t.Helper()
	stop := make(chan struct{})
	type sample struct {
		d    time.Duration
		code int
		err  string
	}
	samples := make(chan []sample, 1)
	go func() {
		var out []sample
		for {
			select {
			case <-stop:
				samples <- out
				return
			case <-time.After(10 * time.Millisecond):
			}
			start := time.Now()
			code, msg := l.do(http.MethodGet, "/api/v1/namespaces/default/configmaps/legit", "")
			s := sample{d: time.Since(start), code: code}
			if code == -1 {
				s.err = msg
			}
			out = append(out, s)
		}
	}()
	attack()
	close(stop)
	got := <-samples
	if len(got) == 0 {
		t.Fatal("the legitimate client sent nothing")
	}
	var ds []time.Duration
	codes := map[int]int{}
	for _, s := range got {
		ds = append(ds, s.d)
		codes[s.code]++
		if s.code != http.StatusOK && !(l.acceptTooMany && s.code == http.StatusTooManyRequests) {
			t.Errorf("the legitimate client got %d %s", s.code, s.err)
		}
	}
	slices.Sort(ds)
	p99 := ds[len(ds)*99/100]
	t.Logf("legitimate client: %d reads, p50 %v, p99 %v, max %v, answers %v", len(ds), ds[len(ds)/2], p99, ds[len(ds)-1], codes)
	if p99 > latencyBound {
		t.Errorf("the legitimate client's p99 latency is %v, over %v", p99, latencyBound)
	}
}

// openFiles returns this process's limit of open files.
func openFiles() (uint64, bool) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, false
	}
	return rl.Cur, true
}
