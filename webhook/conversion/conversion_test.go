package conversion_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/goleak"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kloop.dev/kloop/internal/testcrd"
	"kloop.dev/kloop/webhook/conversion"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var discard = slog.New(slog.DiscardHandler)

var widgetGK = schema.GroupKind{Group: "example.com", Kind: "Widget"}

func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	testcrd.AddVersionsToScheme(s)
	return s
}

// A third version for spoke-to-spoke conversions.
type widgetV2 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Paint string `json:"paint,omitempty"`
	} `json:"spec"`
}

func (w *widgetV2) DeepCopyObject() runtime.Object { c := *w; return &c }
func (w *widgetV2) ConvertTo(dst conversion.Hub) error {
	h := dst.(*testcrd.Widget)
	h.ObjectMeta = w.ObjectMeta
	h.Spec.Color = w.Spec.Paint
	return nil
}
func (w *widgetV2) ConvertFrom(src conversion.Hub) error {
	h := src.(*testcrd.Widget)
	w.ObjectMeta = h.ObjectMeta
	w.Spec.Paint = h.Spec.Color
	return nil
}

// notConvertible is a version without conversion methods.
type notConvertible struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

func (w *notConvertible) DeepCopyObject() runtime.Object { c := *w; return &c }

// secondHub is a second hub.
type secondHub struct{ testcrd.Widget }

func (w *secondHub) DeepCopyObject() runtime.Object { c := *w; return &c }

func TestHubAndSpoke(t *testing.T) {
	gv := func(v string) schema.GroupVersion { return schema.GroupVersion{Group: "example.com", Version: v} }
	for _, tc := range []struct {
		name        string
		add         func(*runtime.Scheme)
		convertible bool
		err         string
	}{
		{"hub and spoke", func(*runtime.Scheme) {}, true, ""},
		{"one version", func(s *runtime.Scheme) {}, false, ""},
		{"a version that does not convert", func(s *runtime.Scheme) { s.AddKnownTypeWithName(gv("v3").WithKind("Widget"), &notConvertible{}) }, false,
			"versions [v3] are neither the hub nor Convertible"},
		{"two hubs", func(s *runtime.Scheme) { s.AddKnownTypeWithName(gv("v0").WithKind("Widget"), &secondHub{}) }, false, "2 hub versions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := scheme()
			if tc.name == "one version" {
				s = runtime.NewScheme()
				testcrd.AddToScheme(s)
			}
			tc.add(s)
			ok, err := conversion.IsConvertible(s, widgetGK)
			if ok != tc.convertible || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("IsConvertible = %v, %v; want %v, %q", ok, err, tc.convertible, tc.err)
			}
		})
	}
	s := runtime.NewScheme()
	s.AddKnownTypeWithName(schema.GroupVersion{Group: "example.com", Version: "v1alpha1"}.WithKind("Widget"), &testcrd.WidgetV1alpha1{})
	s.AddKnownTypeWithName(schema.GroupVersion{Group: "example.com", Version: "v2"}.WithKind("Widget"), &widgetV2{})
	if _, err := conversion.HubAndSpoke(s, widgetGK); err == nil || !strings.Contains(err.Error(), "no hub version") {
		t.Fatalf("spokes without a hub: %v", err)
	}
}

