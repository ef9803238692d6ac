package apiserver

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"kloop.dev/kloop/internal/testutil"
)

// getVersion sends an authenticated GET /version on c and reads the answer.
func getVersion(c net.Conn, br *bufio.Reader) error {
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	defer func() { _ = c.SetDeadline(time.Time{}) }()
	if _, err := io.WriteString(c, "GET /version HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\n\r\n"); err != nil {
		return err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// Past MaxConnections, with every connection busy, a new connection is
// closed at once; once one closes, the next is served.
func TestMaxConnectionsRefusesPastTheBound(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", useTLS), func(t *testing.T) {
			const max = 8
			s, addr := serveLoopback(t, Options{TLS: useTLS, MaxConnections: max})
			var busy []net.Conn
			for range max { // connections that send nothing: not idle, never reclaimed
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				busy = append(busy, c)
			}
			testutil.Eventually(t, "the connections accepted", func() bool { return s.conns.openConns() == max })
			c, err := net.Dial("tcp", addr) // the kernel accepts; the server closes
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if !closedWithin(c, bufio.NewReader(c), 5*time.Second) {
				t.Fatal("a connection past the bound is held open")
			}
			if n := s.conns.openConns(); n != max {
				t.Fatalf("%d connections open", n)
			}
			busy[0].Close()
			testutil.Eventually(t, "a slot freed", func() bool { return s.conns.openConns() < max })
			c = dialRaw(t, s, addr)
			if err := getVersion(c, bufio.NewReader(c)); err != nil {
				t.Fatalf("after a connection closed: %v", err)
			}
		})
	}
}

// At the bound, the connection idle the longest makes room for a new one.
func TestMaxConnectionsReclaimsIdle(t *testing.T) {
	const max = 4
	s, addr := serveLoopback(t, Options{MaxConnections: max})
	var conns []net.Conn
	var readers []*bufio.Reader
	for range max {
		c := dialRaw(t, s, addr)
		br := bufio.NewReader(c)
		if err := getVersion(c, br); err != nil {
			t.Fatal(err)
		}
		conns, readers = append(conns, c), append(readers, br)
		// The server marks a connection idle after its answer is out: wait
		// for it, so that the connections go idle in the order dialled
		// however loaded the machine is.
		idle := len(conns)
		testutil.Eventually(t, "the connection idle", func() bool {
			s.conns.mu.Lock()
			defer s.conns.mu.Unlock()
			return len(s.conns.idle) == idle
		})
		time.Sleep(2 * time.Millisecond) // distinct idle times
	}
	c := dialRaw(t, s, addr)
	if err := getVersion(c, bufio.NewReader(c)); err != nil {
		t.Fatalf("a new connection at the bound: %v", err)
	}
	if !closedWithin(conns[0], readers[0], 5*time.Second) {
		t.Fatal("the connection idle the longest is still open")
	}
	for i := 1; i < max; i++ {
		if err := getVersion(conns[i], readers[i]); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
	}
}

func TestDefaultMaxConnections(t *testing.T) {
	n := defaultMaxConnections()
	if limit, ok := openFileLimit(); ok && uint64(n) > limit/2 && limit >= 2 {
		t.Fatalf("default %d with an open-file limit of %d", n, limit)
	}
	if n < 1 || n > 4096 {
		t.Fatalf("default %d", n)
	}
	var o Options
	o.setDefaults()
	if o.MaxConnections != n {
		t.Fatalf("Options default %d, want %d", o.MaxConnections, n)
	}
}
