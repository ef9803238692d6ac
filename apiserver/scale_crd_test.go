package apiserver_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kloop.dev/kloop/apiserver/apiservertest"
)

// TestCustomResourceScaleChecks checks what kube-apiserver checks of a
// custom resource whose CRD has a scale subresource: the replicas at its
// specReplicasPath and statusReplicasPath on every write, the body of a PUT
// to /scale, and a negative scale validated as the custom resource.
func TestCustomResourceScaleChecks(t *testing.T) {
	forEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		ctx := ctxT(t)
		dyn := dynamicClient(t, env)
		group := widgetGroup(env)
		createCRD(t, dyn, fromYAML(t, widgetCRDIn(group)))
		widgets := dyn.Resource(widgetGVR(group, "v1")).Namespace(env.Namespace)
		causes := func(err error) []string {
			var se *apierrors.StatusError
			if !errors.As(err, &se) {
				t.Fatalf("got %v, want an API error", err)
			}
			out := []string{string(se.ErrStatus.Reason) + " "}
			if se.ErrStatus.Details != nil {
				out[0] += se.ErrStatus.Details.Kind
			}
			for _, c := range causesOf(se) {
				out = append(out, c.Field+": "+c.Message)
			}
			if se.ErrStatus.Details == nil || len(se.ErrStatus.Details.Causes) == 0 {
				out = append(out, se.ErrStatus.Message)
			}
			return out
		}
		check := func(what string, err error, want ...string) {
			t.Helper()
			if got := causes(err); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("%s:\n got %q\nwant %q", what, got, want)
			}
		}

		w := widget(group, "neg", "red")
		_ = unstructured.SetNestedField(w.Object, int64(-1), "spec", "replicas")
		_, err := widgets.Create(ctx, w, metav1.CreateOptions{})
		check("create with replicas -1", err, "Invalid Widget",
			"spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0",
			".spec.replicas: Invalid value: -1: should be a non-negative integer")

		if _, err := widgets.Create(ctx, widget(group, "ok", "red"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got, err := widgets.Get(ctx, "ok", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got.Object["status"] = map[string]any{"replicas": int64(-3)}
		_, err = widgets.UpdateStatus(ctx, got, metav1.UpdateOptions{})
		check("status with replicas -3", err, "Invalid Widget",
			".status.replicas: Invalid value: -3: should be a non-negative integer")

		raw := env.HTTPClient(nil)
		put := func(body string) error {
			t.Helper()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPut, env.Config().Host+"/apis/"+group+"/v1/namespaces/"+env.Namespace+"/widgets/ok/scale", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := raw.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode < 300 {
				return nil
			}
			return apierrors.FromObject(decodeStatus(t, resp))
		}
		check("scale to -1", put(`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"ok"},"spec":{"replicas":-1}}`), "Invalid Widget",
			"spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0",
			".spec.replicas: Invalid value: -1: should be a non-negative integer")
		check("scale body of another kind", put(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"ok"},"spec":{"replicas":3}}`), "BadRequest ",
			`no kind is registered for the type v1.Scale in scheme "pkg/runtime/scheme.go:111"`)
		check("scale body of the wrong type", put(`{"spec":{"replicas":"x"}}`), "BadRequest ",
			`no kind is registered for the type v1.Scale in scheme "pkg/runtime/scheme.go:111"`)
		if err := put(`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"ok"},"spec":{"replicas":4}}`); err != nil {
			t.Errorf("scale to 4: %v", err)
		}
	})
}

// decodeStatus reads the Status body of an error response.
func decodeStatus(t *testing.T, resp *http.Response) *metav1.Status {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	st := &metav1.Status{}
	if err := json.Unmarshal(b, st); err != nil {
		t.Fatalf("%d %s: %v", resp.StatusCode, b, err)
	}
	return st
}

func causesOf(se *apierrors.StatusError) []metav1.StatusCause {
	if se.ErrStatus.Details == nil {
		return nil
	}
	return se.ErrStatus.Details.Causes
}
