package webhook_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/builder"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/internal/testcrd"
	"kloop.dev/kloop/internal/testutil"
	"kloop.dev/kloop/manager"
	"kloop.dev/kloop/webhook"
	"kloop.dev/kloop/webhook/admission"
)

// The end-to-end proof: the API server (the real kube-apiserver, and
// kloop's embedded one) calls a kloop manager's webhook server on loopback
// for the webhooks of the Widget CRD.

type e2eDefaulter struct{}

func (e2eDefaulter) Default(_ context.Context, w *testcrd.Widget) error {
	if w.Spec.Color == "" {
		w.Spec.Color = "blue"
	}
	return nil
}

type e2eValidator struct{}

func (e2eValidator) ValidateCreate(_ context.Context, w *testcrd.Widget) (admission.Warnings, error) {
	var warnings admission.Warnings
	if w.Spec.Color == "red" {
		warnings = append(warnings, "red widgets fade in the sun")
	}
	if w.Spec.Size > 10 {
		return warnings, fmt.Errorf("size %d is larger than 10", w.Spec.Size)
	}
	return warnings, nil
}

func (v e2eValidator) ValidateUpdate(ctx context.Context, _, w *testcrd.Widget) (admission.Warnings, error) {
	return v.ValidateCreate(ctx, w)
}

func (e2eValidator) ValidateDelete(context.Context, *testcrd.Widget) (admission.Warnings, error) {
	return nil, nil
}

// warnings records the Warning headers of a client's responses.
type warnings struct {
	mu   sync.Mutex // guards list
	list []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.list
	w.list = nil
	return l
}

var widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

func widget(ns, name, color string, size int64, labels map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"size": size},
	}}
	if color != "" {
		_ = unstructured.SetNestedField(u.Object, color, "spec", "color")
	}
	if labels != nil {
		u.Object["metadata"].(map[string]any)["labels"] = labels
	}
	return u
}

// closedPort returns a loopback address where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestWebhooksEndToEnd(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, testWebhooksEndToEnd)
}

