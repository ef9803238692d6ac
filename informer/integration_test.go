package informer

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/reflector"
)

// cuttable serves the embedded server's handler over plain HTTP and can cut
// every open watch and refuse new ones, as a network partition would.
type cuttable struct {
	h http.Handler

	mu      sync.Mutex // guards blocked, cancels, accepts
	blocked bool
	accepts []string // Accept headers seen
	cancels map[int]context.CancelFunc
	next    int
}

func (c *cuttable) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	isWatch := r.URL.Query().Get("watch") == "true"
	c.mu.Lock()
	c.accepts = append(c.accepts, r.Header.Get("Accept"))
	if c.blocked && isWatch {
		c.mu.Unlock()
		http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","code":503,"reason":"ServiceUnavailable","message":"partitioned"}`, http.StatusServiceUnavailable)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	id := c.next
	c.next++
	c.cancels[id] = cancel
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.cancels, id)
		c.mu.Unlock()
		cancel()
	}()
	c.h.ServeHTTP(w, r.WithContext(ctx))
}

// partition cuts the open watches and refuses new ones until heal.
func (c *cuttable) partition() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.blocked = true
	for _, cancel := range c.cancels {
		cancel()
	}
}

func (c *cuttable) heal() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.blocked = false
}

type testEnv struct {
	cfg    *rest.Config
	client *http.Client
	cs     *kubernetes.Clientset
	net    *cuttable
}

// newEnv starts an embedded API server behind a cuttable link, with an
// HTTP client whose connections are closed when the test ends.
func newEnv(t *testing.T, opts apiservertest.Options) *testEnv {
	t.Helper()
	srv := apiservertest.NewServer(t, opts)
	c := &cuttable{h: srv.Handler(), cancels: map[int]context.CancelFunc{}}
	hs := httptest.NewServer(c)
	t.Cleanup(func() {
		c.partition()
		hs.Close()
	})
	cfg := &rest.Config{Host: hs.URL, BearerToken: srv.Token(), QPS: -1}
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	rt, err := rest.HTTPWrappersForConfig(cfg, tr)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: rt}
	cs, err := kubernetes.NewForConfigAndClient(cfg, client)
	if err != nil {
		t.Fatal(err)
	}
	return &testEnv{cfg: cfg, client: client, cs: cs, net: c}
}

func (e *testEnv) factory(t *testing.T, opts FactoryOptions) *Factory {
	t.Helper()
	opts.HTTPClient = e.client
	if opts.Reflector.InitialBackoff == 0 {
		opts.Reflector.InitialBackoff = 5 * time.Millisecond
		opts.Reflector.MaxBackoff = 20 * time.Millisecond
	}
	f, err := NewFactory(e.cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// startFactory runs f until the test ends.
func startFactory(t *testing.T, f *Factory) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	})
}

func (e *testEnv) createPod(t *testing.T, ctx context.Context, ns, name string, labels map[string]string) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
	}
	out, err := e.cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// waitUntil polls cond every few milliseconds until it holds.
func waitUntil(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(2 * time.Millisecond):
		}
	}
}

