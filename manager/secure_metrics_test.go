package manager_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/internal/testutil"
	"kloop.dev/kloop/manager"
)

// The Go runtime and process collectors are on the manager's registry by
// default, and off with DisableRuntimeMetrics.
func TestRuntimeMetrics(t *testing.T) {
	srv := apiservertest.NewServer(t, apiservertest.Options{})
	want := []string{"go_goroutines", "go_memstats_alloc_bytes", "go_gc_duration_seconds"}
	if runtime.GOOS == "linux" {
		want = append(want, "process_cpu_seconds_total", "process_resident_memory_bytes")
	}
	for _, tt := range []struct {
		name    string
		disable bool
	}{{"default", false}, {"disabled", true}} {
		t.Run(tt.name, func(t *testing.T) {
			mgr, err := manager.New(srv.Config(), manager.Options{
				MetricsBindAddress:    "127.0.0.1:0",
				DisableRuntimeMetrics: tt.disable,
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := run(t, ctx, mgr)
			defer func() { cancel(); <-done }()
			code, body := get(t, "http://"+mgr.MetricsAddr().String()+"/metrics")
			if code != http.StatusOK {
				t.Fatalf("/metrics: %d %s", code, body)
			}
			for _, name := range want {
				has := strings.Contains(body, "\n"+name+" ") || strings.Contains(body, "\n"+name+"{")
				if has == tt.disable {
					t.Errorf("/metrics has %s: %v, want %v", name, has, !tt.disable)
				}
			}
		})
	}
}

// Scrapers of a secure metrics server authenticate with a bearer token
// (TokenReview) and need "get" on the non-resource URL /metrics
// (SubjectAccessReview), over TLS with a self-signed certificate.
func TestSecureMetricsAuth(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, testSecureMetricsAuth)
}

func testSecureMetricsAuth(t *testing.T, env *apiservertest.Env) {
	ctx := context.Background()
	mgr, err := manager.New(env.Config(), manager.Options{
		MetricsBindAddress:   "127.0.0.1:0",
		MetricsSecureServing: true,
		MetricsAuth:          true,
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := run(t, runCtx, mgr)
	defer func() { cancel(); <-done }()
	addr := mgr.MetricsAddr().String()

	// The certificate is self-signed, for 127.0.0.1: trusting it alone
	// verifies the connection.
	cert := peerCert(t, addr, nil)
	if err := cert.CheckSignatureFrom(cert); err != nil {
		t.Fatalf("the certificate is not self-signed: %v", err)
	}
	if err := cert.VerifyHostname("127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	scrape := func(path, token string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ProtoMajor != 2 {
			t.Errorf("GET %s over %s, want HTTP/2", path, resp.Proto)
		}
		return resp.StatusCode, string(b)
	}

	// Plain HTTP is not served.
	if code, body := get(t, "http://"+addr+"/metrics"); code == http.StatusOK {
		t.Fatalf("plain HTTP scrape: %d %s", code, body)
	}
	// No token, or one the API server does not know: 401.
	for _, token := range []string{"", "not-a-token"} {
		if code, body := scrape("/metrics", token); code != http.StatusUnauthorized {
			t.Errorf("scrape with token %q: %d %s, want 401", token, code, body)
		}
	}

	// A ServiceAccount without the permission: 403.
	denied := env.ServiceAccountConfig(env.Namespace, "no-metrics")
	if code, body := scrape("/metrics", denied.BearerToken); code != http.StatusForbidden {
		t.Errorf("scrape of a ServiceAccount without the role: %d %s, want 403", code, body)
	} else if !strings.Contains(body, "system:serviceaccount:"+env.Namespace+":no-metrics") {
		t.Errorf("403 does not name the user: %s", body)
	}

	// A ServiceAccount bound to a metrics-reader role: 200.
	reader := env.ServiceAccountConfig(env.Namespace, "metrics-reader")
	bindMetricsReader(t, env, "metrics-reader")
	if code, body := scrape("/metrics", reader.BearerToken); code != http.StatusOK {
		t.Fatalf("scrape of the metrics reader: %d %s", code, body)
	} else if !strings.Contains(body, "go_goroutines") {
		t.Errorf("/metrics lacks go_goroutines")
	}
	// Again: from the caches, still allowed.
	if code, body := scrape("/metrics", reader.BearerToken); code != http.StatusOK {
		t.Fatalf("second scrape of the metrics reader: %d %s", code, body)
	}
	// The role names /metrics only: another path is refused, not 404.
	if code, body := scrape("/other", reader.BearerToken); code != http.StatusForbidden {
		t.Errorf("GET /other of the metrics reader: %d %s, want 403", code, body)
	}
}

// bindMetricsReader gives the ServiceAccount sa of env's namespace "get"
// on /metrics, as kubebuilder's metrics-reader ClusterRole, and waits until
// the API server applies it.
func bindMetricsReader(t *testing.T, env *apiservertest.Env, sa string) {
	t.Helper()
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	name := env.Namespace + "-metrics-reader" // cluster-scoped: shared by the real server's tests
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: env.Namespace, Name: sa}},
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	// kube-apiserver's RBAC follows its objects a moment later: ask as the
	// ServiceAccount before the scrape, whose denial would be cached.
	saCS, err := kubernetes.NewForConfig(env.ServiceAccountConfig(env.Namespace, sa))
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the metrics reader's binding applies", func() error {
		r, err := saCS.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if !r.Status.Allowed {
			return errors.New("not allowed yet")
		}
		return nil
	})
}

