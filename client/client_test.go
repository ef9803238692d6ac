package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/internal/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func timeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// env is a server under test (either target), a running factory and a
// cached client.
type env struct {
	*apiservertest.Env
	cfg     *rest.Config
	http    *http.Client
	factory *informer.Factory
	c       *Client
}

func newEnv(t *testing.T, ae *apiservertest.Env, opts Options) *env {
	t.Helper()
	return newEnvWith(t, ae, opts, nil)
}

func newEnvScheme(t *testing.T, ae *apiservertest.Env, scheme *runtime.Scheme) *env {
	t.Helper()
	return newEnvWith(t, ae, Options{}, scheme)
}

// newEnvWith builds the factory and client on an HTTP client whose
// connections are closed when the test ends (the real server outlives it).
func newEnvWith(t *testing.T, ae *apiservertest.Env, opts Options, scheme *runtime.Scheme) *env {
	t.Helper()
	cfg := ae.Config()
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// cfg.Dial (real target) closes the connections when the test ends.
	tr := &http.Transport{TLSClientConfig: tlsCfg, ForceAttemptHTTP2: true, DialContext: cfg.Dial}
	t.Cleanup(tr.CloseIdleConnections)
	rt, err := rest.HTTPWrappersForConfig(cfg, tr)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: rt}
	f, err := informer.NewFactory(cfg, informer.FactoryOptions{HTTPClient: hc, Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	opts.Factory = f
	c, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return &env{Env: ae, cfg: cfg, http: hc, factory: f, c: c}
}

// otherNamespace creates a second namespace for the test, unique like the
// first, and returns its name.
func (e *env) otherNamespace(t *testing.T, ctx context.Context) string {
	t.Helper()
	name := e.Namespace
	if len(name) > 61 {
		name = name[len(name)-61:] // keeps the random suffix
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "b-" + name}}
	if err := e.c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func newPod(ns, name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
	}
}