func TestIntegrationSyncUpdateDelete(t *testing.T) {
	for _, tc := range []struct {
		name      string
		watchList bool
	}{{"list then watch", false}, {"streaming list", true}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := timeout(t)
			env := newEnv(t, apiservertest.Options{})
			env.createPod(t, ctx, "default", "a", map[string]string{"app": "web"})
			env.createPod(t, ctx, "default", "b", map[string]string{"app": "db"})
			env.createPod(t, ctx, "kube-system", "c", map[string]string{"app": "web"})

			f := env.factory(t, FactoryOptions{Reflector: reflector.Options{DisableWatchList: !tc.watchList}})
			pods, err := InformerFor[*corev1.Pod](f, Scope{Namespace: "default"})
			if err != nil {
				t.Fatal(err)
			}
			same, err := InformerFor[*corev1.Pod](f, Scope{Namespace: "default"})
			if err != nil {
				t.Fatal(err)
			}
			web, err := InformerFor[*corev1.Pod](f, Scope{LabelSelector: "app=web"})
			if err != nil {
				t.Fatal(err)
			}
			if same.s != pods.s || web.s == pods.s {
				t.Fatal("the factory does not share exactly one informer per scope")
			}
			rec := newRecorder()
			reg, err := pods.AddHandler(rec, HandlerOptions{})
			if err != nil {
				t.Fatal(err)
			}
			startFactory(t, f)
			if err := f.WaitForCacheSync(ctx); err != nil {
				t.Fatal(err)
			}
			waitSynced(t, ctx, reg)
			if pods.Len() != 2 || web.Len() != 2 {
				t.Fatalf("default: %d pods, app=web: %d pods", pods.Len(), web.Len())
			}
			for _, p := range pods.List() {
				if p.ManagedFields != nil {
					t.Fatal("managedFields cached")
				}
			}

			a, _ := pods.Get("default", "a")
			a = a.DeepCopy()
			a.Labels["version"] = "2"
			if _, err := env.cs.CoreV1().Pods("default").Update(ctx, a, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := env.cs.CoreV1().Pods("default").Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			got := rec.waitFor(t, ctx, 4)
			slices.Sort(got[:2])
			prefixes := []string{"add a@", "add b@", "update a@", "delete default/b@"}
			if len(got) != 4 || !slices.EqualFunc(got, prefixes, strings.HasPrefix) {
				t.Fatalf("events %q", got)
			}
			waitUntil(t, ctx, "the update in the label-scoped informer", func() bool {
				p, ok := web.Get("default", "a")
				return ok && p.Labels["version"] == "2"
			})

			// Handlers added late, from another caller of the factory: each
			// gets a synthetic add of what is cached, then the changes.
			late := make([]*recorder, 5)
			for i := range late {
				late[i] = newRecorder()
				reg, err := same.AddHandler(late[i], HandlerOptions{})
				if err != nil {
					t.Fatal(err)
				}
				waitSynced(t, ctx, reg)
			}
			env.createPod(t, ctx, "default", "z", nil)
			for _, r := range late {
				got := r.waitFor(t, ctx, 2)
				if !strings.HasPrefix(got[0], "add a@") || !strings.HasSuffix(got[0], "initial=true") || !strings.HasPrefix(got[1], "add z@") {
					t.Fatalf("late handler: %q", got)
				}
			}
		})
	}
}

