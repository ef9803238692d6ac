package apiservertest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Target is an API server implementation that integration tests run against.
type Target string

// The targets.
const (
	// Embedded is kloop's embedded API server, a fresh one per test.
	Embedded Target = "embedded"
	// RealServer is kube-apiserver with etcd (built by hack/realk8s.sh), one
	// pair per test binary, each test in its own namespace.
	RealServer Target = "real"
)

// Targets returns the targets integration tests run against: both, or those
// listed in $KLOOP_TEST_TARGETS (comma-separated).
func Targets() []Target {
	all := []Target{Embedded, RealServer}
	v := strings.TrimSpace(os.Getenv(EnvTargets))
	if v == "" {
		return all
	}
	var out []Target
	for _, f := range strings.Split(v, ",") {
		if t := Target(strings.TrimSpace(f)); slices.Contains(all, t) && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// Env is an API server as one test sees it: a client configuration, a
// namespace of the test's own, and a kubeconfig for kubectl. Tests written
// against an Env run unchanged on both targets.
type Env struct {
	// Target says which server this is.
	Target Target
	// Namespace was created for this test. It holds only what every
	// namespace gets from kube-controller-manager's controllers (the
	// embedded server runs their equivalents): the default ServiceAccount
	// and the kube-root-ca.crt ConfigMap, waited for by Start. On the real
	// server it is left behind when the test ends; the server itself goes
	// away with the test binary.
	Namespace string
	// Embedded is the embedded server, for tests of its own knobs; nil when
	// Target is RealServer.
	Embedded *Server

	t    testing.TB
	cfg  *rest.Config
	real *realServer

	mu         sync.Mutex // guards kubeconfig
	kubeconfig string     // path, once written
}

// ForEachTarget runs f as a subtest on every target of Targets(), named
// after the target: "embedded" on a fresh embedded server started with opts,
// "real" on the shared kube-apiserver (opts do not apply to it). The real
// subtest skips, loudly, when the binaries are not built, and fails instead
// when $KLOOP_REQUIRE_REAL_K8S is "1".
func ForEachTarget(t *testing.T, opts Options, f func(t *testing.T, env *Env)) {
	t.Helper()
	for _, target := range Targets() {
		t.Run(string(target), func(t *testing.T) {
			f(t, Start(t, target, opts))
		})
	}
}

// Real returns an Env on the shared real kube-apiserver; see ForEachTarget
// for when it skips.
func Real(t testing.TB) *Env {
	t.Helper()
	return Start(t, RealServer, Options{})
}

// Start returns an Env on the given target: a new embedded server started
// with opts, or the shared real kube-apiserver (started on first use; opts
// are ignored but CRDPaths, whose CRDs are created there unless they exist
// and waited for). Either way the Env has a fresh namespace.
func Start(t testing.TB, target Target, opts Options) *Env {
	t.Helper()
	env := &Env{Target: target, t: t}
	switch target {
	case Embedded:
		env.Embedded = NewServer(t, opts)
		env.cfg = env.Embedded.Config()
	case RealServer:
		srv, err := startShared()
		if err != nil {
			if errors.Is(err, errMissing) && os.Getenv(EnvRequireReal) != "1" {
				t.Skipf("SKIPPED ON THE REAL KUBE-APISERVER: %v", err)
			}
			t.Fatalf("apiservertest: %v", err)
		}
		env.real = srv
		// The server outlives the test: its connections are closed when
		// the test ends (after the test's own cleanups), so that no client
		// goroutine outlives it either (goleak).
		conns := &connTracker{}
		t.Cleanup(conns.closeAll)
		env.cfg = &rest.Config{
			Host:            srv.url,
			BearerToken:     srv.token,
			TLSClientConfig: rest.TLSClientConfig{CAData: srv.caPEM},
			QPS:             -1,
			Dial:            conns.dial,
		}
	default:
		t.Fatalf("apiservertest: unknown target %q", target)
	}
	env.Namespace = namespaceFor(t)
	cs, err := kubernetes.NewForConfig(env.cfg)
	if err != nil {
		t.Fatalf("apiservertest: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if target == RealServer && len(opts.CRDPaths) > 0 {
		if err := installCRDs(ctx, env.cfg, opts.CRDPaths); err != nil {
			t.Fatalf("apiservertest: %v", err)
		}
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: env.Namespace}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("apiservertest: create namespace %s on %s: %v", env.Namespace, target, err)
	}
	if target == RealServer || !opts.DisableControllers {
		if err := WaitForNamespaceDefaults(ctx, env.cfg, env.Namespace); err != nil {
			t.Fatalf("apiservertest: namespace %s on %s: %v", env.Namespace, target, err)
		}
	}
	return env
}

// WaitForNamespaceDefaults waits until the namespace ns holds what
// kube-controller-manager puts in every namespace, asynchronously, once it
// is created — the default ServiceAccount and the kube-root-ca.crt
// ConfigMap — so that a test that lists a namespace's ServiceAccounts or
// ConfigMaps sees the same on both targets whatever the controllers'
// timing. Start waits for them in the Env's namespace (but on an embedded
// server started with Options.DisableControllers, which makes none).
func WaitForNamespaceDefaults(ctx context.Context, cfg *rest.Config, ns string) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for {
		_, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			_, err = cs.CoreV1().ConfigMaps(ns).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		}
		if err == nil {
			return nil
		}
		if !apierrors.IsNotFound(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no default ServiceAccount and kube-root-ca.crt ConfigMap in namespace %s: %w", ns, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Config returns a client configuration for the server (a new copy on each
// call), with no client-side rate limit.
func (e *Env) Config() *rest.Config { return rest.CopyConfig(e.cfg) }

// HTTPClient returns an *http.Client for the server, authenticated as
// Config is, with a transport of its own whose connections are closed when
// the test ends. wrap, if not nil, is put in front of that transport (and
// behind the authentication): the place for a RoundTripper that injects
// faults or cuts watches, the same way on either server.
func (e *Env) HTTPClient(wrap func(http.RoundTripper) http.RoundTripper) *http.Client {
	e.t.Helper()
	cfg := e.Config()
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		e.t.Fatalf("apiservertest: %v", err)
	}
	tr := &http.Transport{TLSClientConfig: tlsCfg, ForceAttemptHTTP2: true, DialContext: cfg.Dial}
	e.t.Cleanup(tr.CloseIdleConnections)
	var base http.RoundTripper = tr
	if wrap != nil {
		base = wrap(tr)
	}
	rt, err := rest.HTTPWrappersForConfig(cfg, base)
	if err != nil {
		e.t.Fatalf("apiservertest: %v", err)
	}
	return &http.Client{Transport: rt}
}

// Kubeconfig writes a kubeconfig for the server into the test's temporary
// directory (once) and returns its path; its context's namespace is the
// test's namespace.
func (e *Env) Kubeconfig() string {
	e.t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.kubeconfig != "" {
		return e.kubeconfig
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kloop"] = &clientcmdapi.Cluster{Server: e.cfg.Host, CertificateAuthorityData: e.cfg.CAData}
	cfg.AuthInfos["kloop"] = &clientcmdapi.AuthInfo{Token: e.cfg.BearerToken}
	cfg.Contexts["kloop"] = &clientcmdapi.Context{Cluster: "kloop", AuthInfo: "kloop", Namespace: e.Namespace}
	cfg.CurrentContext = "kloop"
	path := filepath.Join(e.t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		e.t.Fatalf("apiservertest: %v", err)
	}
	e.kubeconfig = path
	return path
}

// Compact makes every resourceVersion older than the current one too old,
// as an etcd compaction does (on the real server it is one): watches from
// an older resourceVersion, lists at one (resourceVersionMatch=Exact) and
// continue tokens of lists begun before get 410 Gone.
//
// On the real server that holds for what kube-apiserver reads from etcd:
// kinds without a watch cache (core/v1 Events by default). Watches and
// exact lists of the other kinds are served from its watch cache, which
// keeps its own window of recent events whatever etcd compacted; tests
// that need a deterministic 410 on both servers use Events.
func (e *Env) Compact(ctx context.Context) error {
	if e.Embedded != nil {
		e.Embedded.Compact()
		return nil
	}
	return e.real.compact(ctx)
}

// connTracker dials the real server and closes every connection it made
// when the test ends.
type connTracker struct {
	mu     sync.Mutex // guards conns and closed
	conns  []net.Conn
	closed bool
}

func (c *connTracker) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		conn.Close()
		return nil, errors.New("apiservertest: the test has ended")
	}
	c.conns = append(c.conns, conn)
	return conn, nil
}

func (c *connTracker) closeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, conn := range c.conns {
		conn.Close()
	}
	c.conns = nil
}

var notDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// namespaceFor derives a valid, unique namespace name from the test's name.
func namespaceFor(t testing.TB) string {
	base := strings.Trim(notDNS.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	suffix := randomString(5)
	if max := 63 - len(suffix) - 1; len(base) > max {
		base = strings.TrimRight(base[len(base)-max:], "-")
		base = strings.TrimLeft(base, "-")
	}
	if base == "" {
		return "t-" + suffix
	}
	return fmt.Sprintf("%s-%s", base, suffix)
}