// Cached Get and List (namespace, labels, fields, limit) against the
// uncached reader, and every write sent to the server, followed by the cache.
// On the real server other tests' pods exist in other namespaces: lists
// across namespaces select this test's pods by a label of their own.
func TestCachedReadsDirectWrites(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		ctx := timeout(t)
		e := newEnv(t, ae, Options{FieldOwner: "kloop-test"})
		c := e.c
		ns, ns2 := e.Namespace, e.otherNamespace(t, ctx)
		mine := map[string]string{"kloop-test": ns}
		labels := func(app string) map[string]string { return map[string]string{"app": app, "kloop-test": ns} }
		for _, p := range []*corev1.Pod{
			newPod(ns, "web-1", labels("web")),
			newPod(ns, "web-2", labels("web")),
			newPod(ns, "db-1", labels("db")),
			newPod(ns2, "web-3", labels("web")),
		} {
			if err := c.Create(ctx, p); err != nil {
				t.Fatal(err)
			}
			if p.UID == "" || p.ResourceVersion == "" || p.Kind != "Pod" {
				t.Fatalf("Create did not fill the object: %+v", p.ObjectMeta)
			}
		}
		// Creating the same name again: AlreadyExists, ignorable.
		err := c.Create(ctx, newPod(ns, "web-1", nil))
		if !apierrors.IsAlreadyExists(err) || IgnoreAlreadyExists(err) != nil {
			t.Fatalf("second Create: %v", err)
		}

		var p corev1.Pod
		testutil.Eventually(t, "cached Get", func() error {
			return c.Get(ctx, ObjectKey{Namespace: ns2, Name: "web-3"}, &p)
		})
		if p.Kind != "Pod" || p.APIVersion != "v1" || p.Labels["app"] != "web" {
			t.Fatalf("Get: %+v", p)
		}
		// The caller owns what Get returns.
		p.Labels["app"] = "mutated"
		var again corev1.Pod
		if err := c.Get(ctx, ObjectKey{Namespace: ns2, Name: "web-3"}, &again); err != nil {
			t.Fatal(err)
		}
		if again.Labels["app"] != "web" {
			t.Fatal("mutating a Get result changed the cache")
		}

		err = c.Get(ctx, ObjectKey{Namespace: ns, Name: "nope"}, &p)
		if !apierrors.IsNotFound(err) || IgnoreNotFound(err) != nil {
			t.Fatalf("Get of a missing pod: %v", err)
		}

		all := []string{ns + "/db-1", ns + "/web-1", ns + "/web-2", ns2 + "/web-3"}
		slices.Sort(all)
		for _, tc := range []struct {
			name string
			opts []ListOption
			want []string
		}{
			{"all", []ListOption{MatchingLabels(mine)}, all},
			{"namespace", []ListOption{InNamespace(ns)}, []string{ns + "/db-1", ns + "/web-1", ns + "/web-2"}},
			{"labels", []ListOption{MatchingLabels(labels("web"))}, []string{ns + "/web-1", ns + "/web-2", ns2 + "/web-3"}},
			{"namespace and labels", []ListOption{InNamespace(ns), MatchingLabels(map[string]string{"app": "web"})}, []string{ns + "/web-1", ns + "/web-2"}},
			{"name field", []ListOption{InNamespace(ns), MatchingFields(map[string]string{"metadata.name": "web-2"})}, []string{ns + "/web-2"}},
			{"limit", []ListOption{MatchingLabels(mine), Limit(2)}, all[:2]},
		} {
			t.Run(tc.name, func(t *testing.T) {
				for _, r := range []Reader{c, c.Uncached()} {
					var list corev1.PodList
					if err := r.List(ctx, &list, tc.opts...); err != nil {
						t.Fatal(err)
					}
					var got []string
					for _, p := range list.Items {
						got = append(got, p.Namespace+"/"+p.Name)
					}
					slices.Sort(got)
					if want := slices.Sorted(slices.Values(tc.want)); !slices.Equal(got, want) {
						t.Fatalf("%T: %q, want %q", r, got, tc.want)
					}
				}
			})
		}
		var list corev1.PodList
		err = c.List(ctx, &list, MatchingFields(map[string]string{"spec.nodeName": "n1"}))
		if !apierrors.IsBadRequest(err) {
			t.Fatalf("List on an unindexed field: %v", err)
		}

		// Update from a cached copy; a stale resourceVersion conflicts.
		var web1 corev1.Pod
		if err := c.Get(ctx, ObjectKey{Namespace: ns, Name: "web-1"}, &web1); err != nil {
			t.Fatal(err)
		}
		stale := web1.DeepCopy()
		web1.Labels["version"] = "2"
		if err := c.Update(ctx, &web1); err != nil {
			t.Fatal(err)
		}
		stale.Labels["version"] = "3"
		if err := c.Update(ctx, stale); !apierrors.IsConflict(err) {
			t.Fatalf("Update with a stale resourceVersion: %v", err)
		}
		orig := web1.DeepCopy()
		web1.Labels["patched"] = "yes"
		if err := c.Patch(ctx, &web1, MergeFrom(orig)); err != nil {
			t.Fatal(err)
		}
		if web1.Labels["patched"] != "yes" || web1.Labels["version"] != "2" {
			t.Fatalf("after Patch: %v", web1.Labels)
		}
		web1.Status.Phase = corev1.PodRunning
		if err := c.Status().Update(ctx, &web1); err != nil {
			t.Fatal(err)
		}
		if err := c.Status().Patch(ctx, &web1, RawPatch(types.MergePatchType, []byte(`{"status":{"message":"ok"}}`))); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, "the writes in the cache", func() error {
			var p corev1.Pod
			if err := c.Get(ctx, ObjectKey{Namespace: ns, Name: "web-1"}, &p); err != nil {
				return err
			}
			if p.Labels["patched"] != "yes" || p.Status.Phase != corev1.PodRunning || p.Status.Message != "ok" {
				return fmt.Errorf("cached %v %q %q", p.Labels, p.Status.Phase, p.Status.Message)
			}
			return nil
		})

		if err := c.Delete(ctx, &web1); err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(ctx, &web1); !apierrors.IsNotFound(err) {
			t.Fatalf("second Delete: %v", err)
		}
		// The uncached reader sees the delete at once.
		if err := c.Uncached().Get(ctx, KeyOf(&web1), &p); !apierrors.IsNotFound(err) {
			t.Fatalf("uncached Get after Delete: %v", err)
		}
		testutil.Eventually(t, "the delete in the cache", func() error {
			if err := c.Get(ctx, KeyOf(&web1), &p); !apierrors.IsNotFound(err) {
				return fmt.Errorf("Get: %v", err)
			}
			return nil
		})
	})
}