// convert posts a ConversionReview and returns the response.
func convert(t *testing.T, h http.Handler, version, desired string, objs ...string) (string, *apiextensionsv1.ConversionResponse) {
	t.Helper()
	req := map[string]any{"uid": "u1", "desiredAPIVersion": desired}
	var raws []json.RawMessage
	for _, o := range objs {
		raws = append(raws, json.RawMessage(o))
	}
	req["objects"] = raws
	body, _ := json.Marshal(map[string]any{"apiVersion": version, "kind": "ConversionReview", "request": req})
	r := httptest.NewRequest(http.MethodPost, "/convert", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Fatalf("HTTP %d: %s", w.Code, w.Body)
	}
	var out struct {
		APIVersion string                              `json:"apiVersion"`
		Kind       string                              `json:"kind"`
		Response   *apiextensionsv1.ConversionResponse `json:"response"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || out.Response == nil || out.Kind != "ConversionReview" {
		t.Fatalf("%s: %v", w.Body, err)
	}
	if out.Response.UID != "u1" {
		t.Fatalf("UID %q", out.Response.UID)
	}
	return out.APIVersion, out.Response
}

const (
	alpha = `{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"a","namespace":"ns","uid":"x","resourceVersion":"7"},"spec":{"colour":"red","size":2},"status":{"state":"ok"}}`
	v1    = `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"b","namespace":"ns"},"spec":{"color":"blue"}}`
)

func TestWebhook(t *testing.T) {
	s := scheme()
	s.AddKnownTypeWithName(schema.GroupVersion{Group: "example.com", Version: "v2"}.WithKind("Widget"), &widgetV2{})
	wh, err := conversion.New(s, conversion.Options{Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("to the hub and back, in order, with an object already there", func(t *testing.T) {
		v, resp := convert(t, wh, conversion.ReviewV1, "example.com/v1", alpha, v1)
		if v != conversion.ReviewV1 || resp.Result.Status != metav1.StatusSuccess || len(resp.ConvertedObjects) != 2 {
			t.Fatalf("%s %+v", v, resp)
		}
		var w testcrd.Widget
		if err := json.Unmarshal(resp.ConvertedObjects[0].Raw, &w); err != nil {
			t.Fatal(err)
		}
		if w.APIVersion != "example.com/v1" || w.Kind != "Widget" || w.Spec.Color != "red" || w.Spec.Size != 2 ||
			w.Name != "a" || w.UID != "x" || w.ResourceVersion != "7" || w.Status.State != "ok" {
			t.Fatalf("converted %+v", w)
		}
		if string(resp.ConvertedObjects[1].Raw) != v1 {
			t.Fatalf("an object at the desired version changed: %s", resp.ConvertedObjects[1].Raw)
		}
		_, back := convert(t, wh, conversion.ReviewV1, "example.com/v1alpha1", string(resp.ConvertedObjects[0].Raw))
		var a testcrd.WidgetV1alpha1
		if err := json.Unmarshal(back.ConvertedObjects[0].Raw, &a); err != nil {
			t.Fatal(err)
		}
		if a.APIVersion != "example.com/v1alpha1" || a.Spec.Colour != "red" || a.Name != "a" {
			t.Fatalf("back %+v", a)
		}
	})
	t.Run("spoke to spoke through the hub, v1beta1", func(t *testing.T) {
		v, resp := convert(t, wh, conversion.ReviewV1beta1, "example.com/v2", alpha)
		if v != conversion.ReviewV1beta1 || resp.Result.Status != metav1.StatusSuccess {
			t.Fatalf("%s %+v", v, resp.Result)
		}
		if !strings.Contains(string(resp.ConvertedObjects[0].Raw), `"paint":"red"`) {
			t.Fatalf("%s", resp.ConvertedObjects[0].Raw)
		}
	})
	for _, tc := range []struct{ name, desired, obj, msg string }{
		{"unknown version", "example.com/v9", alpha, `no kind "Widget" is registered for version "example.com/v9"`},
		{"another group", "other.com/v1", alpha, "cannot convert to group"},
		{"not a group/version", "", alpha, "is not a group/version"},
		{"no kind", "example.com/v1", `{"spec":{}}`, "object 0: no apiVersion and kind"},
		{"undecodable", "example.com/v1", `{"apiVersion":"example.com/v1alpha1","kind":"Widget","spec":{"size":"big"}}`, "object 0: decoding as"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, resp := convert(t, wh, conversion.ReviewV1, tc.desired, tc.obj)
			if resp.Result.Status != metav1.StatusFailure || !strings.Contains(resp.Result.Message, tc.msg) || resp.ConvertedObjects != nil {
				t.Fatalf("%+v; want a failure with %q", resp.Result, tc.msg)
			}
		})
	}
	for _, tc := range []struct{ name, contentType, body string }{
		{"not JSON", "application/json", "{"},
		{"no request", "application/json", `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}`},
		{"wrong kind", "application/json", `{"apiVersion":"apiextensions.k8s.io/v1","kind":"AdmissionReview","request":{}}`},
		{"content type", "text/plain", `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/convert", strings.NewReader(tc.body))
			r.Header.Set("Content-Type", tc.contentType)
			w := httptest.NewRecorder()
			wh.ServeHTTP(w, r)
			if w.Code != http.StatusBadRequest {
				t.Fatalf("HTTP %d", w.Code)
			}
		})
	}
	small, _ := conversion.New(s, conversion.Options{MaxRequestBytes: 10, Logger: discard})
	r := httptest.NewRequest(http.MethodPost, "/convert", strings.NewReader(strings.Repeat(" ", 11)))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	small.ServeHTTP(w, r)
	if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "larger than 10 bytes") {
		t.Fatalf("oversized: HTTP %d %s", w.Code, w.Body)
	}
}

