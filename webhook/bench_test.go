package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/manager"
	"kloop.dev/kloop/webhook/admission"
)

// BenchmarkAdmissionRoundTrips measures ConfigMap creates over HTTP, 4
// clients in parallel, each admitted by a mutating webhook (which adds a
// label) and a validating webhook, both served by a kloop manager's webhook
// server on loopback: on the embedded server and on the real kube-apiserver
// (with etcd) in one run. "plain" is the same creates without webhooks, in
// another namespace. The real target needs the binaries of
// hack/realk8s.sh; without them that half is skipped.
//
//	go test -run '^$' -bench BenchmarkAdmissionRoundTrips -benchtime 3s ./webhook/
func BenchmarkAdmissionRoundTrips(b *testing.B) {
	for _, target := range apiservertest.Targets() {
		b.Run(string(target), func(b *testing.B) {
			env := apiservertest.Start(b, target, apiservertest.Options{})
			skipWithoutConfigurations(b, env)
			scope := &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": env.Namespace}}
			rules := []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
			}}
			none, fail := admissionregistrationv1.SideEffectClassNone, admissionregistrationv1.Fail
			path := func(p string) *string { u := "https://placeholder" + p; return &u }
			wopts := env.InstallWebhooks(apiservertest.WebhookInstallOptions{
				MutatingWebhooks: []*admissionregistrationv1.MutatingWebhookConfiguration{{
					ObjectMeta: metav1.ObjectMeta{Name: "bench-" + env.Namespace},
					Webhooks: []admissionregistrationv1.MutatingWebhook{{
						Name: "label.bench.kloop.dev", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: path("/label")},
						Rules: rules, NamespaceSelector: scope, SideEffects: &none, FailurePolicy: &fail, AdmissionReviewVersions: []string{"v1"},
					}},
				}},
				ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{{
					ObjectMeta: metav1.ObjectMeta{Name: "bench-" + env.Namespace},
					Webhooks: []admissionregistrationv1.ValidatingWebhook{{
						Name: "check.bench.kloop.dev", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: path("/check")},
						Rules: rules, NamespaceSelector: scope, SideEffects: &none, FailurePolicy: &fail, AdmissionReviewVersions: []string{"v1"},
					}},
				}},
			})
			mgr, err := manager.New(env.Config(), manager.Options{Logger: discard, Webhook: wopts})
			if err != nil {
				b.Fatal(err)
			}
			label, _ := admission.New(admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
				return admission.Patched("", admission.PatchOperation{Operation: "add", Path: "/metadata/labels", Value: json.RawMessage(`{"admitted":"yes"}`)})
			}), admission.Options{Logger: discard})
			check, _ := admission.New(admission.HandlerFunc(func(_ context.Context, req admission.Request) admission.Response {
				if len(req.Object.Raw) == 0 {
					return admission.Denied("no object")
				}
				return admission.Allowed("")
			}), admission.Options{Logger: discard})
			srv := mgr.WebhookServer()
			if err := srv.Register("/label", label); err != nil {
				b.Fatal(err)
			}
			if err := srv.Register("/check", check); err != nil {
				b.Fatal(err)
			}
			ctx, stop := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- mgr.Start(ctx) }()
			defer func() {
				stop()
				if err := <-done; err != nil {
					b.Errorf("manager: %v", err)
				}
			}()
			<-srv.Started()

			hc := env.HTTPClient(nil)
			host := env.Config().Host
			send := func(url, body string) string {
				req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/json")
				resp, err := hc.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				data, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusCreated {
					b.Fatalf("POST %s: %d %s", url, resp.StatusCode, data)
				}
				return string(data)
			}
			cms := host + "/api/v1/namespaces/" + env.Namespace + "/configmaps"
			var n atomic.Int64
			body := func() string {
				return fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c-%d"},"data":{"v":"x"}}`, n.Add(1))
			}
			// kube-apiserver follows the configurations through informers.
			deadline := time.Now().Add(time.Minute)
			for !strings.Contains(send(cms+"?dryRun=All", body()), `"admitted":"yes"`) {
				if time.Now().After(deadline) {
					b.Fatal("the webhooks are not in force after a minute")
				}
				time.Sleep(50 * time.Millisecond)
			}
			b.Run("admitted", func(b *testing.B) {
				b.SetParallelism(2)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						send(cms, body())
					}
				})
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
			})
			plain := host + "/api/v1/namespaces/" + env.Namespace + "-plain/configmaps"
			send(host+"/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"`+env.Namespace+`-plain"}}`)
			b.Run("plain", func(b *testing.B) {
				b.SetParallelism(2)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						send(plain, body())
					}
				})
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
			})
		})
	}
}
