package rest

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var pods = schema.GroupResource{Resource: "pods"}

func TestDecodeError(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		code   int
		header string // Retry-After; "" for none
		body   string
		check  func(error) bool
		// wantCode, wantDelay are the StatusError's code and
		// SuggestsClientDelay; wantMsg is its message.
		wantCode  int32
		wantDelay int
		wantMsg   string
	}{
		{"410 Expired Status", 410, "",
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}`,
			apierrors.IsResourceExpired, 410, 0, "too old resource version: 1 (5)"},
		{"Status without a code takes the answer's", 404, "",
			`{"kind":"Status","status":"Failure","message":"pods \"a\" not found","reason":"NotFound"}`,
			apierrors.IsNotFound, 404, 0, `pods "a" not found`},
		{"Status keeps its own code", 500, "",
			`{"kind":"Status","status":"Failure","message":"conflict","reason":"Conflict","code":409}`,
			apierrors.IsConflict, 409, 0, "conflict"},
		{"429 Retry-After seconds, Status without details", 429, "3",
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"slow down","reason":"TooManyRequests","code":429}`,
			apierrors.IsTooManyRequests, 429, 3, "slow down"},
		{"429 Retry-After HTTP-date, Status without details", 429, now.Add(4 * time.Second).Format(http.TimeFormat),
			`{"kind":"Status","status":"Failure","message":"slow down","reason":"TooManyRequests","code":429}`,
			apierrors.IsTooManyRequests, 429, 4, "slow down"},
		{"429 Status with its own retryAfterSeconds", 429, "5",
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"x","reason":"TooManyRequests","details":{"retryAfterSeconds":2},"code":429}`,
			apierrors.IsTooManyRequests, 429, 2, "x"},
		{"429 Status with details but no retryAfterSeconds", 429, "6",
			`{"kind":"Status","status":"Failure","message":"x","reason":"TooManyRequests","details":{"name":"a"},"code":429}`,
			apierrors.IsTooManyRequests, 429, 6, "x"},
		{"429 Retry-After, no body", 429, "5", "",
			apierrors.IsTooManyRequests, 429, 5, ""},
		{"429 HTTP-date in the past, no body", 429, now.Add(-time.Minute).Format(http.TimeFormat), "",
			apierrors.IsTooManyRequests, 429, 0, ""},
		{"410 without a Status", 410, "", "gone\n", apierrors.IsGone, 410, 0, ""},
		{"500 with text", 500, "", "  boom \n", apierrors.IsInternalError, 500, 0, `an error on the server ("boom") has prevented the request from succeeding (get pods)`},
		{"503 Retry-After, HTML body", 503, "7", "<html>down</html>", apierrors.IsServiceUnavailable, 503, 7, ""},
		{"a Success Status is not the error's", 403, "", `{"kind":"Status","status":"Success","code":200}`,
			apierrors.IsForbidden, 403, 0, ""},
		{"other JSON", 400, "", `{"kind":"Pod"}`, apierrors.IsBadRequest, 400, 0, ""},
		{"truncated Status", 422, "", `{"kind":"Status","status":"Fail`, apierrors.IsInvalid, 422, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.header != "" {
				h.Set("Retry-After", tt.header)
			}
			err := DecodeError(tt.code, h, []byte(tt.body), "get", pods, now)
			var se *apierrors.StatusError
			if !errors.As(err, &se) {
				t.Fatalf("error %T %v is not a StatusError", err, err)
			}
			if se.ErrStatus.Code != tt.wantCode || !tt.check(err) {
				t.Errorf("error %v (code %d, reason %s) fails its check; want code %d", err, se.ErrStatus.Code, se.ErrStatus.Reason, tt.wantCode)
			}
			d, _ := apierrors.SuggestsClientDelay(err)
			if d != tt.wantDelay {
				t.Errorf("suggested delay %d, want %d", d, tt.wantDelay)
			}
			if tt.wantMsg != "" && se.ErrStatus.Message != tt.wantMsg {
				t.Errorf("message %q, want %q", se.ErrStatus.Message, tt.wantMsg)
			}
		})
	}
}

