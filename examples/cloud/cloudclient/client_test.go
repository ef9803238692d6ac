package cloudclient_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"kloop.dev/kloop/examples/cloud/cloudclient"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestNewRejectsBadURLs(t *testing.T) {
	for _, u := range []string{"", "cloud:7070", "ftp://host", "http://", "http://[::1"} {
		if _, err := cloudclient.New(u, cloudclient.Options{}); err == nil {
			t.Errorf("New(%q) accepted it", u)
		}
	}
	if _, err := cloudclient.New("http://127.0.0.1:1", cloudclient.Options{MaxRetryAfter: -time.Second}); err == nil {
		t.Error("a negative MaxRetryAfter was accepted")
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// respond answers every request with code, header Retry-After and body.
func respond(code int, retryAfter, body string, calls *int) *http.Client {
	return &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		*calls++
		rec := httptest.NewRecorder()
		if retryAfter != "" {
			rec.Header().Set("Retry-After", retryAfter)
		}
		rec.WriteHeader(code)
		rec.WriteString(body)
		return rec.Result(), nil
	})}
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		name         string
		code         int
		retryAfter   string
		body         string
		wantCode     string
		wantNotFound bool
		wantCalls    int
	}{
		{"cloud error", 404, "", `{"code":"NotFound","message":"no"}`, "NotFound", true, 1},
		{"not JSON", 502, "", "bad gateway\n", "Bad Gateway", false, 1},
		{"throttled, retried", 429, "0", `{"code":"Throttled","message":"slow down"}`, "Throttled", false, 3},
		{"throttled, unparsable Retry-After", 429, "soon", `{"code":"Throttled"}`, "Throttled", false, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			c, err := cloudclient.New("http://cloud.invalid", cloudclient.Options{HTTPClient: respond(tc.code, tc.retryAfter, tc.body, &calls), MaxRetries: 2})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Get(context.Background(), "i-1")
			var e *cloudclient.Error
			if !errors.As(err, &e) || e.StatusCode != tc.code || e.Code != tc.wantCode {
				t.Fatalf("error %#v, want status %d code %q", err, tc.code, tc.wantCode)
			}
			if cloudclient.IsNotFound(err) != tc.wantNotFound {
				t.Errorf("IsNotFound = %v", !tc.wantNotFound)
			}
			if calls != tc.wantCalls {
				t.Errorf("%d calls, want %d", calls, tc.wantCalls)
			}
		})
	}
}

// A context cancelled during the wait for a retry ends the call.
func TestRetryWaitHonoursContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		c, err := cloudclient.New("http://cloud.invalid", cloudclient.Options{HTTPClient: respond(429, "5", `{"code":"Throttled"}`, &calls)})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 7*time.Second)
		defer cancel()
		start := time.Now()
		_, err = c.ListByTags(ctx, map[string]string{"a": "b"})
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "429") {
			t.Errorf("error %v, want the deadline while waiting after a 429", err)
		}
		if d := time.Since(start); d != 7*time.Second || calls != 2 {
			t.Errorf("gave up after %v and %d calls, want 7s and 2", d, calls)
		}
	})
}
