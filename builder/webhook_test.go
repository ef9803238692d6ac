package builder_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/builder"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/internal/testcrd"
	"kloop.dev/kloop/manager"
	"kloop.dev/kloop/webhook"
	"kloop.dev/kloop/webhook/admission"
	"kloop.dev/kloop/webhook/conversion"
)

type colorDefaulter struct{}

func (colorDefaulter) Default(_ context.Context, w *testcrd.Widget) error {
	if w.Spec.Color == "" {
		w.Spec.Color = "blue"
	}
	return nil
}

type sizeValidator struct{}

func (sizeValidator) ValidateCreate(_ context.Context, w *testcrd.Widget) (admission.Warnings, error) {
	if w.Spec.Size > 10 {
		return admission.Warnings{"big"}, errors.New("too big")
	}
	return nil, nil
}
func (sizeValidator) ValidateUpdate(ctx context.Context, _, w *testcrd.Widget) (admission.Warnings, error) {
	return sizeValidator{}.ValidateCreate(ctx, w)
}
func (sizeValidator) ValidateDelete(context.Context, *testcrd.Widget) (admission.Warnings, error) {
	return nil, nil
}

func webhookManager(t *testing.T, scheme *runtime.Scheme) *manager.Manager {
	t.Helper()
	srv := apiservertest.NewServer(t, apiservertest.Options{})
	mgr, err := manager.New(srv.Config(), manager.Options{
		Logger:                 slog.New(slog.DiscardHandler),
		Cache:                  informer.FactoryOptions{Scheme: scheme},
		MetricsBindAddress:     "127.0.0.1:0",
		HealthProbeBindAddress: "127.0.0.1:0",
		Webhook:                webhook.Options{BindAddress: "127.0.0.1:0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return mgr
}

func versionedScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	testcrd.AddVersionsToScheme(s)
	return s
}

func get(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestWebhookManagedBy(t *testing.T) {
	mgr := webhookManager(t, versionedScheme(t))
	err := builder.WebhookManagedBy(mgr, &testcrd.Widget{}).
		WithDefaulter(colorDefaulter{}).
		WithValidator(sizeValidator{}).
		Complete()
	if err != nil {
		t.Fatal(err)
	}
	srv := mgr.WebhookServer()
	for _, path := range []string{"/mutate-example-com-v1-widget", "/validate-example-com-v1-widget", "/convert"} {
		if srv.Handler(path) == nil {
			t.Errorf("nothing at %s", path)
		}
	}
	// The v1alpha1 webhooks share /convert.
	if err := builder.WebhookManagedBy(mgr, &testcrd.WidgetV1alpha1{}).WithValidatorCustomPath("/v-alpha").
		WithValidator(admissionValidatorFunc[*testcrd.WidgetV1alpha1]{}).Complete(); err != nil {
		t.Fatal(err)
	}
	if srv.Handler("/v-alpha") == nil {
		t.Error("nothing at the custom path")
	}
	start(t, mgr)
	<-srv.Started()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(srv.CABundle())
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	review := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","operation":"CREATE",` +
		`"object":{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"size":11}}}}`
	for path, want := range map[string]string{
		"/mutate-example-com-v1-widget":   `"patch":"` + "W3sib3AiOiJhZGQiLCJwYXRoIjoiL3NwZWMvY29sb3IiLCJ2YWx1ZSI6ImJsdWUifV0=", // add /spec/color "blue"
		"/validate-example-com-v1-widget": `"message":"too big","reason":"Forbidden","code":403},"warnings":["big"]`,
	} {
		resp, err := c.Post(srv.URL(path), "application/json", strings.NewReader(review))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), want) {
			t.Errorf("%s: %s; want %s", path, b, want)
		}
	}
	conv := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"c","desiredAPIVersion":"example.com/v1alpha1",` +
		`"objects":[{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"color":"red"}}]}}`
	resp, err := c.Post(srv.URL("/convert"), "application/json", strings.NewReader(conv))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"colour":"red"`) {
		t.Errorf("/convert: %s", b)
	}
	probe := &http.Client{Timeout: 10 * time.Second}
	if code, body := get(t, probe, "http://"+mgr.HealthProbeAddr().String()+"/readyz/webhook"); code != 200 {
		t.Errorf("/readyz/webhook: %d %s", code, body)
	}
	_, metrics := get(t, probe, "http://"+mgr.MetricsAddr().String()+"/metrics")
	for _, want := range []string{
		`controller_runtime_webhook_requests_total{code="200",webhook="/mutate-example-com-v1-widget"} 1`,
		`controller_runtime_webhook_requests_total{code="200",webhook="/convert"} 1`,
		`controller_runtime_webhook_latency_seconds_count{webhook="/validate-example-com-v1-widget"} 1`,
		`controller_runtime_webhook_requests_in_flight{webhook="/convert"} 0`,
		`controller_runtime_webhook_panics_total 0`,
		`controller_runtime_conversion_webhook_panics_total 0`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics has no %s", want)
		}
	}
}

type admissionValidatorFunc[T runtime.Object] struct{}

func (admissionValidatorFunc[T]) ValidateCreate(context.Context, T) (admission.Warnings, error) {
	return nil, nil
}
func (admissionValidatorFunc[T]) ValidateUpdate(context.Context, T, T) (admission.Warnings, error) {
	return nil, nil
}
func (admissionValidatorFunc[T]) ValidateDelete(context.Context, T) (admission.Warnings, error) {
	return nil, nil
}

func TestWebhookManagedByErrors(t *testing.T) {
	mgr := webhookManager(t, versionedScheme(t))
	plain := runtime.NewScheme()
	testcrd.AddToScheme(plain)
	plainMgr := webhookManager(t, plain)
	conv, err := conversion.Funcs(mgr.Scheme())
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	for _, tc := range []struct {
		name string
		err  func() error
		want string
	}{
		{"nothing to serve", func() error { return builder.WebhookManagedBy(plainMgr, &testcrd.Widget{}).Complete() }, "no defaulter, validator or conversion"},
		{"not in the scheme", func() error {
			return builder.WebhookManagedBy(mgr, &notInScheme{}).WithValidator(admissionValidatorFunc[*notInScheme]{}).Complete()
		}, "not in the manager's Scheme"},
		{"unstructured without a kind", func() error {
			return builder.WebhookManagedBy(mgr, u).WithValidator(admissionValidatorFunc[*unstructured.Unstructured]{}).Complete()
		}, "apiVersion and kind must be set"},
		{"nil manager", func() error { return builder.WebhookManagedBy(nil, &testcrd.Widget{}).Complete() }, "needs a manager"},
		{"a path twice", func() error {
			if err := builder.WebhookManagedBy(mgr, &testcrd.Widget{}).WithDefaulter(colorDefaulter{}).Complete(); err != nil {
				return err
			}
			return builder.WebhookManagedBy(mgr, &testcrd.Widget{}).WithDefaulter(colorDefaulter{}).Complete()
		}, "already registered"},
		{"a converter twice", func() error {
			if err := builder.WebhookManagedBy(mgr, &testcrd.WidgetV1alpha1{}).WithConverter(conv).Complete(); err != nil {
				return err
			}
			return builder.WebhookManagedBy(mgr, &testcrd.Widget{}).WithConverter(conv).Complete()
		}, "converter for Widget.example.com is already registered"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.err(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v; want %q", err, tc.want)
			}
		})
	}
}
