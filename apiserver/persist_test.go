package apiserver_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"kloop.dev/kloop/apiserver"
	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/apiserver/storage"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/internal/testcrd"
	"kloop.dev/kloop/internal/testutil"
	"kloop.dev/kloop/reflector"
)

// freeAddr returns a loopback address no one listens on, for a server that
// restarts on the same address.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// startOn starts a server on a data directory and address; the caller
// stops it (Close), or the test's end does.
func startOn(t *testing.T, dir, addr string) *apiservertest.Server {
	t.Helper()
	srv, err := apiservertest.New(apiserver.CheckDecodedCache(t, apiserver.Options{DataDir: dir, Addr: addr}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

func stop(t *testing.T, srv *apiservertest.Server) {
	t.Helper()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestDataDirKeepsState restarts a server on its data directory and checks
// that everything it derives from stored objects comes back: a CRD's kind,
// cluster IPs, a terminating namespace, ServiceAccount tokens and RBAC, the
// kubeconfig, and the history for watches.
func TestDataDirKeepsState(t *testing.T) {
	dir, addr := t.TempDir(), freeAddr(t)
	ctx := ctxT(t)
	srv := startOn(t, dir, addr)
	kubeconfig, err := os.ReadFile(srv.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg := srv.Config()
	cs := kubernetes.NewForConfigOrDie(cfg)
	dyn := dynamic.NewForConfigOrDie(cfg)

	if err := testcrd.Install(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	widget := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w"}, "spec": map[string]any{"color": "blue"}}}
	if _, err := dyn.Resource(testcrd.Resource).Namespace("default").Create(ctx, widget, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	svc, err = cs.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A namespace held in Terminating by a ConfigMap's finalizer.
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "doomed"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	held := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}}}
	if _, err := cs.CoreV1().ConfigMaps("doomed").Create(ctx, held, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Namespaces().Delete(ctx, "doomed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// A ServiceAccount allowed to list ConfigMaps, and a token of it.
	if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "bot"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "cm-reader"}, Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list"}}}}
	if _, err := cs.RbacV1().Roles("default").Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bot"}, RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "cm-reader"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "bot", Namespace: "default"}}}
	if _, err := cs.RbacV1().RoleBindings("default").Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, "bot", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cms, err := cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before := cms.ResourceVersion
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-list"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	stop(t, srv)

	srv = startOn(t, dir, addr)
	// The kubeconfig written before the restart still works: same
	// address, token and certificate.
	kcfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs = kubernetes.NewForConfigOrDie(kcfg)
	dyn = dynamic.NewForConfigOrDie(kcfg)
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("the kubeconfig of before the restart: %v", err)
	}
	// The CRD is served again, Established.
	got, err := dyn.Resource(testcrd.Resource).Namespace("default").Get(ctx, "w", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Widget after the restart: %v", err)
	}
	if c, _, _ := unstructured.NestedString(got.Object, "spec", "color"); c != "blue" {
		t.Fatalf("the Widget after the restart: %v", got.Object)
	}
	if _, err := dyn.Resource(testcrd.Resource).Namespace("default").Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w2"}, "spec": map[string]any{"size": "big"}}}, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("a Widget the schema refuses, after the restart: %v, want Invalid", err)
	}
	crd, err := dyn.Resource(crdResource).Get(ctx, "widgets.example.com", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !established(crd) {
		t.Fatalf("the CRD after the restart is not Established: %v", crd.Object["status"])
	}
	resources, err := cs.Discovery().ServerResourcesForGroupVersion("example.com/v1")
	if err != nil || len(resources.APIResources) == 0 {
		t.Fatalf("discovery of example.com/v1 after the restart: %v, %v", resources, err)
	}
	// The Service's cluster IP stays allocated.
	dup := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "dup"}, Spec: corev1.ServiceSpec{ClusterIP: svc.Spec.ClusterIP, Ports: []corev1.ServicePort{{Port: 80}}}}
	if _, err := cs.CoreV1().Services("default").Create(ctx, dup, metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "already allocated") {
		t.Fatalf("a Service with the cluster IP of one created before the restart: %v, want Invalid: already allocated", err)
	}
	// The namespace is still terminating; once its content goes, so does it.
	if _, err := cs.CoreV1().ConfigMaps("doomed").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "new"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("a create in a namespace terminating before the restart: %v, want Forbidden", err)
	}
	if _, err := cs.CoreV1().ConfigMaps("doomed").Patch(ctx, "held", "application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "doomed", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the namespace once its last object went: %v, want NotFound", err)
	}
	// The ServiceAccount token issued before the restart authenticates,
	// and RBAC lets it do what its binding says, no more.
	bot := kubernetes.NewForConfigOrDie(&rest.Config{Host: kcfg.Host, BearerToken: tr.Status.Token, TLSClientConfig: kcfg.TLSClientConfig})
	if _, err := bot.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("the ServiceAccount token of before the restart: %v", err)
	}
	if _, err := bot.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("the ServiceAccount lists Secrets: %v, want Forbidden", err)
	}
	// A watch from a resourceVersion of before the restart gets what
	// followed it.
	w, err := cs.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{ResourceVersion: before})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		if cm, ok := ev.Object.(*corev1.ConfigMap); !ok || ev.Type != "ADDED" || cm.Name != "after-list" {
			t.Fatalf("watch from %s after the restart: %s %#v", before, ev.Type, ev.Object)
		}
	case <-ctx.Done():
		t.Fatal("no event")
	}
	w.Stop()
	// A second server on the directory is refused.
	if _, err := apiserver.New(apiserver.Options{DataDir: dir}); !errors.Is(err, storage.ErrInUse) {
		t.Fatalf("a second server on the data directory: %v, want ErrInUse", err)
	}
	// After a compaction, a watch from before it gets 410 Gone, also
	// after a restart.
	srv.Compact()
	stop(t, srv)
	srv = startOn(t, dir, addr)
	cs = kubernetes.NewForConfigOrDie(srv.Config())
	w, err = cs.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{ResourceVersion: before})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// kube-apiserver answers 200, then an ERROR event with the 410.
	select {
	case ev := <-w.ResultChan():
		if err := apierrors.FromObject(ev.Object); ev.Type != watch.Error || !apierrors.IsResourceExpired(err) {
			t.Fatalf("watch from before a compaction, after a restart: %s %v, want an ERROR event with 410 Expired", ev.Type, err)
		}
	case <-ctx.Done():
		t.Fatal("no event")
	}
}

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