type convertFunc func(ctx context.Context, src, dst runtime.Object) error

func (f convertFunc) Convert(ctx context.Context, src, dst runtime.Object) error {
	return f(ctx, src, dst)
}

func TestRegisteredConverters(t *testing.T) {
	s := scheme()
	fns, err := conversion.Funcs(s,
		conversion.NewFunc(func(_ context.Context, src *testcrd.WidgetV1alpha1, dst *testcrd.Widget) error {
			dst.ObjectMeta = src.ObjectMeta
			dst.Spec.Color = "from-func-" + src.Spec.Colour
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	wh, _ := conversion.New(s, conversion.Options{Logger: discard})
	if err := wh.Register(widgetGK, fns); err != nil {
		t.Fatal(err)
	}
	if err := wh.Register(widgetGK, fns); err == nil {
		t.Fatal("a second converter for a kind: no error")
	}
	_, resp := convert(t, wh, conversion.ReviewV1, "example.com/v1", alpha)
	if resp.Result.Status != metav1.StatusSuccess || !strings.Contains(string(resp.ConvertedObjects[0].Raw), `"color":"from-func-red"`) {
		t.Fatalf("%+v %s", resp.Result, resp.ConvertedObjects)
	}
	// The other direction has no function.
	_, resp = convert(t, wh, conversion.ReviewV1, "example.com/v1alpha1", v1)
	if resp.Result.Status != metav1.StatusFailure || !strings.Contains(resp.Result.Message, "no conversion function from v1 to v1alpha1") {
		t.Fatalf("%+v", resp.Result)
	}

	// A converter's panic is a failure, counted.
	s2 := scheme()
	panicky, _ := conversion.New(s2, conversion.Options{Logger: discard})
	_ = panicky.Register(widgetGK, convertFunc(func(context.Context, runtime.Object, runtime.Object) error { panic("boom") }))
	_, resp = convert(t, panicky, conversion.ReviewV1, "example.com/v1", alpha)
	if resp.Result.Status != metav1.StatusFailure || panicky.Panics() != 1 {
		t.Fatalf("%+v, %d panics", resp.Result, panicky.Panics())
	}

	for _, tc := range []struct {
		name string
		fns  []conversion.Func
		err  string
	}{
		{"not made by NewFunc", []conversion.Func{{}}, "not made by NewFunc"},
		{"to itself", []conversion.Func{conversion.NewFunc(func(context.Context, *testcrd.Widget, *testcrd.Widget) error { return nil })}, "to itself"},
		{"twice", []conversion.Func{
			conversion.NewFunc(func(context.Context, *testcrd.Widget, *testcrd.WidgetV1alpha1) error { return nil }),
			conversion.NewFunc(func(context.Context, *testcrd.Widget, *testcrd.WidgetV1alpha1) error { return nil }),
		}, "two functions"},
		{"not in the scheme", []conversion.Func{conversion.NewFunc(func(context.Context, *widgetV2, *testcrd.Widget) error { return nil })}, "no kind is registered"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := conversion.Funcs(s, tc.fns...); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err %v; want %q", err, tc.err)
			}
		})
	}
}

func FuzzDecodeReview(f *testing.F) {
	f.Add(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"a","desiredAPIVersion":"example.com/v1","objects":[{"a":1}]}}`)
	f.Add(`{"apiVersion":"apiextensions.k8s.io/v1beta1","kind":"ConversionReview","request":{"objects":null}}`)
	s := scheme()
	wh, _ := conversion.New(s, conversion.Options{Logger: discard})
	f.Fuzz(func(t *testing.T, body string) {
		req, _, err := conversion.DecodeReview([]byte(body))
		if err != nil {
			return
		}
		resp := wh.Convert(context.Background(), req)
		if resp.Result.Status == metav1.StatusSuccess && len(resp.ConvertedObjects) != len(req.Objects) {
			t.Fatalf("%d objects in, %d out", len(req.Objects), len(resp.ConvertedObjects))
		}
	})
}
