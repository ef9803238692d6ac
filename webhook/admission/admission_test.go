package admission_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"go.uber.org/goleak"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"kloop.dev/kloop/internal/testcrd"
	"kloop.dev/kloop/webhook/admission"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type widgetDefaulter struct{}

func (widgetDefaulter) Default(ctx context.Context, w *testcrd.Widget) error {
	if _, ok := admission.RequestFromContext(ctx); !ok {
		return errors.New("no request in the context")
	}
	if w.Spec.Color == "forbidden" {
		return errors.New("no defaults for forbidden widgets")
	}
	if w.Spec.Color == "" {
		w.Spec.Color = "blue"
	}
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	w.Labels["defaulted"] = "true"
	return nil
}

type widgetValidator struct{}

func (widgetValidator) ValidateCreate(_ context.Context, w *testcrd.Widget) (admission.Warnings, error) {
	return check(w)
}

func (widgetValidator) ValidateUpdate(_ context.Context, old, w *testcrd.Widget) (admission.Warnings, error) {
	if old.Spec.Size > w.Spec.Size {
		return admission.Warnings{"shrinking"}, errors.New("a widget does not shrink")
	}
	return check(w)
}

func (widgetValidator) ValidateDelete(_ context.Context, w *testcrd.Widget) (admission.Warnings, error) {
	if w.Spec.Color == "gold" {
		return nil, apierrors.NewForbidden(schema.GroupResource{Group: "example.com", Resource: "widgets"}, w.Name, errors.New("gold widgets stay"))
	}
	return nil, nil
}

func check(w *testcrd.Widget) (admission.Warnings, error) {
	var warnings admission.Warnings
	if w.Spec.Color == "red" {
		warnings = append(warnings, "red fades")
	}
	if w.Spec.Size < 0 {
		return warnings, apierrors.NewInvalid(schema.GroupKind{Group: "example.com", Kind: "Widget"}, w.Name,
			field.ErrorList{field.Invalid(field.NewPath("spec", "size"), w.Spec.Size, "must not be negative")})
	}
	if w.Spec.Color == "black" {
		return warnings, errors.New("black widgets are not allowed")
	}
	return warnings, nil
}

// review posts an AdmissionReview to h and returns the response.
func review(t *testing.T, h http.Handler, version string, req admissionv1.AdmissionRequest) (string, *admissionv1.AdmissionResponse) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"apiVersion": version, "kind": "AdmissionReview", "request": req})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodPost, "/hook", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Fatalf("HTTP %d: %s", w.Code, w.Body)
	}
	var out struct {
		APIVersion string                         `json:"apiVersion"`
		Kind       string                         `json:"kind"`
		Response   *admissionv1.AdmissionResponse `json:"response"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
		t.Fatalf("decoding %s: %v", w.Body, err)
	}
	if out.Kind != "AdmissionReview" || out.Response == nil {
		t.Fatalf("not an AdmissionReview response: %s", w.Body)
	}
	return out.APIVersion, out.Response
}

func raw(s string) runtime.RawExtension { return runtime.RawExtension{Raw: []byte(s)} }

func newWebhook(t *testing.T, h admission.Handler, err error) *admission.Webhook {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	wh, err := admission.New(h, admission.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return wh
}

func TestDefaulter(t *testing.T) {
	h, err := admission.WithDefaulter[*testcrd.Widget](widgetDefaulter{})
	wh := newWebhook(t, h, err)
	for _, tc := range []struct {
		name, op, object string
		// want is the object after the patch; "" for no patch.
		want    string
		allowed bool
		code    int32
	}{{
		name: "create: defaults, unknown fields kept, nothing else added",
		op:   "CREATE",
		// extra is unknown to the Go type; status, creationTimestamp and
		// size absent (the Go type would write them): none is touched.
		object:  `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"ns"},"spec":{"image":"nginx","extra":{"a/b":1}}}`,
		want:    `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"ns","labels":{"defaulted":"true"}},"spec":{"image":"nginx","color":"blue","extra":{"a/b":1}}}`,
		allowed: true, code: 200,
	}, {
		name:    "update: only the label",
		op:      "UPDATE",
		object:  `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","labels":{"x":"y"}},"spec":{"color":"green","size":3}}`,
		want:    `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","labels":{"x":"y","defaulted":"true"}},"spec":{"color":"green","size":3}}`,
		allowed: true, code: 200,
	}, {
		name:    "nothing to default: no patch",
		op:      "CREATE",
		object:  `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","labels":{"defaulted":"true"}},"spec":{"color":"green"}}`,
		allowed: true, code: 200,
	}, {
		name: "delete: admitted untouched", op: "DELETE", allowed: true, code: 200,
	}, {
		name:    "the defaulter's error: 403",
		op:      "CREATE",
		object:  `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"color":"forbidden"}}`,
		allowed: false, code: 403,
	}, {
		name:    "undecodable object: 400",
		op:      "CREATE",
		object:  `{"apiVersion":"example.com/v1","kind":"Widget","spec":{"size":"big"}}`,
		allowed: false, code: 400,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			req := admissionv1.AdmissionRequest{UID: "uid-1", Operation: admissionv1.Operation(tc.op)}
			if tc.object != "" {
				req.Object = raw(tc.object)
			}
			_, resp := review(t, wh, admission.ReviewV1, req)
			if resp.UID != "uid-1" || resp.Allowed != tc.allowed || resp.Result == nil || resp.Result.Code != tc.code {
				t.Fatalf("response %+v, result %+v; want allowed %v code %d", resp, resp.Result, tc.allowed, tc.code)
			}
			if tc.want == "" {
				if resp.Patch != nil || resp.PatchType != nil {
					t.Fatalf("unexpected patch %s", resp.Patch)
				}
				return
			}
			if resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
				t.Fatalf("patch type %v", resp.PatchType)
			}
			patch, err := jsonpatch.DecodePatch(resp.Patch)
			if err != nil {
				t.Fatalf("patch %s: %v", resp.Patch, err)
			}
			got, err := patch.Apply([]byte(tc.object))
			if err != nil {
				t.Fatalf("applying %s: %v", resp.Patch, err)
			}
			if !jsonEqual(t, got, []byte(tc.want)) {
				t.Fatalf("patched object\n%s\nwant\n%s\n(patch %s)", got, tc.want, resp.Patch)
			}
		})
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(x, y)
}