// A manager whose own identity may not create TokenReviews answers 500,
// and never serves the metrics.
func TestSecureMetricsReviewsFail(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		mgr, err := manager.New(env.ServiceAccountConfig(env.Namespace, "powerless"), manager.Options{
			MetricsBindAddress:   "127.0.0.1:0",
			MetricsSecureServing: true,
			MetricsAuth:          true,
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := run(t, ctx, mgr)
		defer func() { cancel(); <-done }()
		tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
		defer tr.CloseIdleConnections()
		req, _ := http.NewRequest(http.MethodGet, "https://"+mgr.MetricsAddr().String()+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+env.Config().BearerToken)
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusInternalServerError || strings.Contains(string(b), "go_goroutines") {
			t.Fatalf("scrape through a manager that cannot review: %d %s, want 500", resp.StatusCode, b)
		}
	})
}

// The certificate of MetricsCertDir is served, and a new one written there
// is served from the next handshake on; a pair that does not load keeps
// the previous one.
func TestMetricsCertRotation(t *testing.T) {
	srv := apiservertest.NewServer(t, apiservertest.Options{})
	dir := t.TempDir()
	first := writeCert(t, dir, "tls.crt", "tls.key")
	mgr, err := manager.New(srv.Config(), manager.Options{
		MetricsBindAddress:   "127.0.0.1:0",
		MetricsSecureServing: true,
		MetricsCertDir:       dir,
		MetricsTLSOptions: []func(*tls.Config){func(c *tls.Config) {
			c.NextProtos = []string{"http/1.1"} // kubebuilder's default: no HTTP/2
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := run(t, ctx, mgr)
	defer func() { cancel(); <-done }()
	addr := mgr.MetricsAddr().String()
	serial := func() *big.Int {
		t.Helper()
		return peerCert(t, addr, []string{"h2", "http/1.1"}).SerialNumber
	}
	if got := serial(); got.Cmp(first.SerialNumber) != 0 {
		t.Fatalf("serving serial %v, want %v", got, first.SerialNumber)
	}
	// Rotated in place: the next handshake sees the new certificate.
	second := writeCert(t, dir, "tls.crt", "tls.key")
	if got := serial(); got.Cmp(second.SerialNumber) != 0 {
		t.Fatalf("after rotation: serving serial %v, want %v", got, second.SerialNumber)
	}
	// Rotated by renaming new files over the old ones, as atomic writers do.
	staged := t.TempDir()
	third := writeCert(t, staged, "tls.crt", "tls.key")
	for _, f := range []string{"tls.key", "tls.crt"} {
		if err := os.Rename(filepath.Join(staged, f), filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	if got := serial(); got.Cmp(third.SerialNumber) != 0 {
		t.Fatalf("after renames: serving serial %v, want %v", got, third.SerialNumber)
	}
	// Half a rotation (a key that does not match) and a missing key keep
	// the last good pair.
	writeCert(t, staged, "tls.crt", "tls.key")
	if err := os.Rename(filepath.Join(staged, "tls.crt"), filepath.Join(dir, "tls.crt")); err != nil {
		t.Fatal(err)
	}
	if got := serial(); got.Cmp(third.SerialNumber) != 0 {
		t.Fatalf("with a mismatched key: serving serial %v, want %v", got, third.SerialNumber)
	}
	if err := os.Remove(filepath.Join(dir, "tls.key")); err != nil {
		t.Fatal(err)
	}
	if got := serial(); got.Cmp(third.SerialNumber) != 0 {
		t.Fatalf("without a key: serving serial %v, want %v", got, third.SerialNumber)
	}
	// MetricsTLSOptions applied: HTTP/1.1 only.
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2", "http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	if p := conn.ConnectionState().NegotiatedProtocol; p != "http/1.1" {
		t.Errorf("negotiated %q, want http/1.1", p)
	}
	conn.Close()
}

// A cert dir without a loadable pair fails Start, before anything runs;
// options that need MetricsSecureServing are refused without it.
func TestSecureMetricsOptions(t *testing.T) {
	srv := apiservertest.NewServer(t, apiservertest.Options{})
	dir := t.TempDir()
	mgr, err := manager.New(srv.Config(), manager.Options{
		MetricsBindAddress:   "127.0.0.1:0",
		MetricsSecureServing: true,
		MetricsCertDir:       dir,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "tls.crt") {
		t.Fatalf("Start with an empty cert dir: %v, want an error naming tls.crt", err)
	}
	for _, tt := range []struct {
		name string
		opts manager.Options
		want string
	}{
		{"auth over plain HTTP", manager.Options{MetricsAuth: true}, "MetricsAuth requires MetricsSecureServing"},
		{"cert dir over plain HTTP", manager.Options{MetricsCertDir: dir}, "MetricsCertDir requires MetricsSecureServing"},
		{"TLS options over plain HTTP", manager.Options{MetricsTLSOptions: []func(*tls.Config){func(*tls.Config) {}}}, "MetricsTLSOptions requires"},
		{"cert name without dir", manager.Options{MetricsSecureServing: true, MetricsCertName: "a.crt"}, "require MetricsCertDir"},
		{"nil TLS option", manager.Options{MetricsSecureServing: true, MetricsTLSOptions: []func(*tls.Config){nil}}, "MetricsTLSOptions[0] is nil"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := manager.New(srv.Config(), tt.opts); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New: %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
}

// peerCert returns the certificate the TLS server at addr presents.
func peerCert(t *testing.T, addr string, protos []string) *x509.Certificate {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: protos})
	if err != nil {
		t.Fatalf("TLS handshake with %s: %v", addr, err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0]
}

// writeCert writes a new self-signed certificate for 127.0.0.1 and its key
// into dir.
func writeCert(t *testing.T, dir, certName, keyName string) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "metrics"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, certName), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, keyName), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}