func TestUnstructuredAndMetadata(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		ctx := timeout(t)
		e := newEnv(t, ae, Options{})
		c := e.c
		ns := e.Namespace
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("ConfigMap")
		u.SetNamespace(ns)
		u.SetName("cfg")
		u.Object["data"] = map[string]any{"k": "v"}
		if err := c.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
		got := &unstructured.Unstructured{}
		got.SetAPIVersion("v1")
		got.SetKind("ConfigMap")
		testutil.Eventually(t, "cached unstructured Get", func() error {
			return c.Get(ctx, ObjectKey{Namespace: ns, Name: "cfg"}, got)
		})
		if v, _, _ := unstructured.NestedString(got.Object, "data", "k"); v != "v" || got.GetKind() != "ConfigMap" {
			t.Fatalf("unstructured Get: %v", got.Object)
		}
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
		testutil.Eventually(t, "cached metadata Get", func() error {
			return c.Get(ctx, ObjectKey{Namespace: ns, Name: "cfg"}, m)
		})
		if m.Name != "cfg" || m.Kind != "ConfigMap" {
			t.Fatalf("metadata Get: %+v", m)
		}
		ml := &metav1.PartialObjectMetadataList{}
		ml.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
		for _, r := range []Reader{c, c.Uncached()} {
			if err := r.List(ctx, ml, InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			// Beside kube-root-ca.crt, which kube-controller-manager (and
			// the embedded server) puts in every namespace.
			if len(ml.Items) != 2 || ml.Items[0].Name != "cfg" || ml.Items[0].Kind != "ConfigMap" {
				t.Fatalf("%T metadata List: %+v", r, ml.Items)
			}
		}
		ul := &unstructured.UnstructuredList{}
		ul.SetAPIVersion("v1")
		ul.SetKind("ConfigMapList")
		if err := c.List(ctx, ul, InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		if len(ul.Items) != 2 || ul.Items[0].GetName() != "cfg" { // and kube-root-ca.crt
			t.Fatalf("unstructured List: %v", ul.Items)
		}
		if err := c.Delete(ctx, u); err != nil {
			t.Fatal(err)
		}
	})
}

func TestUncachedKinds(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		ctx := timeout(t)
		e := newEnv(t, ae, Options{Uncached: []Object{&corev1.Secret{}}})
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: e.Namespace, Name: "s"}, Data: map[string][]byte{"a": []byte("b")}}
		if err := e.c.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
		// Read straight after the write: only an uncached read is sure to see it.
		var got corev1.Secret
		if err := e.c.Get(ctx, KeyOf(s), &got); err != nil {
			t.Fatal(err)
		}
		if string(got.Data["a"]) != "b" {
			t.Fatalf("secret %v", got.Data)
		}
		if n := e.factory.NumInformers(); n != 0 {
			t.Fatalf("the factory runs %d informers for an uncached kind", n)
		}
		var pods corev1.PodList
		if err := e.c.List(ctx, &pods, InNamespace(e.Namespace)); err != nil {
			t.Fatal(err)
		}
		if n := e.factory.NumInformers(); n != 1 {
			t.Fatalf("the factory runs %d informers after a cached List", n)
		}
	})
}

func TestErrors(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		ctx := timeout(t)
		e := newEnv(t, ae, Options{})
		c := e.c
		ns := e.Namespace
		for name, err := range map[string]error{
			"pod without namespace":     c.Create(ctx, newPod("", "x", nil)),
			"update without name":       c.Update(ctx, newPod(ns, "", nil)),
			"unstructured without kind": c.Get(ctx, ObjectKey{Name: "x"}, &unstructured.Unstructured{}),
			"nil patch":                 c.Patch(ctx, newPod(ns, "x", nil), nil),
			"invalid object":            c.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "Not_Valid"}}),
		} {
			if err == nil {
				t.Errorf("%s: no error", name)
			}
		}
		err := c.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "Not_Valid"}})
		var st apierrors.APIStatus
		if !errors.As(err, &st) || st.Status().Code != 422 {
			t.Fatalf("invalid object: %v, want a 422 Status", err)
		}
	})
	if _, err := New(nil, Options{}); err == nil {
		t.Fatal("nil config accepted")
	}
}

func TestIgnore(t *testing.T) {
	gr := corev1.Resource("pods")
	other := errors.New("boom")
	for _, tc := range []struct {
		err                  error
		notFound, alreadyErr error
	}{
		{nil, nil, nil},
		{apierrors.NewNotFound(gr, "a"), nil, apierrors.NewNotFound(gr, "a")},
		{apierrors.NewAlreadyExists(gr, "a"), apierrors.NewAlreadyExists(gr, "a"), nil},
		{other, other, other},
	} {
		if got := IgnoreNotFound(tc.err); fmt.Sprint(got) != fmt.Sprint(tc.notFound) {
			t.Errorf("IgnoreNotFound(%v) = %v", tc.err, got)
		}
		if got := IgnoreAlreadyExists(tc.err); fmt.Sprint(got) != fmt.Sprint(tc.alreadyErr) {
			t.Errorf("IgnoreAlreadyExists(%v) = %v", tc.err, got)
		}
	}
}

func TestMergeFrom(t *testing.T) {
	orig := newPod("default", "a", map[string]string{"app": "web", "gone": "x"})
	mod := orig.DeepCopy()
	mod.Labels["app"] = "db"
	delete(mod.Labels, "gone")
	p := MergeFrom(orig)
	data, err := p.Data(mod)
	if err != nil {
		t.Fatal(err)
	}
	if p.Type() != types.MergePatchType || string(data) != `{"metadata":{"labels":{"app":"db","gone":null}}}` {
		t.Fatalf("patch %s %s", p.Type(), data)
	}
}