func testWebhooksEndToEnd(t *testing.T, env *apiservertest.Env) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	testcrd.AddVersionsToScheme(scheme)
	mgr, err := manager.New(env.Config(), manager.Options{
		Logger:  discard,
		Cache:   informer.FactoryOptions{Scheme: scheme},
		Webhook: webhook.Options{BindAddress: "127.0.0.1:0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := builder.WebhookManagedBy(mgr, &testcrd.Widget{}).
		WithDefaulter(e2eDefaulter{}).
		WithValidator(e2eValidator{}).
		Complete(); err != nil {
		t.Fatal(err)
	}
	srv := mgr.WebhookServer()
	slow, _ := admission.New(admission.HandlerFunc(func(ctx context.Context, _ admission.Request) admission.Response {
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
		}
		return admission.Allowed("")
	}), admission.Options{Logger: discard})
	if err := srv.Register("/slow", slow); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	select {
	case <-srv.Started():
	case err := <-done:
		t.Fatalf("manager: %v", err)
	}
	ca := srv.CABundle()

	// The Widget CRD at v1alpha1 and v1, converted by the manager. On the
	// real server it is shared by the tests of this binary: its conversion
	// is pointed at this test's server.
	tctx, tcancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer tcancel()
	crd := testcrd.VersionedCRD(srv.URL(builder.ConversionPath), ca)
	if err := installOrUpdate(tctx, env.Config(), crd); err != nil {
		t.Fatal(err)
	}

	t.Run("admission", func(t *testing.T) {
		skipWithoutConfigurations(t, env)
		testAdmission(t, env, srv, tctx)
	})
	t.Run("conversion through kubectl", func(t *testing.T) {
		kubectl, err := exec.LookPath("kubectl")
		if err != nil {
			t.Skip("SKIPPING: kubectl is not on PATH")
		}
		run := func(stdin string, args ...string) string {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			home := t.TempDir()
			c := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", env.Kubeconfig(), "--cache-dir", filepath.Join(home, "cache")}, args...)...)
			c.Env = append(os.Environ(), "HOME="+home)
			c.Stdin = strings.NewReader(stdin)
			out, err := c.CombinedOutput()
			if err != nil {
				t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			return string(out)
		}
		run(`apiVersion: example.com/v1alpha1
kind: Widget
metadata:
  name: old
spec:
  colour: green
  size: 4
`, "apply", "-f", "-")
		if got := run("", "get", "widgets.v1.example.com", "old", "-o", "jsonpath={.apiVersion} {.spec.color} {.spec.size}"); got != "example.com/v1 green 4" {
			t.Fatalf("at v1: %q", got)
		}
		if got := run("", "get", "widgets.v1alpha1.example.com", "old", "-o", "jsonpath={.apiVersion} {.spec.colour} {.spec.size}"); got != "example.com/v1alpha1 green 4" {
			t.Fatalf("at v1alpha1: %q", got)
		}
		// A v1 object read at v1alpha1, in a list.
		if _, err := dynamic.NewForConfigOrDie(env.Config()).Resource(widgets).Namespace(env.Namespace).
			Create(tctx, widget(env.Namespace, "newer", "blue", 1, nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := run("", "get", "widgets.v1alpha1.example.com", "-o", "jsonpath={range .items[*]}{.metadata.name}={.spec.colour} {end}"); !strings.Contains(got, "newer=blue ") || !strings.Contains(got, "old=green ") {
			t.Fatalf("list at v1alpha1: %q", got)
		}
	})
	t.Run("watch at the other version", func(t *testing.T) {
		dyn := dynamic.NewForConfigOrDie(env.Config())
		alpha := dyn.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1alpha1", Resource: "widgets"}).Namespace(env.Namespace)
		list, err := alpha.List(tctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w, err := alpha.Watch(tctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		if _, err := dyn.Resource(widgets).Namespace(env.Namespace).Create(tctx, widget(env.Namespace, "watched", "purple", 2, nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-w.ResultChan():
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				t.Fatalf("event %v %T", ev.Type, ev.Object)
			}
			if c, _, _ := unstructured.NestedString(u.Object, "spec", "colour"); ev.Type != "ADDED" || u.GetAPIVersion() != "example.com/v1alpha1" || c != "purple" {
				t.Fatalf("event %s %s colour %q", ev.Type, u.GetAPIVersion(), c)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no event")
		}
	})
	t.Run("conversion webhook down", func(t *testing.T) {
		testConversionDown(t, env, tctx)
	})
}

// testConversionDown points the Widget's conversion at a closed port and
// checks kube-apiserver's answers: a read of a version other than the
// stored one is a 500 (the stored object is "corrupt" to the storage), a
// list a 500 StorageReadError, a write at that version a 500 without a
// reason.
func testConversionDown(t *testing.T, env *apiservertest.Env, ctx context.Context) {
	addr := closedPort(t)
	if err := update(ctx, env.Config(), testcrd.VersionedCRD("https://"+addr+"/convert", nil)); err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(env.Config())
	alpha := dyn.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1alpha1", Resource: "widgets"}).Namespace(env.Namespace)
	status := func(err error) metav1.Status {
		t.Helper()
		var st apierrors.APIStatus
		if !errors.As(err, &st) {
			t.Fatalf("err %v, want a Status", err)
		}
		return st.Status()
	}
	var err error
	testutil.Eventually(t, "the conversion webhook changed", func() bool {
		_, err = alpha.Get(ctx, "old", metav1.GetOptions{})
		return err != nil
	})
	dialErr := fmt.Sprintf(`Post "https://%s/convert?timeout=30s": dial tcp %s: connect: connection refused`, addr, addr)
	v1, err := dyn.Resource(widgets).Namespace(env.Namespace).Get(ctx, "old", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rv := v1.GetResourceVersion()
	key := "/example.com/widgets/" + env.Namespace + "/old"
	storageErr := func(key string) string {
		return "StorageError: corrupt object, Code: 7, Key: " + key + ", ResourceVersion: 0, AdditionalErrorMsg: object not decodable revision=" + rv +
			": conversion webhook for example.com/v1, Kind=Widget failed: " + dialErr
	}
	_, err = alpha.Get(ctx, "old", metav1.GetOptions{})
	if st := status(err); st.Code != 500 || st.Reason != metav1.StatusReasonInternalError || st.Message != "Internal error occurred: "+storageErr(key) ||
		st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Message != storageErr(key) {
		t.Errorf("get: %+v", st)
	}
	// A list: kube-apiserver's watch cache, which lists the objects again
	// after the CRD's update, answers 429 until its list succeeds; a list
	// from the storage is a 500 StorageReadError (the embedded server's
	// answer) naming the objects.
	_, err = alpha.List(ctx, metav1.ListOptions{})
	if st := status(err); (st.Code != 500 && st.Code != 429) || !strings.Contains(st.Message, "failed to read one or more widgets.example.com from the storage: StorageError: corrupt object") ||
		!strings.Contains(st.Message, "conversion webhook for example.com/v1, Kind=Widget failed: "+dialErr) {
		t.Errorf("list: %+v", st)
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1alpha1", "kind": "Widget",
		"metadata": map[string]any{"name": "unconverted"}, "spec": map[string]any{"colour": "x"}}}
	_, err = alpha.Create(ctx, u, metav1.CreateOptions{})
	if st := status(err); st.Code != 500 || st.Reason != "" || st.Message != "conversion webhook for example.com/v1alpha1, Kind=Widget failed: "+dialErr {
		t.Errorf("create: %+v", st)
	}
}

func testAdmission(t *testing.T, env *apiservertest.Env, srv *webhook.Server, tctx context.Context) {
	ca := srv.CABundle()
	cs := kubernetes.NewForConfigOrDie(env.Config())
	ns := env.Namespace
	scope := &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"example.com"}, APIVersions: []string{"v1"}, Resources: []string{"widgets"}},
	}}
	none := admissionregistrationv1.SideEffectClassNone
	fail, ignore := admissionregistrationv1.Fail, admissionregistrationv1.Ignore
	url := func(path string) *string { u := srv.URL(path); return &u }
	down := "https://" + closedPort(t) + "/validate"
	one := int32(1)
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "kloop-e2e-" + ns},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "default.widgets.example.com",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: url("/mutate-example-com-v1-widget"), CABundle: ca},
			Rules:                   rules,
			NamespaceSelector:       scope,
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "kloop-e2e-" + ns},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "validate.widgets.example.com",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: url("/validate-example-com-v1-widget"), CABundle: ca},
			Rules:                   rules,
			NamespaceSelector:       scope,
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			MatchConditions:         []admissionregistrationv1.MatchCondition{{Name: "checked", Expression: "object.metadata.name != 'unchecked'"}},
		}, {
			Name:                    "down-fail.widgets.example.com",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &down, CABundle: ca},
			Rules:                   rules,
			NamespaceSelector:       scope,
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"down": "fail"}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
		}, {
			Name:                    "down-ignore.widgets.example.com",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &down, CABundle: ca},
			Rules:                   rules,
			NamespaceSelector:       scope,
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"down": "ignore"}},
			FailurePolicy:           &ignore,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
		}, {
			Name:                    "slow.widgets.example.com",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: url("/slow"), CABundle: ca},
			Rules:                   rules,
			NamespaceSelector:       scope,
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"slow": "true"}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			TimeoutSeconds:          &one,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(tctx, mutating, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(context.Background(), mutating.Name, metav1.DeleteOptions{})
	})
	if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(tctx, validating, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), validating.Name, metav1.DeleteOptions{})
	})

	cfg := env.Config()
	warned := &warnings{}
	cfg.WarningHandler = warned
	dyn := dynamic.NewForConfigOrDie(cfg).Resource(widgets).Namespace(ns)
	// kube-apiserver follows the configurations through informers: wait
	// until both are in force (a dry run is defaulted and then denied).
	testutil.Eventually(t, "the webhook configurations in force", func() bool {
		got, err := dyn.Create(tctx, widget(ns, "probe", "", 1, nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil || got.Object["spec"].(map[string]any)["color"] != "blue" {
			return false
		}
		_, err = dyn.Create(tctx, widget(ns, "probe", "", 11, nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsForbidden(err)
	})
	warned.take()

	t.Run("defaulting", func(t *testing.T) {
		got, err := dyn.Create(tctx, widget(ns, "plain", "", 3, nil), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if c, _, _ := unstructured.NestedString(got.Object, "spec", "color"); c != "blue" {
			t.Fatalf("color %q, want the default", c)
		}
		got.Object["spec"].(map[string]any)["color"] = ""
		delete(got.Object["spec"].(map[string]any), "color")
		got, err = dyn.Update(tctx, got, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if c, _, _ := unstructured.NestedString(got.Object, "spec", "color"); c != "blue" {
			t.Fatalf("color %q after an update, want the default", c)
		}
	})
	t.Run("denied with a reason, warned", func(t *testing.T) {
		_, err := dyn.Create(tctx, widget(ns, "big", "red", 20, nil), metav1.CreateOptions{})
		var st apierrors.APIStatus
		if !errors.As(err, &st) {
			t.Fatalf("err %v", err)
		}
		s := st.Status()
		want := `admission webhook "validate.widgets.example.com" denied the request: size 20 is larger than 10`
		if s.Code != 403 || s.Reason != metav1.StatusReasonForbidden || s.Message != want {
			t.Fatalf("status %d %s %q; want 403 Forbidden %q", s.Code, s.Reason, s.Message, want)
		}
		if w := warned.take(); len(w) != 1 || w[0] != "red widgets fade in the sun" {
			t.Fatalf("warnings %q", w)
		}
		if _, err := dyn.Create(tctx, widget(ns, "red", "red", 2, nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if w := warned.take(); len(w) != 1 || w[0] != "red widgets fade in the sun" {
			t.Fatalf("warnings of an allowed create %q", w)
		}
	})
	t.Run("match condition", func(t *testing.T) {
		// The validating webhook is not called for this name.
		if _, err := dyn.Create(tctx, widget(ns, "unchecked", "", 20, nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("failurePolicy Fail, webhook down", func(t *testing.T) {
		_, err := dyn.Create(tctx, widget(ns, "down-fail", "", 1, map[string]any{"down": "fail"}), metav1.CreateOptions{})
		if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), `failed calling webhook "down-fail.widgets.example.com"`) ||
			!strings.Contains(err.Error(), "connection refused") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("failurePolicy Ignore, webhook down", func(t *testing.T) {
		if _, err := dyn.Create(tctx, widget(ns, "down-ignore", "", 1, map[string]any{"down": "ignore"}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		start := time.Now()
		_, err := dyn.Create(tctx, widget(ns, "slow", "", 1, map[string]any{"slow": "true"}), metav1.CreateOptions{})
		if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), `failed calling webhook "slow.widgets.example.com"`) ||
			!strings.Contains(err.Error(), "context deadline exceeded") {
			t.Fatalf("err %v", err)
		}
		if d := time.Since(start); d > 4*time.Second {
			t.Fatalf("took %v with timeoutSeconds 1", d)
		}
	})
}

// skipWithoutConfigurations skips a test on a server that does not serve
// the webhook configurations (the embedded one before it served the kinds
// of admissionregistration.k8s.io).
func skipWithoutConfigurations(t testing.TB, env *apiservertest.Env) {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(env.Config())
	res, err := cs.Discovery().ServerResourcesForGroupVersion("admissionregistration.k8s.io/v1")
	if err == nil {
		for _, r := range res.APIResources {
			if r.Name == "mutatingwebhookconfigurations" {
				return
			}
		}
	}
	t.Skipf("%s does not serve webhook configurations", env.Target)
}

// installOrUpdate creates crd, or updates the one there to it, and waits
// until it is served.
func installOrUpdate(ctx context.Context, cfg *rest.Config, crd *unstructured.Unstructured) error {
	if err := update(ctx, cfg, crd); err != nil {
		return err
	}
	return apiservertest.InstallCRDs(ctx, cfg, crd)
}

// update creates crd, or updates the one there to it.
func update(ctx context.Context, cfg *rest.Config, crd *unstructured.Unstructured) error {
	crds := dynamic.NewForConfigOrDie(cfg).Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	cur, err := crds.Get(ctx, crd.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			return err
		}
	case err != nil:
		return err
	default:
		upd := crd.DeepCopy()
		upd.SetResourceVersion(cur.GetResourceVersion())
		if _, err := crds.Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// manifests is a kubebuilder config/webhook/manifests.yaml, its webhooks
// limited to one namespace (the real server is shared by the tests of the
// binary).
const manifests = `---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: kloop-install-test-NS
webhooks:
- admissionReviewVersions: [v1]
  clientConfig:
    service:
      name: webhook-service
      namespace: system
      path: /mutate-example-com-v1-widget
  failurePolicy: Fail
  name: mwidget.kb.io
  namespaceSelector:
    matchLabels:
      kubernetes.io/metadata.name: NS
  rules:
  - apiGroups: [example.com]
    apiVersions: [v1]
    operations: [CREATE, UPDATE]
    resources: [widgets]
  sideEffects: None
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: kloop-install-test-NS
webhooks:
- admissionReviewVersions: [v1]
  clientConfig:
    service:
      name: webhook-service
      namespace: system
      path: /validate-example-com-v1-widget
  failurePolicy: Fail
  name: vwidget.kb.io
  namespaceSelector:
    matchLabels:
      kubernetes.io/metadata.name: NS
  rules:
  - apiGroups: [example.com]
    apiVersions: [v1]
    operations: [CREATE, UPDATE]
    resources: [widgets]
  sideEffects: None
`

// TestInstallWebhooks wires a manager's webhook server into the server with
// apiservertest's one option, as envtest's WebhookInstallOptions.
func TestInstallWebhooks(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		skipWithoutConfigurations(t, env)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := update(ctx, env.Config(), testcrd.VersionedCRD("https://"+closedPort(t)+"/convert", nil)); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "manifests.yaml"), []byte(strings.ReplaceAll(manifests, "NS", env.Namespace)), 0o600); err != nil {
			t.Fatal(err)
		}
		scheme := runtime.NewScheme()
		if err := clientgoscheme.AddToScheme(scheme); err != nil {
			t.Fatal(err)
		}
		testcrd.AddVersionsToScheme(scheme)
		mgr, err := manager.New(env.Config(), manager.Options{
			Logger: discard,
			Cache:  informer.FactoryOptions{Scheme: scheme},
			Webhook: env.InstallWebhooks(apiservertest.WebhookInstallOptions{
				Paths:          []string{dir},
				ConversionCRDs: []string{"widgets.example.com"},
			}),
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := builder.WebhookManagedBy(mgr, &testcrd.Widget{}).WithDefaulter(e2eDefaulter{}).WithValidator(e2eValidator{}).Complete(); err != nil {
			t.Fatal(err)
		}
		mctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- mgr.Start(mctx) }()
		t.Cleanup(func() {
			stop()
			if err := <-done; err != nil {
				t.Errorf("manager: %v", err)
			}
		})
		<-mgr.WebhookServer().Started()
		// Waits until the CRD (which exists: its conversion is not changed) is usable.
		if err := apiservertest.InstallCRDs(ctx, env.Config(), testcrd.VersionedCRD("https://unused/convert", nil)); err != nil {
			t.Fatal(err)
		}
		dyn := dynamic.NewForConfigOrDie(env.Config()).Resource(widgets).Namespace(env.Namespace)
		testutil.Eventually(t, "the installed webhooks in force", func() bool {
			got, err := dyn.Create(ctx, widget(env.Namespace, "probe", "", 1, nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil || got.Object["spec"].(map[string]any)["color"] != "blue" {
				return false
			}
			_, err = dyn.Create(ctx, widget(env.Namespace, "probe", "", 11, nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return apierrors.IsForbidden(err)
		})
		if _, err := dyn.Create(ctx, widget(env.Namespace, "installed", "", 2, nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		alpha := dynamic.NewForConfigOrDie(env.Config()).Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1alpha1", Resource: "widgets"}).Namespace(env.Namespace)
		got, err := alpha.Get(ctx, "installed", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if c, _, _ := unstructured.NestedString(got.Object, "spec", "colour"); c != "blue" {
			t.Fatalf("at v1alpha1: %v", got.Object)
		}
	})
}