func TestValidator(t *testing.T) {
	h, err := admission.WithValidator[*testcrd.Widget](widgetValidator{})
	wh := newWebhook(t, h, err)
	w := func(color string, size int) string {
		b, _ := json.Marshal(map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": "w"}, "spec": map[string]any{"color": color, "size": size}})
		return string(b)
	}
	for _, tc := range []struct {
		name, op, object, old string
		allowed               bool
		code                  int32
		reason                metav1.StatusReason
		message               string
		warnings              []string
	}{
		{name: "create allowed", op: "CREATE", object: w("green", 1), allowed: true, code: 200},
		{name: "create warned", op: "CREATE", object: w("red", 1), allowed: true, code: 200, warnings: []string{"red fades"}},
		{name: "create denied and warned", op: "CREATE", object: w("red", -1), code: 422, reason: metav1.StatusReasonInvalid,
			message: `Widget.example.com "w" is invalid: spec.size: Invalid value: -1: must not be negative`, warnings: []string{"red fades"}},
		{name: "create denied", op: "CREATE", object: w("black", 1), code: 403, reason: metav1.StatusReasonForbidden, message: "black widgets are not allowed"},
		{name: "update allowed", op: "UPDATE", object: w("green", 2), old: w("green", 1), allowed: true, code: 200},
		{name: "update denied with old", op: "UPDATE", object: w("green", 1), old: w("green", 2), code: 403,
			reason: metav1.StatusReasonForbidden, message: "a widget does not shrink", warnings: []string{"shrinking"}},
		{name: "update without old: 400", op: "UPDATE", object: w("green", 1), code: 400},
		{name: "delete allowed", op: "DELETE", old: w("green", 1), allowed: true, code: 200},
		{name: "delete denied (a Status kept)", op: "DELETE", old: w("gold", 1), code: 403, reason: metav1.StatusReasonForbidden,
			message: `widgets.example.com "w" is forbidden: gold widgets stay`},
		{name: "connect", op: "CONNECT", allowed: true, code: 200},
		{name: "unknown operation", op: "PATCH", code: 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := admissionv1.AdmissionRequest{UID: "u", Operation: admissionv1.Operation(tc.op)}
			if tc.object != "" {
				req.Object = raw(tc.object)
			}
			if tc.old != "" {
				req.OldObject = raw(tc.old)
			}
			_, resp := review(t, wh, admission.ReviewV1, req)
			if resp.Allowed != tc.allowed || resp.Result.Code != tc.code {
				t.Fatalf("allowed %v code %d (%+v); want %v %d", resp.Allowed, resp.Result.Code, resp.Result, tc.allowed, tc.code)
			}
			if tc.reason != "" && resp.Result.Reason != tc.reason {
				t.Errorf("reason %q, want %q", resp.Result.Reason, tc.reason)
			}
			if tc.message != "" && resp.Result.Message != tc.message {
				t.Errorf("message %q, want %q", resp.Result.Message, tc.message)
			}
			if !reflect.DeepEqual(resp.Warnings, tc.warnings) {
				t.Errorf("warnings %q, want %q", resp.Warnings, tc.warnings)
			}
			if resp.Patch != nil {
				t.Errorf("a validator patched: %s", resp.Patch)
			}
		})
	}
}