// The watch is cut for longer than the server keeps history while objects
// are deleted, changed and created: the informer gets 410 Gone, relists,
// and handlers get tombstones with FinalStateUnknown; the cache equals the
// server afterwards.
func TestIntegrationRelistAfterGone(t *testing.T) {
	ctx := timeout(t)
	env := newEnv(t, apiservertest.Options{HistoryEvents: 2})
	for _, n := range []string{"a", "b", "c"} {
		env.createPod(t, ctx, "default", n, nil)
	}
	f := env.factory(t, FactoryOptions{})
	pods, err := InformerFor[*corev1.Pod](f, Scope{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	reg, err := pods.AddHandler(rec, HandlerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	startFactory(t, f)
	waitSynced(t, ctx, reg)
	rec.waitFor(t, ctx, 3)
	lastB, _ := pods.Get("default", "b")

	env.net.partition()
	pc := env.cs.CoreV1().Pods("default")
	if err := pc.Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c, err := pc.Get(ctx, "c", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.Labels = map[string]string{"changed": "yes"}
	if _, err := pc.Update(ctx, c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	env.createPod(t, ctx, "default", "d", nil)
	env.net.heal()

	got := rec.waitFor(t, ctx, 7)
	var tomb []string
	for _, ev := range got[3:] {
		if ev[:6] == "delete" {
			tomb = append(tomb, ev)
		}
	}
	if want := fmt.Sprintf("delete default/b@%s unknown=true", lastB.ResourceVersion); !slices.Equal(tomb, []string{want}) {
		t.Fatalf("tombstones %q, want %q (all: %q)", tomb, want, got)
	}
	list, err := pc.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, p := range list.Items {
		want[p.Name] = p.ResourceVersion
	}
	have := map[string]string{}
	for _, p := range pods.List() {
		have[p.Name] = p.ResourceVersion
	}
	if fmt.Sprint(have) != fmt.Sprint(want) {
		t.Fatalf("cache %v, server %v", have, want)
	}
}

func TestIntegrationUnstructuredAndMetadata(t *testing.T) {
	ctx := timeout(t)
	env := newEnv(t, apiservertest.Options{})
	env.createPod(t, ctx, "default", "a", map[string]string{"app": "web"})
	f := env.factory(t, FactoryOptions{})
	gvk := corev1.SchemeGroupVersion.WithKind("Pod")
	u, err := f.Unstructured(gvk, Scope{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := f.Metadata(gvk, Scope{})
	if err != nil {
		t.Fatal(err)
	}
	typed, err := InformerFor[*corev1.Pod](f, Scope{})
	if err != nil {
		t.Fatal(err)
	}
	if u.s == m.s || u.s == typed.s || m.s == typed.s {
		t.Fatal("forms share an informer")
	}
	startFactory(t, f)
	if err := f.WaitForCacheSync(ctx); err != nil {
		t.Fatal(err)
	}
	uo, ok := u.Get("default", "a")
	if !ok || uo.GetKind() != "Pod" || uo.GetLabels()["app"] != "web" {
		t.Fatalf("unstructured: %v %v", uo, ok)
	}
	if _, found, _ := unstructured.NestedSlice(uo.Object, "spec", "containers"); !found {
		t.Fatal("unstructured pod without spec.containers")
	}
	if uo.GetManagedFields() != nil {
		t.Fatal("managedFields cached")
	}
	env.net.mu.Lock()
	metaAsked := slices.ContainsFunc(env.net.accepts, func(a string) bool { return strings.Contains(a, "as=PartialObjectMetadata") })
	env.net.mu.Unlock()
	if !metaAsked {
		t.Fatal("the metadata informer never asked for PartialObjectMetadata")
	}
	mo, ok := m.Get("default", "a")
	if !ok || mo.Labels["app"] != "web" || mo.Kind != "Pod" || mo.APIVersion != "v1" {
		t.Fatalf("metadata: %+v %v", mo, ok)
	}
	// Created after Start: runs at once.
	env.createPod(t, ctx, "kube-system", "b", nil)
	late, err := f.Metadata(gvk, Scope{Namespace: "kube-system"})
	if err != nil {
		t.Fatal(err)
	}
	if err := late.WaitForCacheSync(ctx); err != nil {
		t.Fatal(err)
	}
	if late.Len() != 1 {
		t.Fatalf("late informer has %d objects", late.Len())
	}
	waitUntil(t, ctx, "the new pod in the all-namespaces metadata informer", func() bool { return m.Len() == 2 })
}

func TestFactoryErrors(t *testing.T) {
	env := newEnv(t, apiservertest.Options{})
	f := env.factory(t, FactoryOptions{})
	for name, fn := range map[string]func() error{
		"namespace on a cluster-scoped kind": func() error {
			_, err := InformerFor[*corev1.Namespace](f, Scope{Namespace: "default"})
			return err
		},
		"bad label selector": func() error {
			_, err := InformerFor[*corev1.Pod](f, Scope{LabelSelector: "a=(b"})
			return err
		},
		"unknown kind": func() error {
			_, err := f.Unstructured(corev1.SchemeGroupVersion.WithKind("Nope"), Scope{})
			return err
		},
		"unstructured through InformerFor": func() error {
			_, err := InformerFor[*unstructured.Unstructured](f, Scope{})
			return err
		},
		"type not in scheme": func() error {
			_, err := InformerFor[*notRegistered](f, Scope{})
			return err
		},
	} {
		if err := fn(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := NewFactory(nil, FactoryOptions{}); err == nil {
		t.Error("nil config accepted")
	}
}

// notRegistered is an object type that no scheme knows.
type notRegistered struct{ corev1.Pod }

// An explicit mapper (no discovery) is enough for the factory.
func TestIntegrationExplicitMapper(t *testing.T) {
	ctx := timeout(t)
	env := newEnv(t, apiservertest.Options{})
	if _, err := env.cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	f := env.factory(t, FactoryOptions{Mapper: m})
	cms, err := InformerFor[*corev1.ConfigMap](f, Scope{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := InformerFor[*corev1.Secret](f, Scope{}); !meta.IsNoMatchError(err) {
		t.Fatalf("a kind the mapper does not know: %v", err)
	}
	startFactory(t, f)
	if err := f.WaitForCacheSync(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := cms.Get("default", "c"); !ok {
		t.Fatal("configmap not cached")
	}
}
