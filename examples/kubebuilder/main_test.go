package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/internal/testutil"
)

// TestMain checks for leaked goroutines, but for the read loops of HTTP/2
// connections to the real kube-apiserver: the example loads its config
// from a kubeconfig file, as a user's program does, and client-go then
// shares its transport process-wide (its TLS transport cache); a
// connection whose last watch ended after the manager closed the idle
// ones stays in that shared pool until it times out.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*clientConnReadLoop).run"))
}

// TestMainAgainstAPIServer runs the ported main.go as an operator runs it:
// flags, a kubeconfig file, secure metrics and probes, against the
// embedded API server (and the real one when its binaries are there).
func TestMainAgainstAPIServer(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		metricsAddr, probeAddr := freeAddr(t), freeAddr(t)
		ctx, cancel := context.WithCancel(t.Context())
		var logs testutil.SyncBuffer
		done := make(chan error, 1)
		go func() {
			done <- run(ctx, []string{"--kubeconfig", env.Kubeconfig(), "--metrics-bind-address", metricsAddr,
				"--health-probe-bind-address", probeAddr}, &logs)
		}()
		defer func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("run: %v\n%s", err, logs.String())
			}
		}()

		// The probes, then the metrics: HTTPS, scrapers authenticated and
		// authorized (the admin is allowed; no token is 401).
		httpc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the self-signed certificate of development
		}}
		defer httpc.CloseIdleConnections()
		testutil.Eventually(t, "the manager is ready", func() error { return wantStatus(httpc, "http://"+probeAddr+"/readyz", "", http.StatusOK) })
		if err := wantStatus(httpc, "https://"+metricsAddr+"/metrics", "", http.StatusUnauthorized); err != nil {
			t.Error(err)
		}
		if err := wantStatus(httpc, "https://"+metricsAddr+"/metrics", env.Config().BearerToken, http.StatusOK); err != nil && env.Config().BearerToken != "" {
			t.Error(err)
		}

		// The controller: a labelled ConfigMap gets its Secret, kept in step.
		cs, err := kubernetes.NewForConfigAndClient(env.Config(), env.HTTPClient(nil))
		if err != nil {
			t.Fatal(err)
		}
		ns := env.Namespace
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns, Labels: map[string]string{mirrorLabel: "true"}},
			Data: map[string]string{"color": "blue"}}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		plain := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: ns}, Data: map[string]string{"a": "b"}}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, plain, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		secretHas := func(want string) func() error {
			return func() error {
				s, err := cs.CoreV1().Secrets(ns).Get(ctx, "app", metav1.GetOptions{})
				if err != nil {
					return err
				}
				if got := string(s.Data["color"]); got != want {
					return fmt.Errorf("Secret's color is %q, want %q", got, want)
				}
				if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].Name != "app" || s.OwnerReferences[0].Controller == nil || !*s.OwnerReferences[0].Controller {
					return fmt.Errorf("Secret's owner references %+v, want the ConfigMap as controller", s.OwnerReferences)
				}
				return nil
			}
		}
		testutil.Eventually(t, "the Secret mirrors the ConfigMap", secretHas("blue"))
		cm.Data["color"] = "green"
		if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, "the Secret follows the ConfigMap", secretHas("green"))
		if _, err := cs.CoreV1().Secrets(ns).Get(ctx, "plain", metav1.GetOptions{}); err == nil {
			t.Error("the unlabelled ConfigMap got a Secret")
		}
	})
}

// TestFlags checks the scaffold's flags and defaults are kubebuilder's.
func TestFlags(t *testing.T) {
	var out bytes.Buffer
	err := run(t.Context(), []string{"--kubeconfig", "/nonexistent/kubeconfig"}, &out)
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("/nonexistent/kubeconfig")) {
		t.Fatalf("run with a missing kubeconfig: %v, want an error naming it", err)
	}
	if err := run(t.Context(), []string{"--no-such-flag"}, &out); err == nil {
		t.Fatal("an unknown flag was accepted")
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func wantStatus(c *http.Client, url, token string, want int) error {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != want {
		return fmt.Errorf("GET %s: %d, want %d", url, resp.StatusCode, want)
	}
	return nil
}
