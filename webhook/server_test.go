package webhook_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"kloop.dev/kloop/internal/selfsigned"
	"kloop.dev/kloop/internal/testutil"
	"kloop.dev/kloop/webhook"
	"kloop.dev/kloop/webhook/admission"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var discard = slog.New(slog.DiscardHandler)

// start runs srv until the test ends.
func start(t *testing.T, srv *webhook.Server) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	})
	select {
	case <-srv.Started():
	case err := <-done:
		t.Fatalf("Start: %v", err)
	}
}

// client returns an HTTPS client trusting caPEM.
func client(t *testing.T, caPEM []byte) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("no certificate in the CA bundle")
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func post(t *testing.T, c *http.Client, url, body string) (int, string) {
	t.Helper()
	resp, err := c.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

const reviewBody = `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1","operation":"CREATE"}}`

func TestServer(t *testing.T) {
	var stats testutil.Provider[webhook.Stats]
	srv, err := webhook.New(webhook.Options{BindAddress: "127.0.0.1:0", Logger: discard, Metrics: &stats})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	wh, _ := admission.New(admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
		if req.UID == "slow" {
			<-release
		}
		return admission.Denied("no").WithWarnings("careful")
	}), admission.Options{Logger: discard})
	if err := srv.Register("/validate-x", wh); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "validate", "/a b", "/a//b", "/a/"} {
		if err := srv.Register(bad, wh); err == nil {
			t.Errorf("Register(%q): no error", bad)
		}
	}
	if err := srv.Register("/validate-x", wh); err == nil {
		t.Error("a path registered twice: no error")
	}
	if err := srv.ReadyCheck(httptestRequest(t)); err == nil {
		t.Error("ready before Start")
	}
	if srv.URL("/x") != "" || srv.CABundle() != nil {
		t.Error("URL or CABundle before Start")
	}
	start(t, srv)
	if err := srv.Start(context.Background()); err == nil {
		t.Error("a second Start: no error")
	}
	if err := srv.ReadyCheck(httptestRequest(t)); err != nil {
		t.Errorf("ReadyCheck: %v", err)
	}
	c := client(t, srv.CABundle())
	code, body := post(t, c, srv.URL("/validate-x"), reviewBody)
	if code != 200 || !strings.Contains(body, `"allowed":false`) || !strings.Contains(body, `"warnings":["careful"]`) || !strings.Contains(body, `"uid":"u1"`) {
		t.Fatalf("HTTP %d %s", code, body)
	}
	// A path added after Start is served.
	if err := srv.Register("/late", wh); err != nil {
		t.Fatal(err)
	}
	if code, _ := post(t, c, srv.URL("/late"), reviewBody); code != 200 {
		t.Fatalf("late path: HTTP %d", code)
	}
	if code, _ := post(t, c, srv.URL("/nothing"), reviewBody); code != 404 {
		t.Fatalf("unknown path: HTTP %d", code)
	}
	// In flight, then counted.
	done := make(chan struct{})
	go func() {
		defer close(done)
		post(t, c, srv.URL("/validate-x"), strings.Replace(reviewBody, "u1", "slow", 1))
	}()
	testutil.Eventually(t, "a request in flight", func() bool { s, _ := stats.Read("/validate-x"); return s.InFlight == 1 })
	close(release)
	<-done
	s, ok := stats.Read("/validate-x")
	if !ok || s.InFlight != 0 || s.Requests[200] != 2 || s.Requests[500] != 0 || s.Latency.Count != 2 || s.Latency.Sum <= 0 {
		t.Fatalf("stats %+v", s)
	}
	if got := stats.Names(); len(got) != 2 || got[0] != "/late" || got[1] != "/validate-x" {
		t.Fatalf("registered %v", got)
	}
}

func httptestRequest(t *testing.T) *http.Request {
	r, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "/readyz", nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// writePair writes a new self-signed pair into dir and returns its CA PEM.
func writePair(t *testing.T, dir string) []byte {
	t.Helper()
	cert, certPEM, err := selfsigned.New(time.Now(), "webhook-test")
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalECPrivateKey(cert.PrivateKey.(*ecdsa.PrivateKey))
	// Written beside and renamed over, as a Secret volume's update is atomic.
	for name, data := range map[string][]byte{"tls.crt": certPEM, "tls.key": pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})} {
		tmp := filepath.Join(dir, "."+name)
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return certPEM
}

func TestServerCertDir(t *testing.T) {
	dir := t.TempDir()
	missing, err := webhook.New(webhook.Options{BindAddress: "127.0.0.1:0", CertDir: dir, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	if err := missing.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("Start without the files: %v", err)
	}
	first := writePair(t, dir)
	srv, err := webhook.New(webhook.Options{BindAddress: "127.0.0.1:0", CertDir: dir, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	wh, _ := admission.New(admission.HandlerFunc(func(context.Context, admission.Request) admission.Response { return admission.Allowed("") }),
		admission.Options{Logger: discard})
	_ = srv.Register("/a", wh)
	start(t, srv)
	if srv.CABundle() != nil {
		t.Error("CABundle with a cert dir")
	}
	if code, _ := post(t, client(t, first), srv.URL("/a"), reviewBody); code != 200 {
		t.Fatalf("HTTP %d", code)
	}
	// Rotated: a new connection is served the new certificate.
	second := writePair(t, dir)
	if code, _ := post(t, client(t, second), srv.URL("/a"), reviewBody); code != 200 {
		t.Fatalf("after rotation: HTTP %d", code)
	}
	if _, err := client(t, first).Post(srv.URL("/a"), "application/json", bytes.NewReader([]byte(reviewBody))); err == nil {
		t.Fatal("the first certificate is still served after the rotation")
	}
}

func TestOptions(t *testing.T) {
	for _, o := range []webhook.Options{
		{BindAddress: "nonsense"},
		{CertName: "x"},
		{TLSOptions: []func(*tls.Config){nil}},
		{ShutdownTimeout: -1},
	} {
		if _, err := webhook.New(o); err == nil {
			t.Errorf("New(%+v): no error", o)
		}
	}
	srv, err := webhook.New(webhook.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if srv.NeedLeaderElection() {
		t.Error("the webhook server needs leadership")
	}
}
