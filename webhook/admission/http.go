package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"sync/atomic"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "sigs.k8s.io/json"
)

// MaxRequestBytes bounds an AdmissionReview's body: two objects of at most
// 3 MiB each (kube-apiserver's limit of a write, with room for JSON) and
// the rest of the request, as controller-runtime's bound.
const MaxRequestBytes = 7 << 20

// The AdmissionReview versions a Webhook reads and answers in.
const (
	ReviewV1      = "admission.k8s.io/v1"
	ReviewV1beta1 = "admission.k8s.io/v1beta1"
)

// Options configure a Webhook. The zero value works.
type Options struct {
	// Logger receives the webhook's logs: requests it could not decode,
	// handlers' panics. Default: slog.Default().
	Logger *slog.Logger
}

// Webhook serves a Handler over HTTP: it reads AdmissionReviews (v1, or
// v1beta1 for a webhook configuration that asks for it) and answers with
// the handler's response in the same version. Make it with New; register it
// on a webhook.Server (the builder does).
type Webhook struct {
	h   Handler
	log *slog.Logger
	// panics counts the handler's panics (controller_runtime_webhook_panics_total).
	panics atomic.Uint64
}

// New returns the Webhook of h.
func New(h Handler, opts Options) (*Webhook, error) {
	if isNil(h) {
		return nil, errors.New("admission: New needs a Handler")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Webhook{h: h, log: opts.Logger}, nil
}

// Panics returns how many times the handler panicked (each answered as a
// 500 refusal).
func (wh *Webhook) Panics() uint64 { return wh.panics.Load() }

// review is an AdmissionReview of either version: their fields are the
// same.
type review struct {
	metav1.TypeMeta `json:",inline"`
	Request         *admissionv1.AdmissionRequest  `json:"request,omitempty"`
	Response        *admissionv1.AdmissionResponse `json:"response,omitempty"`
}

// DecodeReview decodes an AdmissionReview body of version v1 or v1beta1
// and returns its request and its apiVersion.
func DecodeReview(body []byte) (Request, string, error) {
	var r review
	if err := kjson.UnmarshalCaseSensitivePreserveInts(body, &r); err != nil {
		return Request{}, "", fmt.Errorf("decoding the AdmissionReview: %w", err)
	}
	if r.Kind != "AdmissionReview" || (r.APIVersion != ReviewV1 && r.APIVersion != ReviewV1beta1) {
		return Request{}, "", fmt.Errorf("expected an AdmissionReview of %s or %s, got kind %q of %q", ReviewV1, ReviewV1beta1, r.Kind, r.APIVersion)
	}
	if r.Request == nil {
		return Request{}, "", errors.New("the AdmissionReview has no request")
	}
	return Request{AdmissionRequest: *r.Request}, r.APIVersion, nil
}

// ServeHTTP answers one AdmissionReview.
func (wh *Webhook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxRequestBytes+1))
	switch {
	case err != nil:
		wh.refuse(w, http.StatusBadRequest, fmt.Errorf("reading the request: %w", err))
		return
	case len(body) == 0:
		wh.refuse(w, http.StatusBadRequest, errors.New("the request body is empty"))
		return
	case len(body) > MaxRequestBytes:
		wh.refuse(w, http.StatusRequestEntityTooLarge, fmt.Errorf("the request body is larger than %d bytes", MaxRequestBytes))
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		wh.refuse(w, http.StatusBadRequest, fmt.Errorf("content type %q, expected application/json", r.Header.Get("Content-Type")))
		return
	}
	req, version, err := DecodeReview(body)
	if err != nil {
		wh.refuse(w, http.StatusBadRequest, err)
		return
	}
	resp := wh.Handle(r.Context(), req)
	wh.write(w, version, &resp.AdmissionResponse)
}

// Handle calls the handler, recovering a panic as a 500 refusal, and
// completes its response (UID, status code, patch).
func (wh *Webhook) Handle(ctx context.Context, req Request) (resp Response) {
	defer func() {
		if p := recover(); p != nil {
			wh.panics.Add(1)
			wh.log.Error("admission webhook: the handler panicked", "panic", p, "uid", req.UID,
				"resource", req.Resource.Resource, "namespace", req.Namespace, "name", req.Name)
			resp = Errored(http.StatusInternalServerError, fmt.Errorf("panic: %v [recovered]", p))
			resp.UID = req.UID
		}
	}()
	resp = wh.h.Handle(ctx, req)
	if err := resp.complete(&req); err != nil {
		wh.log.Error("admission webhook: encoding the response", "err", err, "uid", req.UID)
		resp = Errored(http.StatusInternalServerError, errors.New("unable to encode the response"))
		resp.UID = req.UID
	}
	return resp
}

// refuse answers a request that could not be read with a refusal of code.
func (wh *Webhook) refuse(w http.ResponseWriter, code int32, err error) {
	wh.log.Error("admission webhook: bad request", "err", err)
	resp := Errored(code, err)
	wh.write(w, ReviewV1, &resp.AdmissionResponse)
}

func (wh *Webhook) write(w http.ResponseWriter, version string, resp *admissionv1.AdmissionResponse) {
	out := review{TypeMeta: metav1.TypeMeta{APIVersion: version, Kind: "AdmissionReview"}, Response: resp}
	data, err := json.Marshal(out)
	if err != nil {
		wh.log.Error("admission webhook: encoding the response", "err", err)
		http.Error(w, "unable to encode the response", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(data)
}
