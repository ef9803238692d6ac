package apiserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kloop.dev/kloop/apiserver/storage"
)

// statusFor turns any error into the metav1.Status kube-apiserver would
// answer: API errors pass through, store errors get their status, anything
// else is a 500 InternalError.
func statusFor(err error, gr schema.GroupResource, name string) *metav1.Status {
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		st := se.Status()
		return &st
	}
	var st *apierrors.StatusError
	switch {
	case errors.Is(err, storage.ErrNotFound):
		st = apierrors.NewNotFound(gr, name)
	case errors.Is(err, storage.ErrAlreadyExists):
		st = apierrors.NewAlreadyExists(gr, name)
	case errors.Is(err, storage.ErrConflict):
		st = apierrors.NewConflict(gr, name, err)
	case errors.Is(err, storage.ErrExpired):
		st = apierrors.NewResourceExpired("The resourceVersion for the provided list is too old.")
	case errors.Is(err, storage.ErrTooLargeResourceVersion):
		// kube-apiserver's etcd storage's answer. No Retry-After: this
		// store never lags, so the revision will not arrive.
		msg := fmt.Sprintf("Too large resource version: %v", err)
		var tl *storage.TooLargeError
		if errors.As(err, &tl) {
			msg = fmt.Sprintf("Too large resource version: %d, current: %d", tl.Requested, tl.Current)
		}
		st = apierrors.NewTimeoutError(msg, 0)
		st.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
	default:
		st = apierrors.NewInternalError(err)
	}
	return &st.ErrStatus
}

// writeStatus writes a Status as the response.
func writeStatus(w http.ResponseWriter, st *metav1.Status) {
	st.Kind, st.APIVersion = "Status", "v1"
	if st.Status == "" {
		st.Status = metav1.StatusFailure
	}
	code := int(st.Code)
	if code == 0 {
		code = http.StatusInternalServerError
		st.Code = int32(code)
	}
	b, err := json.Marshal(st)
	if err != nil { // a Status always encodes; keep the answer valid anyway
		b = []byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","code":500}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	if st.Details != nil && st.Details.RetryAfterSeconds > 0 {
		h.Set("Retry-After", strconv.Itoa(int(st.Details.RetryAfterSeconds)))
	}
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// writeError writes err as a Status.
func writeError(w http.ResponseWriter, err error, gr schema.GroupResource, name string) {
	writeStatus(w, statusFor(err, gr, name))
}

// writeJSON writes an already encoded JSON body.
func writeJSON(w http.ResponseWriter, code int, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// writeObject encodes v as JSON and writes it.
func writeObject(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, fmt.Errorf("encoding response: %w", err), schema.GroupResource{}, "")
		return
	}
	writeJSON(w, code, b)
}

func badRequest(format string, args ...any) error {
	return apierrors.NewBadRequest(fmt.Sprintf(format, args...))
}

// serverError is kube-apiserver's answer to an error that is not an API
// status: a 500 with the error's text and no reason. kube-apiserver gives it
// for a few malformed inputs (a resourceVersion that is not a number where
// its storage parses it, a resourceVersion on a create), so the embedded
// server does too.
func serverError(err error) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Message: err.Error()}}
}