func established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// TestDataDirInformerResumes runs an informer across a restart of its server
// on the same data directory and address: its watch resumes from the last
// resourceVersion it saw, and it sees every write once, in order, with no
// relist.
func TestDataDirInformerResumes(t *testing.T) {
	dir, addr := t.TempDir(), freeAddr(t)
	ctx := ctxT(t)
	srv := startOn(t, dir, addr)
	var lists, watches atomic.Int64
	cfg := srv.Config()
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			// A list, or a streaming list (a watch with initial events).
			q := r.URL.Query()
			if r.Method == http.MethodGet && (q.Get("watch") != "true" || q.Get("sendInitialEvents") == "true") {
				lists.Add(1)
			} else if r.Method == http.MethodGet {
				watches.Add(1)
			}
			return rt.RoundTrip(r)
		})
	}
	cs := kubernetes.NewForConfigOrDie(srv.Config())
	const ns = "default"
	var (
		mu     sync.Mutex
		writes []string // "TYPE name rv", in order
		seen   []string
	)
	write := func(cs kubernetes.Interface, i int) {
		t.Helper()
		name := fmt.Sprintf("cm-%d", i%5)
		cms := cs.CoreV1().ConfigMaps(ns)
		var rv, typ string
		cur, err := cms.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"i": fmt.Sprint(i)}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			rv, typ = cm.ResourceVersion, "ADDED"
		case err != nil:
			t.Fatal(err)
		case i%3 == 0:
			if err := cms.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			// The deletion's revision: the store's next one after the
			// object's, which a list right after shows.
			l, err := cms.List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			rv, typ = l.ResourceVersion, "DELETED"
		default:
			cur.Data = map[string]string{"i": fmt.Sprint(i)}
			cm, err := cms.Update(ctx, cur, metav1.UpdateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			rv, typ = cm.ResourceVersion, "MODIFIED"
		}
		mu.Lock()
		writes = append(writes, typ+" "+name+" "+rv)
		mu.Unlock()
	}
	// The server's root-CA publisher writes default's kube-root-ca.crt
	// soon after the start: once it is there, the ConfigMaps' writes are
	// the test's own.
	testutil.Eventually(t, "default's kube-root-ca.crt", func() error {
		_, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return err
	})
	for i := range 10 {
		write(cs, i)
	}

	lw, err := reflector.NewRESTListerWatcher[*corev1.ConfigMap](cfg, corev1.SchemeGroupVersion.WithResource("configmaps"), ns, reflector.RESTOptions[*corev1.ConfigMap]{})
	if err != nil {
		t.Fatal(err)
	}
	inf, err := informer.New[*corev1.ConfigMap](lw, informer.Options[*corev1.ConfigMap]{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	record := func(typ string, cm *corev1.ConfigMap) {
		mu.Lock()
		seen = append(seen, typ+" "+cm.Name+" "+cm.ResourceVersion)
		mu.Unlock()
	}
	reg, err := inf.AddHandler(informer.HandlerFuncs[*corev1.ConfigMap]{
		AddFunc: func(cm *corev1.ConfigMap, initial bool) {
			if !initial {
				record("ADDED", cm)
			}
		},
		UpdateFunc: func(_, cm *corev1.ConfigMap) { record("MODIFIED", cm) },
		DeleteFunc: func(d informer.Deleted[*corev1.ConfigMap]) {
			if d.FinalStateUnknown {
				t.Errorf("a relist's deletion of %s", d.Key)
			}
			record("DELETED", d.Object)
		},
	}, informer.HandlerOptions{ResyncPeriod: informer.NoResync})
	if err != nil {
		t.Fatal(err)
	}
	infCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- inf.Run(infCtx) }()
	defer func() {
		cancel()
		<-done
	}()
	for !reg.HasSynced() {
		if ctx.Err() != nil {
			t.Fatal("informer not synced")
		}
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	writes = writes[:0]
	mu.Unlock()

	for i := 10; i < 40; i++ {
		write(cs, i)
	}
	stop(t, srv) // the informer's watch breaks, maybe before it got the last events
	srv = startOn(t, dir, addr)
	cs = kubernetes.NewForConfigOrDie(srv.Config())
	for i := 40; i < 70; i++ {
		write(cs, i)
	}

	mu.Lock()
	want := strings.Join(writes, "\n")
	mu.Unlock()
	for {
		mu.Lock()
		got := strings.Join(seen, "\n")
		mu.Unlock()
		if got == want {
			break
		}
		if len(got) >= len(want) || ctx.Err() != nil {
			t.Fatalf("the informer saw:\n%s\nwant the writes:\n%s", got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := lists.Load(); n != 1 {
		t.Fatalf("%d lists, want 1: the informer relisted", n)
	}
	if n := watches.Load(); n < 1 {
		t.Fatalf("%d watches after the list, want at least 1: the one after the restart", n)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestDataDirErrors checks that a data directory New cannot use is an
// error naming what is wrong, and leaves the directory unlocked.
func TestDataDirErrors(t *testing.T) {
	write := func(name, content string) func(dir string) error {
		return func(dir string) error {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o700); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600)
		}
	}
	for _, tc := range []struct {
		name  string
		setup func(dir string) error
		want  string
	}{
		{"store of a newer format", write("store/FORMAT", "kloop-store format 9\n"), "written by a newer kloop: format 9, this kloop reads format 1"},
		{"not a store", write("store/FORMAT", "etcd\n"), "data directory damaged"},
		{"damaged signing key", write("sa-signing.key", "not a key"), "sa-signing.key: not a PEM EC private key"},
		{"damaged serving certificate", func(dir string) error {
			if err := write("serving.crt", "junk")(dir); err != nil {
				return err
			}
			return write("serving.key", "junk")(dir)
		}, "the serving certificate of"},
		{"empty token", write("admin-token", "\n"), "admin-token: not a bearer token"},
		{"a file, not a directory", func(dir string) error { return os.WriteFile(filepath.Join(dir, "store"), nil, 0o600) }, "data directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := tc.setup(dir); err != nil {
				t.Fatal(err)
			}
			for range 2 { // the second time: the lock was released
				_, err := apiserver.New(apiserver.Options{DataDir: dir, TLS: true})
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("New: %v, want an error with %q", err, tc.want)
				}
			}
		})
	}
}

// TestDataDirCRDPaths restarts a server with CRDPaths on its data
// directory: a CRD it holds already is updated to its file (a new field in
// the schema), and its objects stay.
func TestDataDirCRDPaths(t *testing.T) {
	dir, files := t.TempDir(), t.TempDir()
	ctx := ctxT(t)
	group := "datadir.kloop.dev"
	path := writeFile(t, files, "crd.yaml", crdYAML(group, "Pear"))
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "pears"}
	// start serves a server on dir in process; stop closes it.
	start := func() (dyn dynamic.Interface, stop func()) {
		srv, err := apiserver.New(apiserver.CheckDecodedCache(t, apiserver.Options{DataDir: dir, CRDPaths: []string{path}}))
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(srv.Handler())
		return dynamic.NewForConfigOrDie(&rest.Config{Host: hs.URL, BearerToken: srv.Token()}), func() {
			hs.Close()
			if err := srv.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	dyn, stop := start()
	pear := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1", "kind": "Pear",
		"metadata": map[string]any{"name": "p"}, "spec": map[string]any{"size": int64(3), "color": "green"}}}
	got, err := dyn.Resource(gvr).Namespace("default").Create(ctx, pear, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := unstructured.NestedString(got.Object, "spec", "color"); ok {
		t.Fatalf("spec.color kept though the schema has no such field: %v", got.Object)
	}
	stop()

	if err := os.WriteFile(path, []byte(strings.Replace(crdYAML(group, "Pear"), "size: {type: integer}", "size: {type: integer}, color: {type: string}", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	dyn, stop = start()
	defer stop()
	if _, err := dyn.Resource(gvr).Namespace("default").Get(ctx, "p", metav1.GetOptions{}); err != nil {
		t.Fatalf("the Pear after the restart: %v", err)
	}
	pear.SetName("p2")
	got, err = dyn.Resource(gvr).Namespace("default").Create(ctx, pear, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c, _, _ := unstructured.NestedString(got.Object, "spec", "color"); c != "green" {
		t.Fatalf("spec.color after the CRD's update from its file: %v", got.Object)
	}
}
