package conversion

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"sync"
	"sync/atomic"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "sigs.k8s.io/json"
)

// The ConversionReview versions a Webhook reads and answers in.
const (
	ReviewV1      = "apiextensions.k8s.io/v1"
	ReviewV1beta1 = "apiextensions.k8s.io/v1beta1"
)

// DefaultMaxRequestBytes is Options.MaxRequestBytes's default: a
// ConversionReview holds every object of a list the API server converts.
const DefaultMaxRequestBytes = 256 << 20

// Options configure a Webhook. The zero value works.
type Options struct {
	// Logger receives the webhook's logs. Default: slog.Default().
	Logger *slog.Logger
	// MaxRequestBytes bounds a ConversionReview's body (the API server
	// sends the objects of a whole list in one). Default 256 MiB.
	MaxRequestBytes int64
}

// Webhook serves CRD conversion: it reads ConversionReviews (v1, or v1beta1
// for a CRD whose conversionReviewVersions asks for it), decodes each
// object into its version's Go type of the scheme, converts it with the
// Converter registered for its kind (or, for a kind with none, with the
// objects' own Hub and Convertible methods) and answers in the request's
// version. One Webhook serves every kind: kube-apiserver calls it at the
// path of each CRD's conversion.webhook.clientConfig ("/convert" by the
// builder).
type Webhook struct {
	scheme *runtime.Scheme
	opts   Options
	// panics counts converters' panics
	// (controller_runtime_conversion_webhook_panics_total).
	panics atomic.Uint64

	mu sync.RWMutex // guards converters
	// converters are the registered converters by kind.
	converters map[schema.GroupKind]Converter
}

