package rest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// MaxErrorBody bounds how much of an error answer ResponseError reads.
const MaxErrorBody = 1 << 20

// ResponseError returns the error of resp, an answer that is not a
// success: it reads at most MaxErrorBody bytes of the body (it does not
// close it) and decodes them with DecodeError. verb ("list", "get"…) and
// gr name the request in a generic error's message.
func ResponseError(resp *http.Response, verb string, gr schema.GroupResource) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, MaxErrorBody))
	return DecodeError(resp.StatusCode, resp.Header, body, verb, gr, time.Now())
}

// DecodeError turns an error answer — its status code, header and body —
// into a *apierrors.StatusError: the Status the server sent if body is one
// (in JSON, or in protobuf when the Content-Type says so; kind Status,
// status Failure; code, if it has none, from the answer),
// else apierrors.NewGenericServerResponse for the code with the body as
// its message. A Retry-After header (delay-seconds, or an HTTP-date read
// against now) fills Details.RetryAfterSeconds when the Status does not
// say, so that apierrors.SuggestsClientDelay sees it.
func DecodeError(code int, h http.Header, body []byte, verb string, gr schema.GroupResource, now time.Time) error {
	ra, _ := ParseRetryAfter(h.Get("Retry-After"), now)
	var st metav1.Status
	err := json.Unmarshal(body, &st)
	if IsProtobuf(h.Get("Content-Type")) {
		var pst *metav1.Status
		if pst, err = DecodeProtobufStatus(body); err == nil {
			st = *pst
		}
	}
	if err == nil && st.Kind == "Status" && st.Status == metav1.StatusFailure {
		if st.Code == 0 {
			st.Code = int32(code)
		}
		if ra > 0 {
			if st.Details == nil {
				st.Details = &metav1.StatusDetails{}
			}
			if st.Details.RetryAfterSeconds == 0 {
				st.Details.RetryAfterSeconds = int32(ra)
			}
		}
		return &apierrors.StatusError{ErrStatus: st}
	}
	return apierrors.NewGenericServerResponse(code, verb, gr, "", strings.TrimSpace(string(body)), ra, true)
}