// A generic error names the verb and resource, and carries the text of the
// body, as client-go's does.
func TestDecodeErrorGeneric(t *testing.T) {
	err := DecodeError(500, http.Header{}, []byte("boom\n"), "post", schema.GroupResource{Group: "apps", Resource: "deployments"}, time.Now())
	se := err.(*apierrors.StatusError)
	if se.ErrStatus.Details == nil || se.ErrStatus.Details.Group != "apps" || se.ErrStatus.Details.Kind != "deployments" {
		t.Errorf("details %+v, want group apps, kind deployments", se.ErrStatus.Details)
	}
	if len(se.ErrStatus.Details.Causes) != 1 || se.ErrStatus.Details.Causes[0].Message != "boom" {
		t.Errorf("causes %+v, want the body", se.ErrStatus.Details.Causes)
	}
	if !strings.Contains(se.ErrStatus.Message, "post deployments.apps") {
		t.Errorf("message %q does not name the request", se.ErrStatus.Message)
	}
}

// countingReader is an endless body that counts the bytes read from it.
type countingReader struct{ n int }

func (r *countingReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	r.n += len(p)
	return len(p), nil
}

// ResponseError reads at most MaxErrorBody bytes of an answer, however long.
func TestResponseErrorBounded(t *testing.T) {
	body := &countingReader{}
	resp := &http.Response{StatusCode: 503, Header: http.Header{"Retry-After": {"2"}}, Body: io.NopCloser(body)}
	err := ResponseError(resp, "list", pods)
	if !apierrors.IsServiceUnavailable(err) {
		t.Fatalf("error %v, want ServiceUnavailable", err)
	}
	if d, _ := apierrors.SuggestsClientDelay(err); d != 2 {
		t.Errorf("suggested delay %d, want 2", d)
	}
	if body.n > MaxErrorBody+64<<10 { // io.ReadAll reads in chunks
		t.Fatalf("%d bytes read, want at most about %d", body.n, MaxErrorBody)
	}
	var se *apierrors.StatusError
	if errors.As(err, &se) && len(se.ErrStatus.Details.Causes[0].Message) != MaxErrorBody {
		t.Errorf("message of %d bytes, want the first %d", len(se.ErrStatus.Details.Causes[0].Message), MaxErrorBody)
	}
}

// FuzzDecodeError: any body and Retry-After give a StatusError of a
// failure code with a bounded delay, without panicking.
func FuzzDecodeError(f *testing.F) {
	f.Add(429, "3", []byte(`{"kind":"Status","status":"Failure","reason":"TooManyRequests","code":429}`))
	f.Add(410, "", []byte(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","reason":"Expired","code":410}`))
	f.Add(503, "Wed, 21 Oct 2015 07:28:00 GMT", []byte("<html>"))
	f.Add(500, "", []byte(`{"kind":"Status","status":"Failure","details":{"causes":[{}],"retryAfterSeconds":-5}}`))
	f.Add(404, "x", []byte{0xff, 0})
	f.Add(429, "3", []byte(`{"kind":"Status","status":"Failure","details":{"retryAfterSeconds":-5}}`))
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, code int, retryAfter string, body []byte) {
		if code < 300 || code > 599 {
			code = 300 + (code%300+300)%300
		}
		err := DecodeError(code, http.Header{"Retry-After": {retryAfter}}, body, "get", pods, now)
		var se *apierrors.StatusError
		if !errors.As(err, &se) {
			t.Fatalf("error %T %v is not a StatusError", err, err)
		}
		if se.ErrStatus.Status != metav1.StatusFailure {
			t.Fatalf("status %q, want Failure", se.ErrStatus.Status)
		}
		if se.ErrStatus.Code == 0 {
			t.Fatal("no code")
		}
		// A Retry-After fills the delay, unless the Status has its own.
		if s, ok := ParseRetryAfter(retryAfter, now); ok && s > 0 {
			if d := se.ErrStatus.Details; d == nil || d.RetryAfterSeconds == 0 {
				t.Fatalf("Retry-After %q (%d s): details %+v", retryAfter, s, d)
			}
		}
		_ = err.Error()
	})
}