func TestWebhookHTTP(t *testing.T) {
	var calls int
	wh := newWebhook(t, admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
		calls++
		if req.Name == "panic" {
			panic("boom")
		}
		return admission.Patched("ok", admission.PatchOperation{Operation: "add", Path: "/metadata/labels", Value: json.RawMessage(`{"a":"b"}`)}).
			WithWarnings("w1", "w2")
	}), nil)
	t.Run("v1beta1 answered in v1beta1", func(t *testing.T) {
		v, resp := review(t, wh, admission.ReviewV1beta1, admissionv1.AdmissionRequest{UID: "x", Name: "n"})
		if v != admission.ReviewV1beta1 || !resp.Allowed || resp.UID != "x" {
			t.Fatalf("%s %+v", v, resp)
		}
		if string(resp.Patch) != `[{"op":"add","path":"/metadata/labels","value":{"a":"b"}}]` {
			t.Fatalf("patch %s", resp.Patch)
		}
		if !reflect.DeepEqual(resp.Warnings, []string{"w1", "w2"}) {
			t.Fatalf("warnings %q", resp.Warnings)
		}
	})
	t.Run("a panic is a 500 refusal", func(t *testing.T) {
		_, resp := review(t, wh, admission.ReviewV1, admissionv1.AdmissionRequest{UID: "p", Name: "panic"})
		if resp.Allowed || resp.Result.Code != 500 || resp.UID != "p" || !strings.Contains(resp.Result.Message, "boom") {
			t.Fatalf("%+v %+v", resp, resp.Result)
		}
		if wh.Panics() != 1 {
			t.Fatalf("Panics() = %d", wh.Panics())
		}
	})
	for _, tc := range []struct {
		name, contentType, body string
		code                    int32
	}{
		{"empty body", "application/json", "", 400},
		{"wrong content type", "text/plain", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"a"}}`, 400},
		{"not JSON", "application/json", `{"apiVersion":`, 400},
		{"wrong kind", "application/json", `{"apiVersion":"admission.k8s.io/v1","kind":"ConversionReview","request":{"uid":"a"}}`, 400},
		{"wrong version", "application/json", `{"apiVersion":"admission.k8s.io/v2","kind":"AdmissionReview","request":{"uid":"a"}}`, 400},
		{"no request", "application/json", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, 400},
		{"too large", "application/json", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"` + strings.Repeat("a", admission.MaxRequestBytes) + `"}}`, 413},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := calls
			r := httptest.NewRequest(http.MethodPost, "/hook", strings.NewReader(tc.body))
			r.Header.Set("Content-Type", tc.contentType)
			w := httptest.NewRecorder()
			wh.ServeHTTP(w, r)
			var out struct {
				Response *admissionv1.AdmissionResponse `json:"response"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || out.Response == nil {
				t.Fatalf("%s: %v", w.Body, err)
			}
			if out.Response.Allowed || out.Response.Result.Code != tc.code {
				t.Fatalf("%+v %+v; want code %d", out.Response, out.Response.Result, tc.code)
			}
			if calls != before {
				t.Fatal("the handler was called")
			}
		})
	}
}

func TestConstructorsRefuse(t *testing.T) {
	if _, err := admission.WithDefaulter[*testcrd.Widget](nil); err == nil {
		t.Error("WithDefaulter(nil): no error")
	}
	if _, err := admission.WithValidator[*testcrd.Widget](nil); err == nil {
		t.Error("WithValidator(nil): no error")
	}
	if _, err := admission.New(nil, admission.Options{}); err == nil {
		t.Error("New(nil): no error")
	}
}
