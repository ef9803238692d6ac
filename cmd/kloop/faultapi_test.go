package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"kloop.dev/kloop/internal/testutil"
)

// kloop apiserver --fault-api serves the faults as JSON on a loopback
// address: a fault put in effect over it fails the next request, the
// record shows it, and requests without the server's token are refused.
func TestFaultAPICommand(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut testutil.SyncBuffer
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"apiserver", "--tls=false", "--token", "t0ken", "--fault-api", "127.0.0.1:0"}, &out, &errOut)
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("exit code %d, stderr %q", code, errOut.String())
		}
	}()
	apiRE := regexp.MustCompile(`fault API listening on (http://127\.0\.0\.1:\d+)`)
	serverRE := regexp.MustCompile(`kloop apiserver listening on (http://127\.0\.0\.1:\d+)\n`)
	deadline := time.Now().Add(10 * time.Second)
	for serverRE.FindStringSubmatch(out.String()) == nil || apiRE.FindStringSubmatch(out.String()) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("stdout %q stderr %q", out.String(), errOut.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	api := apiRE.FindStringSubmatch(out.String())[1]
	serverURL := serverRE.FindStringSubmatch(out.String())[1]
	call := func(token, method, path, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, api+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		token, method, path, body string
		code                      int
		want                      string
	}{
		{"wrong", "GET", "/faults", "", 401, "token"},
		{"t0ken", "POST", "/record", `{}`, 200, "{}"},
		{"t0ken", "POST", "/faults", `{"fault":"Fail","match":{"verb":"get","resource":"namespaces"},"failure":{"code":503}}`, 201, `"id":"1"`},
		{"t0ken", "POST", "/faults", `{"client":{"user":"nobody"},"fault":"HoldWatches"}`, 201, `"fault":"HoldWatches() for user \"nobody\""`},
		{"t0ken", "GET", "/faults", "", 200, `[{"id":"1","fault":"Fail(verb=get resource=namespaces, 1, 503) for any client","hits":0},{"id":"2"`},
		{"t0ken", "POST", "/faults", `{"fault":"Nope"}`, 400, "unknown fault"},
		{"t0ken", "POST", "/faults", `{"fault":"HoldWatches","n":2}`, 400, `takes no \"n\"`},
		{"t0ken", "POST", "/faults", `{"fault":"DelayWatches"}`, 400, `needs \"delay\"`},
		{"t0ken", "POST", "/faults", `{"fault":"DelayWatches","delay":"soon"}`, 400, "invalid duration"},
		{"t0ken", "POST", "/faults", `{"fault":"Fail","failure":{"code":404}}`, 400, "409, 429, 500, 503 or 504"},
		{"t0ken", "POST", "/faults", `{"fault":"HoldWatches","extra":1}`, 400, "unknown field"},
		{"t0ken", "POST", "/compact", `{"resource":"nothings"}`, 400, "does not serve"},
		{"t0ken", "POST", "/drop-watches", `{"client":{"user":"nobody"}}`, 200, `{"dropped":0}`},
		{"t0ken", "DELETE", "/faults/2", "", 200, `"id":"2"`},
		{"t0ken", "DELETE", "/faults/9", "", 404, "no fault"},
	} {
		if code, body := call(tc.token, tc.method, tc.path, tc.body); code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("%s %s %s: %d %s, want %d with %s", tc.method, tc.path, tc.body, code, body, tc.code, tc.want)
		}
	}
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: serverURL, BearerToken: "t0ken"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); !apierrors.IsServiceUnavailable(err) {
		t.Fatalf("GET under the fault: %v", err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("GET after the fault: %v", err)
	}
	code, body := call("t0ken", "GET", "/record?verb=get&resource=namespaces", "")
	var rec struct {
		Requests []struct {
			User  string `json:"user"`
			Code  int    `json:"code"`
			Fault string `json:"fault"`
		} `json:"requests"`
	}
	if err := json.Unmarshal([]byte(body), &rec); code != 200 || err != nil || fmt.Sprint(rec.Requests) != "[{kloop-admin 503 Fail(verb=get resource=namespaces, 1, 503) for any client} {kloop-admin 200 }]" {
		t.Errorf("record: %d %s", code, body)
	}
	if code, body := call("t0ken", "GET", "/faults", ""); code != 200 || body != "[]\n" {
		t.Errorf("faults in effect after the spent one: %d %s", code, body)
	}
}
