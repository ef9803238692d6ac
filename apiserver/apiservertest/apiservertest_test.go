package apiservertest_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"kloop.dev/kloop/apiserver/apiservertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestNewServer(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts apiservertest.Options
	}{
		{"defaults", apiservertest.Options{}},
		{"fixed token", apiservertest.Options{Token: "secret"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := apiservertest.NewServer(t, tc.opts)
			// The kubeconfig works as is.
			cfg, err := clientcmd.BuildConfigFromFlags("", srv.Kubeconfig())
			if err != nil {
				t.Fatal(err)
			}
			cs, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			nss, err := cs.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(nss.Items) != 4 {
				t.Fatalf("%d namespaces, want 4", len(nss.Items))
			}
			// Without the token: 401.
			anon := srv.Config()
			anon.BearerToken = ""
			acs, err := kubernetes.NewForConfig(anon)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := acs.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{}); err == nil || !isUnauthorized(err) {
				t.Fatalf("anonymous list: %v", err)
			}
		})
	}
}

func isUnauthorized(err error) bool {
	return err != nil && (fmt.Sprint(err) == "Unauthorized" || fmt.Sprint(err) == "the server has asked for the client to provide credentials")
}

// Every target gives a working client, a fresh namespace of the test's own, a
// kubeconfig whose context is that namespace, and a compaction that makes
// older resourceVersions Gone.
func TestForEachTarget(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		ctx := context.Background()
		if (env.Embedded != nil) != (env.Target == apiservertest.Embedded) {
			t.Fatalf("target %s, embedded server %v", env.Target, env.Embedded)
		}
		kcfg := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
			&clientcmd.ClientConfigLoadingRules{ExplicitPath: env.Kubeconfig()}, nil)
		ns, _, err := kcfg.Namespace()
		if err != nil || ns != env.Namespace {
			t.Fatalf("kubeconfig namespace %q (%v), want %q", ns, err, env.Namespace)
		}
		cfg, err := kcfg.ClientConfig()
		if err != nil {
			t.Fatal(err)
		}
		// The Env's dialer closes the connections when the test ends.
		cfg.Dial = env.Config().Dial
		for name, cfg := range map[string]*rest.Config{"Config": env.Config(), "Kubeconfig": cfg} {
			cs, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			// A fresh namespace holds what kube-controller-manager puts
			// in every one.
			cms, err := cs.CoreV1().ConfigMaps(env.Namespace).List(ctx, metav1.ListOptions{})
			if err != nil || len(cms.Items) != 1 || cms.Items[0].Name != "kube-root-ca.crt" {
				t.Fatalf("%s: list in the fresh namespace: %d items, %v", name, len(cms.Items), err)
			}
			sas, err := cs.CoreV1().ServiceAccounts(env.Namespace).List(ctx, metav1.ListOptions{})
			if err != nil || len(sas.Items) != 1 || sas.Items[0].Name != "default" {
				t.Fatalf("%s: ServiceAccounts of the fresh namespace: %d items, %v", name, len(sas.Items), err)
			}
		}
		// HTTPClient: authenticated, through the wrapper.
		var calls atomic.Int32
		hc := env.HTTPClient(func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				calls.Add(1)
				return rt.RoundTrip(r)
			})
		})
		resp, err := hc.Get(env.Config().Host + "/api/v1/namespaces/" + env.Namespace)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || calls.Load() != 1 {
			t.Fatalf("HTTPClient: GET the namespace: %s, %d calls through the wrapper", resp.Status, calls.Load())
		}
		cs, err := kubernetes.NewForConfig(env.Config())
		if err != nil {
			t.Fatal(err)
		}
		// Events: kube-apiserver has no watch cache for them, so its watches
		// see etcd's compaction directly.
		events := cs.CoreV1().Events(env.Namespace)
		var first string
		for i := range 3 {
			ev := &corev1.Event{
				ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("e%d", i)},
				InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: env.Namespace, Name: "p"},
				Reason:         "Test", Message: "m", Type: corev1.EventTypeNormal,
			}
			out, err := events.Create(ctx, ev, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if first == "" {
				first = out.ResourceVersion
			}
		}
		w, err := events.Watch(ctx, metav1.ListOptions{ResourceVersion: first})
		if err != nil {
			t.Fatalf("watch before compaction: %v", err)
		}
		w.Stop()
		if err := env.Compact(ctx); err != nil {
			t.Fatalf("Compact: %v", err)
		}
		w, err = events.Watch(ctx, metav1.ListOptions{ResourceVersion: first})
		if err == nil {
			ev, ok := <-w.ResultChan()
			w.Stop()
			st, isStatus := ev.Object.(*metav1.Status)
			if !ok || ev.Type != "ERROR" || !isStatus || st.Code != 410 {
				t.Fatalf("watch from %s after compaction: %v %v, want a 410 error event", first, ev.Type, ev.Object)
			}
		} else if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
			t.Fatalf("watch from %s after compaction: %v, want 410", first, err)
		}
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// New needs no testing.TB: its server serves until Close, which stops it,
// removes its kubeconfig and is idempotent.
func TestNewAndClose(t *testing.T) {
	srv, err := apiservertest.New(apiservertest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	path := srv.Kubeconfig()
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("kubeconfig %s still there after Close: %v", path, err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{}); err == nil {
		t.Fatal("the server answered after Close")
	}
	cs.CoreV1().RESTClient().(*rest.RESTClient).Client.CloseIdleConnections()
}

// New reports a server that cannot start instead of failing a test.
func TestNewError(t *testing.T) {
	if _, err := apiservertest.New(apiservertest.Options{Addr: "256.0.0.1:0"}); err == nil {
		t.Fatal("New on an address that cannot be listened on succeeded")
	}
}

// An embedded server without controllers makes no default ServiceAccount
// or kube-root-ca.crt, and Start does not wait for them.
func TestStartWithoutControllers(t *testing.T) {
	env := apiservertest.Start(t, apiservertest.Embedded, apiservertest.Options{DisableControllers: true})
	cs, err := kubernetes.NewForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	cms, err := cs.CoreV1().ConfigMaps(env.Namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil || len(cms.Items) != 0 {
		t.Fatalf("ConfigMaps of a namespace without controllers: %v %v", err, cms.Items)
	}
}