// New returns a Webhook converting the kinds of scheme.
func New(scheme *runtime.Scheme, opts Options) (*Webhook, error) {
	if scheme == nil {
		return nil, errors.New("conversion: New needs a scheme")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MaxRequestBytes == 0 {
		opts.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if opts.MaxRequestBytes < 0 {
		return nil, fmt.Errorf("conversion: MaxRequestBytes %d is negative", opts.MaxRequestBytes)
	}
	return &Webhook{scheme: scheme, opts: opts, converters: map[schema.GroupKind]Converter{}}, nil
}

// Register sets the Converter of gk; a kind registered twice is an error.
func (wh *Webhook) Register(gk schema.GroupKind, c Converter) error {
	if c == nil {
		return fmt.Errorf("conversion: Register(%s) with a nil Converter", gk)
	}
	wh.mu.Lock()
	defer wh.mu.Unlock()
	if _, ok := wh.converters[gk]; ok {
		return fmt.Errorf("conversion: a converter for %s is already registered", gk)
	}
	wh.converters[gk] = c
	return nil
}

// Panics returns how many times a converter panicked (each answered as a
// failed conversion).
func (wh *Webhook) Panics() uint64 { return wh.panics.Load() }

type review struct {
	metav1.TypeMeta `json:",inline"`
	Request         *apiextensionsv1.ConversionRequest  `json:"request,omitempty"`
	Response        *apiextensionsv1.ConversionResponse `json:"response,omitempty"`
}

// DecodeReview decodes a ConversionReview body of version v1 or v1beta1 and
// returns its request and its apiVersion.
func DecodeReview(body []byte) (*apiextensionsv1.ConversionRequest, string, error) {
	var r review
	if err := kjson.UnmarshalCaseSensitivePreserveInts(body, &r); err != nil {
		return nil, "", fmt.Errorf("decoding the ConversionReview: %w", err)
	}
	if r.Kind != "ConversionReview" || (r.APIVersion != ReviewV1 && r.APIVersion != ReviewV1beta1) {
		return nil, "", fmt.Errorf("expected a ConversionReview of %s or %s, got kind %q of %q", ReviewV1, ReviewV1beta1, r.Kind, r.APIVersion)
	}
	if r.Request == nil {
		return nil, "", errors.New("the ConversionReview has no request")
	}
	return r.Request, r.APIVersion, nil
}

// ServeHTTP answers one ConversionReview: 400 for a body that is not one,
// else 200 with the converted objects or a failure status.
func (wh *Webhook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, wh.opts.MaxRequestBytes+1))
	if err == nil && int64(len(body)) > wh.opts.MaxRequestBytes {
		err = fmt.Errorf("the request body is larger than %d bytes", wh.opts.MaxRequestBytes)
	}
	if err == nil {
		if mt, _, perr := mime.ParseMediaType(r.Header.Get("Content-Type")); perr != nil || mt != "application/json" {
			err = fmt.Errorf("content type %q, expected application/json", r.Header.Get("Content-Type"))
		}
	}
	var req *apiextensionsv1.ConversionRequest
	version := ReviewV1
	if err == nil {
		req, version, err = DecodeReview(body)
	}
	if err != nil {
		wh.opts.Logger.Error("conversion webhook: bad request", "err", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	resp := wh.Convert(r.Context(), req)
	data, err := json.Marshal(review{TypeMeta: metav1.TypeMeta{APIVersion: version, Kind: "ConversionReview"}, Response: resp})
	if err != nil {
		wh.opts.Logger.Error("conversion webhook: encoding the response", "err", err)
		http.Error(w, "unable to encode the response", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(data)
}

// Convert answers a ConversionRequest: every object converted to
// DesiredAPIVersion, in order, or a failure naming the first that did not
// convert.
func (wh *Webhook) Convert(ctx context.Context, req *apiextensionsv1.ConversionRequest) *apiextensionsv1.ConversionResponse {
	resp := &apiextensionsv1.ConversionResponse{UID: req.UID}
	objs, err := wh.convertAll(ctx, req)
	if err != nil {
		wh.opts.Logger.Error("conversion webhook: converting", "uid", req.UID, "desiredAPIVersion", req.DesiredAPIVersion, "err", err)
		resp.Result = metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}
		return resp
	}
	resp.ConvertedObjects = objs
	resp.Result = metav1.Status{Status: metav1.StatusSuccess}
	return resp
}

func (wh *Webhook) convertAll(ctx context.Context, req *apiextensionsv1.ConversionRequest) (out []runtime.RawExtension, err error) {
	desired, err := schema.ParseGroupVersion(req.DesiredAPIVersion)
	if err != nil || desired.Version == "" {
		return nil, fmt.Errorf("desiredAPIVersion %q is not a group/version", req.DesiredAPIVersion)
	}
	out = make([]runtime.RawExtension, 0, len(req.Objects))
	for i, raw := range req.Objects {
		converted, err := wh.convertOne(ctx, raw.Raw, desired)
		if err != nil {
			return nil, fmt.Errorf("object %d: %w", i, err)
		}
		out = append(out, runtime.RawExtension{Raw: converted})
	}
	return out, nil
}

func (wh *Webhook) convertOne(ctx context.Context, raw []byte, desired schema.GroupVersion) (_ []byte, err error) {
	var tm metav1.TypeMeta
	if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, &tm); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	srcGVK := schema.FromAPIVersionAndKind(tm.APIVersion, tm.Kind)
	if srcGVK.Kind == "" || srcGVK.Version == "" {
		return nil, fmt.Errorf("no apiVersion and kind")
	}
	if srcGVK.Group != desired.Group {
		return nil, fmt.Errorf("%s cannot convert to group %q", srcGVK.GroupKind(), desired.Group)
	}
	if srcGVK.GroupVersion() == desired {
		return raw, nil // already there
	}
	src, err := wh.scheme.New(srcGVK)
	if err != nil {
		return nil, err
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, src); err != nil {
		return nil, fmt.Errorf("decoding as %T: %w", src, err)
	}
	dstGVK := desired.WithKind(srcGVK.Kind)
	dst, err := wh.scheme.New(dstGVK)
	if err != nil {
		return nil, err
	}
	setKind(src, srcGVK)
	setKind(dst, dstGVK)
	wh.mu.RLock()
	c := wh.converters[srcGVK.GroupKind()]
	wh.mu.RUnlock()
	defer func() {
		if p := recover(); p != nil {
			wh.panics.Add(1)
			wh.opts.Logger.Error("conversion webhook: the converter panicked", "panic", p, "from", srcGVK, "to", dstGVK)
			err = errors.New("internal error occurred during conversion")
		}
	}()
	if c != nil {
		err = c.Convert(ctx, src, dst)
	} else {
		err = convertHubAndSpoke(src, dst, func() (Hub, error) { return wh.hubOf(srcGVK.GroupKind()) })
	}
	if err != nil {
		return nil, fmt.Errorf("%s to %s: %w", srcGVK.Version, dstGVK.Version, err)
	}
	setKind(dst, dstGVK) // whatever the converter did to it
	return json.Marshal(dst)
}

// hubOf returns a new object of gk's hub version in the scheme.
func (wh *Webhook) hubOf(gk schema.GroupKind) (Hub, error) {
	for _, gvk := range versionsOf(wh.scheme, gk) {
		obj, err := wh.scheme.New(gvk)
		if err != nil {
			return nil, err
		}
		if h, ok := obj.(Hub); ok {
			return h, nil
		}
	}
	return nil, fmt.Errorf("%s has no hub version in the scheme", gk)
}

func setKind(obj runtime.Object, gvk schema.GroupVersionKind) {
	if t, err := meta.TypeAccessor(obj); err == nil {
		t.SetAPIVersion(gvk.GroupVersion().String())
		t.SetKind(gvk.Kind)
	}
}
