package apiservertest_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"kloop.dev/kloop/apiserver"
	"kloop.dev/kloop/apiserver/apiservertest"
)

// Any body sent to the fault API gets an answer of its own (201 or 200 for
// what it accepts, 400 for the rest, JSON either way), never a panic.
func FuzzFaultAPI(f *testing.F) {
	srv, err := apiserver.New(apiserver.Options{Token: "t"})
	if err != nil {
		f.Fatal(err)
	}
	faults := apiservertest.NewFaults(srv)
	h := faults.Handler("t")
	paths := []string{"/faults", "/drop-watches", "/compact", "/record"}
	for _, seed := range []struct {
		path uint8
		body string
	}{
		{0, `{"fault":"Fail","match":{"verb":"get","resource":"namespaces"},"failure":{"code":503,"retryAfter":"1s"},"n":2}`},
		{0, `{"client":{"user":"u"},"fault":"DelayWatches","delay":"500ms","releaseAfter":"1h"}`},
		{0, `{"client":{"token":"x"},"fault":"StaleReads","revision":1}`},
		{0, `{"fault":"HoldWatches","n":1}`},
		{0, `{"fault":"ExpireWatches"}{}`},
		{1, `{"client":{"user":"u","token":"x"}}`},
		{2, `{"resource":"deployments.apps","revision":-1}`},
		{3, `{"size":-5}`},
	} {
		f.Add(seed.path, seed.body)
	}
	f.Fuzz(func(t *testing.T, path uint8, body string) {
		defer faults.ReleaseAll()
		req := httptest.NewRequest(http.MethodPost, paths[int(path)%len(paths)], strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer t")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusOK, http.StatusCreated, http.StatusBadRequest:
		default:
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("not JSON: %q", rec.Body)
		}
	})
}
