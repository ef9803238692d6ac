package apiserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"

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
	boundStatus(st)
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
	ct := "application/json"
	if nw := negotiatedOf(w); nw != nil {
		// kube-apiserver negotiates the encoding of errors too, with no
		// transformation (as=) allowed; JSON when nothing fits.
		if a, ok := negotiate(nw.accept, errorEndpoint); ok && a.format != formatJSON {
			if out, err := nw.encode(a, b, st); err == nil {
				b, ct = out, a.format.contentType()
			}
		}
	}
	h := w.Header()
	h.Set("Content-Type", ct)
	h.Set("Content-Length", strconv.Itoa(len(b)))
	if st.Details != nil && st.Details.RetryAfterSeconds > 0 {
		h.Set("Retry-After", strconv.Itoa(int(st.Details.RetryAfterSeconds)))
	}
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// maxStatusText bounds each text of an error Status the server writes:
// its message, its details' name, and each cause's field and message.
// Their texts quote what the request sent (field names, values, a patched
// object), and kube-apiserver quotes it whole: a body with a field name of
// 1 MB is answered with 4 MB (the name in the message twice, and in the
// cause's field and message). Past the bound the middle of a text is
// replaced by a note of what was left out, keeping its start (what failed,
// and the start of what was quoted) and its end (why). No message of
// kube-apiserver about a valid-sized object comes near it.
const maxStatusText = 16 << 10

// boundStatus bounds the texts of st (see maxStatusText).
func boundStatus(st *metav1.Status) {
	st.Message = boundText(st.Message)
	if d := st.Details; d != nil {
		d.Name = boundText(d.Name)
		for i := range d.Causes {
			d.Causes[i].Field = boundText(d.Causes[i].Field)
			d.Causes[i].Message = boundText(d.Causes[i].Message)
		}
	}
}

// boundText is s if it is at most maxStatusText bytes, else its first
// three quarters and its last quarter of them (cut at rune boundaries)
// around a note of what was left out.
func boundText(s string) string {
	if len(s) <= maxStatusText {
		return s
	}
	head, tail := maxStatusText*3/4, len(s)-maxStatusText/4
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	return s[:head] + fmt.Sprintf(" ... (%d bytes left out) ... ", tail-head) + s[tail:]
}

// The bounds of kube-apiserver's warning headers (its warning recorder's):
// warnings of up to warningTotalRunes runes in all are sent whole; past
// that, each is cut to warningItemRunes runes, and those after the total
// is reached again are dropped.
const (
	warningTotalRunes = 4 << 10
	warningItemRunes  = 256
)

// warningHeaders are the Warning header values kube-apiserver sends for the
// warnings texts, in order: each as apimachinery's NewWarningHeader makes it
// (a text it refuses, with control characters or invalid UTF-8, is
// dropped), within kube-apiserver's bounds.
func warningHeaders(texts []string) []string {
	var headers, recorded []string
	written, truncating := 0, false
	for _, text := range texts {
		if text == "" {
			continue
		}
		if truncating && written >= warningTotalRunes {
			break
		}
		recorded = append(recorded, text)
		n := utf8.RuneCountInString(text)
		if truncating && n > warningItemRunes {
			text, n = runePrefix(text, warningItemRunes), warningItemRunes
		}
		h, err := utilnet.NewWarningHeader(299, "", text)
		if err != nil {
			continue
		}
		if written+n <= warningTotalRunes || truncating {
			written += n
			headers = append(headers, h)
			continue
		}
		// Past the total: from here on every warning is cut, those
		// already sent too.
		truncating, written, headers = true, 0, nil
		for _, t := range recorded {
			m := utf8.RuneCountInString(t)
			if m > warningItemRunes {
				t, m = runePrefix(t, warningItemRunes), warningItemRunes
			}
			if h, err := utilnet.NewWarningHeader(299, "", t); err == nil {
				written += m
				headers = append(headers, h)
			}
		}
	}
	return headers
}

// runePrefix is string([]rune(s)[:n]) (invalid bytes become U+FFFD), for
// s of more than n runes.
func runePrefix(s string, n int) string {
	var b strings.Builder
	for _, r := range s {
		if n == 0 {
			break
		}
		b.WriteRune(r)
		n--
	}
	return b.String()
}

// writeError writes err as a Status.
func writeError(w http.ResponseWriter, err error, gr schema.GroupResource, name string) {
	writeStatus(w, statusFor(err, gr, name))
}

// writeJSON writes an answer encoded in JSON, in the encoding the request
// negotiated (negotiateAnswer; JSON if none).
func writeJSON(w http.ResponseWriter, code int, b []byte) {
	ct := "application/json"
	if nw := negotiatedOf(w); nw != nil && nw.answer != (answer{}) {
		out, err := nw.encode(nw.answer, b, nil)
		if err != nil {
			writeError(w, fmt.Errorf("encoding the answer in %s: %w", nw.answer.format.contentType(), err), schema.GroupResource{}, "")
			return
		}
		b, ct = out, nw.answer.format.contentType()
	}
	writeBody(w, code, ct, b)
}

// writeBody writes an encoded answer.
func writeBody(w http.ResponseWriter, code int, contentType string, b []byte) {
	h := w.Header()
	h.Set("Content-Type", contentType)
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
