package reflector_test

import (
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/reflector"
)

// hangProxy is an HTTP server in front of a test server that passes the
// reflector's requests through. hang makes a watch stream it forwards go
// silent: from then on it forwards nothing on it, yet keeps the connection
// open — as a stalled proxy or a half-dead connection does — until the
// client closes it.
type hangProxy struct {
	upstream *http.Client // authenticated, to the server
	target   url.URL      // the server: scheme and host
	srv      *httptest.Server
	quit     chan struct{} // closed when the test ends

	mu      sync.Mutex // guards the fields below
	open    map[*hangStream]bool
	pending *hangStream // to hang as soon as a watch stream opens
	watches []string    // the query of each watch request, in order
	lists   int         // list requests
}

// hangStream is one watch stream through the proxy.
type hangStream struct {
	// index is its request in hangProxy.watches; -1 until it opens.
	index int
	hung  chan struct{} // closed when it is hung
	gone  chan struct{} // closed when its handler has returned (the client left)
}

func newHangProxy(t *testing.T, env *apiservertest.Env) *hangProxy {
	t.Helper()
	u, err := url.Parse(env.Config().Host)
	if err != nil {
		t.Fatal(err)
	}
	p := &hangProxy{upstream: env.HTTPClient(nil), target: url.URL{Scheme: u.Scheme, Host: u.Host},
		quit: make(chan struct{}), open: map[*hangStream]bool{}}
	p.srv = httptest.NewServer(p)
	t.Cleanup(func() {
		close(p.quit)
		p.srv.Close()
	})
	return p
}

func (p *hangProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u := p.target
	u.Path, u.RawQuery = r.URL.Path, r.URL.RawQuery
	req, err := http.NewRequestWithContext(r.Context(), r.Method, u.String(), nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	req.Header = r.Header.Clone()
	isWatch := r.URL.Query().Get("watch") == "true"
	var s *hangStream
	p.mu.Lock()
	if isWatch {
		if p.pending != nil {
			// hang asked for the next stream: this one.
			s, p.pending = p.pending, nil
			close(s.hung)
		} else {
			s = &hangStream{hung: make(chan struct{}), gone: make(chan struct{})}
		}
		s.index = len(p.watches)
		p.watches = append(p.watches, r.URL.RawQuery)
		p.open[s] = true
	} else {
		p.lists++
	}
	p.mu.Unlock()
	if s != nil {
		defer func() {
			p.mu.Lock()
			delete(p.open, s)
			p.mu.Unlock()
			close(s.gone)
		}()
	}
	resp, err := p.upstream.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	maps.Copy(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	if s == nil {
		io.Copy(w, resp.Body)
		return
	}
	w.(http.Flusher).Flush()
	// Read on a goroutine of its own, so that a hang takes effect at once,
	// not after the next read from the server.
	chunks := make(chan []byte)
	go func() {
		defer close(chunks)
		for {
			buf := make([]byte, 32<<10)
			n, err := resp.Body.Read(buf)
			if n > 0 {
				select {
				case chunks <- buf[:n]:
				case <-r.Context().Done():
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	for {
		select {
		case <-s.hung:
			// Silent, the connection open, until the client leaves.
			select {
			case <-r.Context().Done():
			case <-p.quit:
			}
			return
		case c, ok := <-chunks:
			if !ok {
				return // the server ended the watch
			}
			select {
			case <-s.hung:
				continue // hung meanwhile: this chunk is not sent
			default:
			}
			if _, err := w.Write(c); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		case <-r.Context().Done():
			return
		}
	}
}

// hang makes the open watch stream silent, or the next one to open if
// none is open, and returns it.
func (p *hangProxy) hang() *hangStream {
	p.mu.Lock()
	defer p.mu.Unlock()
	for s := range p.open {
		select {
		case <-s.hung:
			continue
		default:
		}
		close(s.hung)
		return s
	}
	p.pending = &hangStream{index: -1, hung: make(chan struct{}), gone: make(chan struct{})}
	return p.pending
}

func (p *hangProxy) state() (watches []string, lists int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.watches...), p.lists
}

// A watch stream that goes silent — no event, no bookmark, the connection
// open — is stopped once the reflector has waited on it for its
// timeoutSeconds plus WatchSilenceMargin; a new watch from the position
// the reflector had reached brings what was created meanwhile: no relist,
// no gap. Without the check the reflector would wait on the stream forever.
func TestServerSilentWatch(t *testing.T) {
	for _, mode := range []string{"watch-list", "list+watch"} {
		t.Run(mode, func(t *testing.T) {
			apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
				tg := newTarget(t, env)
				p := newHangProxy(t, env)
				ctx := t.Context()
				cms := tg.cs.CoreV1().ConfigMaps(env.Namespace)
				if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Data: map[string]string{"v": "1"}}, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				lw, err := reflector.NewRESTListerWatcher[*corev1.ConfigMap](&rest.Config{Host: p.srv.URL}, configMapsGVR, env.Namespace,
					reflector.RESTOptions[*corev1.ConfigMap]{HTTPClient: p.srv.Client()})
				if err != nil {
					t.Fatal(err)
				}
				st := newMapStore(func(c *corev1.ConfigMap) string { return c.Data["v"] })
				m := reflector.NewMetricsRec()
				// Watches ask timeoutSeconds in [2, 4) and are given up after
				// 1 s more of silence.
				r, err := reflector.New[*corev1.ConfigMap](lw, st, reflector.Options{DisableWatchList: mode == "list+watch",
					MinWatchTimeout: 2 * time.Second, WatchSilenceMargin: time.Second,
					InitialBackoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, Metrics: m})
				if err != nil {
					t.Fatal(err)
				}
				runUntilEnd(t, r)
				st.waitEqual(t, map[string]string{"a": "1"})
				for deadline := time.Now().Add(10 * time.Second); !r.HasSynced(); time.Sleep(time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatal("not synced after the Replace")
					}
				}

				hung := p.hang()
				pos := r.LastSyncResourceVersion()
				_, lists := p.state()
				start := time.Now()
				if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Data: map[string]string{"v": "1"}}, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				st.waitEqual(t, map[string]string{"a": "1", "b": "1"})
				t.Logf("the object created after the hang reached the store after %v", time.Since(start))
				select {
				case <-hung.gone:
				case <-time.After(5 * time.Second):
					t.Fatal("the silent watch's connection is still open")
				}

				watches, nowLists := p.state()
				if nowLists != lists {
					t.Errorf("%d list requests after the hang, want none", nowLists-lists)
				}
				if hung.index < 0 || hung.index+1 >= len(watches) {
					t.Fatalf("hung watch %d of %q: no watch after it", hung.index, watches)
				}
				for _, q := range watches[hung.index+1:] {
					if strings.Contains(q, "sendInitialEvents") {
						t.Errorf("streaming list %q after the hang, want a watch", q)
					}
				}
				if next := watches[hung.index+1]; !strings.Contains(next+"&", "resourceVersion="+pos+"&") {
					t.Errorf("watch after the silent one %q, want resourceVersion=%s (the position at the hang)", next, pos)
				}
				errs := m.WatchErrors()
				if !slices.ContainsFunc(errs, func(err error) bool { return errors.Is(err, reflector.ErrSilentWatch) }) {
					t.Errorf("no watch reported with ErrSilentWatch (errors %v)", errs)
				}
			})
		})
	}
}
