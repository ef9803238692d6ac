package cloud_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"kloop.dev/kloop/examples/cloud"
	"kloop.dev/kloop/examples/cloud/cloudclient"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var quiet = slog.New(slog.DiscardHandler)

// handlerTransport answers requests by calling a handler in the caller's
// goroutine: no sockets, so the tests run in a synctest bubble.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

// newCloud returns a cloud and a client calling it in memory.
func newCloud(t *testing.T, opts cloud.Options, copts cloudclient.Options) (*cloud.Cloud, *cloudclient.Client) {
	t.Helper()
	c, err := cloud.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	copts.HTTPClient = &http.Client{Transport: handlerTransport{c}}
	cc, err := cloudclient.New("http://cloud.invalid", copts)
	if err != nil {
		t.Fatal(err)
	}
	return c, cc
}

func small(token string, tags map[string]string) cloudclient.CreateInput {
	return cloudclient.CreateInput{ClientToken: token, Region: "local-1", Size: "small", Tags: tags}
}

func TestClientTokenIsIdempotent(t *testing.T) {
	ctx := context.Background()
	c, cc := newCloud(t, cloud.Options{}, cloudclient.Options{})
	a, err := cc.Create(ctx, small("tok-a", nil))
	if err != nil {
		t.Fatal(err)
	}
	again, err := cc.Create(ctx, small("tok-a", nil))
	if err != nil {
		t.Fatal(err)
	}
	if again.ID != a.ID {
		t.Errorf("the same client token made %s, then %s", a.ID, again.ID)
	}
	if _, err := cc.Create(ctx, cloudclient.CreateInput{ClientToken: "tok-a", Region: "local-1", Size: "large"}); !cloudclient.IsInvalid(err) {
		t.Errorf("token reused with another size: %v, want 409 IdempotentParameterMismatch", err)
	}
	// Deleted, the token still names it: a create does not resurrect it.
	if err := cc.Delete(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := cc.Create(ctx, small("tok-a", nil)); err != nil || got.ID != a.ID || got.Live() {
		t.Errorf("create with the token of a deleted instance: %+v, %v", got, err)
	}
	// Without a token every create makes an instance.
	for range 2 {
		if _, err := cc.Create(ctx, small("", nil)); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(c.Instances()); n != 3 {
		t.Errorf("%d instances, want 3", n)
	}
	if s := c.Stats(); s.Created != 3 || s.Live != 2 || s.Requests["create"] != 6 {
		t.Errorf("stats %+v", s)
	}
}

func TestDescribeByTag(t *testing.T) {
	ctx := context.Background()
	_, cc := newCloud(t, cloud.Options{}, cloudclient.Options{})
	mk := func(tok string, tags map[string]string) string {
		in, err := cc.Create(ctx, small(tok, tags))
		if err != nil {
			t.Fatal(err)
		}
		return in.ID
	}
	a := mk("a", map[string]string{"owner": "ns/a", "team": "x"})
	b := mk("b", map[string]string{"owner": "ns/b", "team": "x"})
	gone := mk("c", map[string]string{"owner": "ns/c", "team": "x"})
	if err := cc.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	moved := mk("d", map[string]string{"owner": "ns/d", "team": "x"})
	if _, err := cc.Modify(ctx, moved, cloudclient.ModifyInput{Tags: map[string]string{"owner": "ns/d", "team": "z"}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tags map[string]string
		want []string
	}{
		{map[string]string{"team": "x"}, []string{a, b}},
		{map[string]string{"team": "z"}, []string{moved}}, // found by its new tags only
		{map[string]string{"owner": "ns/d", "team": "x"}, nil},
		{map[string]string{"owner": "ns/b"}, []string{b}},
		{map[string]string{"owner": "ns/a", "team": "x"}, []string{a}},
		{map[string]string{"owner": "ns/a", "team": "y"}, nil},
		{map[string]string{"owner": "ns/c"}, nil}, // terminated: left out
		{nil, []string{a, b, moved}},
	} {
		got, err := cc.ListByTags(ctx, tc.tags)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, in := range got {
			ids = append(ids, in.ID)
		}
		if !reflect.DeepEqual(ids, tc.want) {
			t.Errorf("ListByTags(%v) = %v, want %v", tc.tags, ids, tc.want)
		}
	}
}

func TestLifecycleDelays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		_, cc := newCloud(t, cloud.Options{ProvisionDelay: 2 * time.Second}, cloudclient.Options{})
		in, err := cc.Create(ctx, small("t", nil))
		if err != nil {
			t.Fatal(err)
		}
		state := func() (cloudclient.State, string) {
			got, err := cc.Get(ctx, in.ID)
			if err != nil {
				t.Fatal(err)
			}
			return got.State, got.Endpoint
		}
		steps := []struct {
			after    time.Duration
			do       func()
			want     cloudclient.State
			endpoint bool
		}{
			{0, nil, cloudclient.Pending, false},
			{1999 * time.Millisecond, nil, cloudclient.Pending, false},
			{time.Millisecond, nil, cloudclient.Running, true},
			{0, func() {
				if _, err := cc.Modify(ctx, in.ID, cloudclient.ModifyInput{Size: "large"}); err != nil {
					t.Fatal(err)
				}
			}, cloudclient.Pending, false},
			{2 * time.Second, nil, cloudclient.Running, true},
			{0, func() {
				if err := cc.Delete(ctx, in.ID); err != nil {
					t.Fatal(err)
				}
			}, cloudclient.ShuttingDown, false},
			{2 * time.Second, nil, cloudclient.Terminated, false},
		}
		for i, s := range steps {
			time.Sleep(s.after)
			if s.do != nil {
				s.do()
			}
			got, ep := state()
			if got != s.want || (ep != "") != s.endpoint {
				t.Errorf("step %d: state %s endpoint %q, want %s (endpoint %v)", i, got, ep, s.want, s.endpoint)
			}
		}
	})
}

func TestEventuallyConsistentDescribe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		c, cc := newCloud(t, cloud.Options{VisibilityDelay: 3 * time.Second}, cloudclient.Options{})
		tags := map[string]string{"owner": "w"}
		in, err := cc.Create(ctx, small("t", tags))
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		if _, err := cc.Get(ctx, in.ID); !cloudclient.IsNotFound(err) {
			t.Errorf("describe of a new instance inside the window: %v, want 404", err)
		}
		if got, err := cc.ListByTags(ctx, tags); err != nil || len(got) != 0 {
			t.Errorf("describe by tag inside the window: %v, %v, want nothing", got, err)
		}
		// The control plane knows it: the token returns it, no duplicate.
		if again, err := cc.Create(ctx, small("t", tags)); err != nil || again.ID != in.ID {
			t.Errorf("create with the token inside the window: %+v, %v", again, err)
		}
		if n := len(c.Instances()); n != 1 {
			t.Errorf("%d instances, want 1", n)
		}
		time.Sleep(time.Second)
		if _, err := cc.Get(ctx, in.ID); err != nil {
			t.Errorf("describe after the window: %v", err)
		}
		if got, err := cc.ListByTags(ctx, tags); err != nil || len(got) != 1 {
			t.Errorf("describe by tag after the window: %v, %v", got, err)
		}
	})
}

func TestThrottlingRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		opts := cloud.Options{RateLimit: 1, Burst: 1, RetryAfter: 2 * time.Second}
		c, cc := newCloud(t, opts, cloudclient.Options{})
		start := time.Now()
		for range 2 {
			if _, err := cc.ListByTags(ctx, nil); err != nil {
				t.Fatal(err)
			}
		}
		// The second request was throttled and sent again after the
		// Retry-After (2 s), when the bucket had refilled.
		if d := time.Since(start); d != 2*time.Second {
			t.Errorf("two requests took %v, want the Retry-After, 2s", d)
		}
		if s, cs := c.Stats(), cc.Stats(); s.Throttled != 1 || cs.Throttled != 1 || cs.Requests != 3 {
			t.Errorf("cloud stats %+v, client stats %+v: want one 429 and three requests", s, cs)
		}

		// A client that does not retry gets the 429 with its Retry-After.
		_, noRetry := newCloud(t, opts, cloudclient.Options{MaxRetries: -1})
		_, _ = noRetry.ListByTags(ctx, nil)
		_, err := noRetry.ListByTags(ctx, nil)
		var e *cloudclient.Error
		if !cloudclient.IsThrottled(err) || !errors.As(err, &e) || e.RetryAfter != 2*time.Second {
			t.Errorf("second request without retries: %v, want 429 with Retry-After 2s", err)
		}
		// Nor does one whose limit on the wait is shorter.
		_, impatient := newCloud(t, opts, cloudclient.Options{MaxRetryAfter: time.Second})
		_, _ = impatient.ListByTags(ctx, nil)
		if _, err := impatient.ListByTags(ctx, nil); !cloudclient.IsThrottled(err) {
			t.Errorf("Retry-After beyond MaxRetryAfter: %v, want the 429", err)
		}
	})
}

// Injected failures come at the configured rate; half the failed creates
// happen after the instance was made, and retrying with the client token
// still leaves exactly one instance per token.
func TestFailureRate(t *testing.T) {
	ctx := context.Background()
	c, cc := newCloud(t, cloud.Options{FailureRate: 0.3, Seed: 42}, cloudclient.Options{})
	const tokens = 400
	failures := 0
	for i := range tokens {
		tok := fmt.Sprintf("tok-%d", i)
		for {
			_, err := cc.Create(ctx, small(tok, map[string]string{"tok": tok}))
			if err == nil {
				break
			}
			var e *cloudclient.Error
			if !errors.As(err, &e) || e.StatusCode != http.StatusInternalServerError {
				t.Fatalf("create: %v", err)
			}
			failures++
		}
	}
	s := c.Stats()
	if int(s.Failed) != failures {
		t.Errorf("cloud counted %d failures, the client saw %d", s.Failed, failures)
	}
	rate := float64(failures) / float64(s.Requests["create"])
	if rate < 0.2 || rate > 0.4 {
		t.Errorf("failure rate %.2f, want about 0.3", rate)
	}
	if n := len(c.Instances()); n != tokens {
		t.Errorf("%d instances for %d tokens", n, tokens)
	}
}

func TestInvalidRequests(t *testing.T) {
	c, err := cloud.New(cloud.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, method, path, body string
		code                     int
	}{
		{"bad size", "POST", "/v1/instances", `{"region":"local-1","size":"huge"}`, 400},
		{"bad region", "POST", "/v1/instances", `{"region":"Local 1","size":"small"}`, 400},
		{"empty tag key", "POST", "/v1/instances", `{"region":"local-1","size":"small","tags":{"":"x"}}`, 400},
		{"'=' in a tag key", "POST", "/v1/instances", `{"region":"local-1","size":"small","tags":{"a=b":"x"}}`, 400},
		{"unknown field", "POST", "/v1/instances", `{"region":"local-1","size":"small","color":"red"}`, 400},
		{"not JSON", "POST", "/v1/instances", `{`, 400},
		{"bad tag filter", "GET", "/v1/instances?tag=novalue", "", 400},
		{"unknown instance", "GET", "/v1/instances/i-nope", "", 404},
		{"modify unknown", "PATCH", "/v1/instances/i-nope", `{"size":"large"}`, 404},
		{"delete unknown", "DELETE", "/v1/instances/i-nope", "", 404},
		{"method", "PUT", "/v1/instances", `{}`, 405},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			c.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body)))
			if rec.Code != tc.code {
				t.Errorf("%s %s: %d %s, want %d", tc.method, tc.path, rec.Code, rec.Body, tc.code)
			}
		})
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts cloud.Options
		want string
	}{
		{"negative delay", cloud.Options{ProvisionDelay: -1}, "ProvisionDelay"},
		{"negative visibility", cloud.Options{VisibilityDelay: -time.Second}, "VisibilityDelay"},
		{"failure rate above 1", cloud.Options{FailureRate: 1.5}, "FailureRate"},
		{"negative rate", cloud.Options{RateLimit: -2}, "RateLimit"},
		{"negative burst", cloud.Options{Burst: -1}, "Burst"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := cloud.New(tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: %v, want an error about %s", err, tc.want)
			}
		})
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "state.json")
	if err := os.WriteFile(bad, []byte("{nope"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := cloud.New(cloud.Options{StateFile: bad}); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("New with a corrupt state file: %v", err)
	}
	behind := filepath.Join(dir, "behind.json")
	if err := os.WriteFile(behind, []byte(`{"nextID":1,"instances":[{"id":"i-00000000000a","region":"local-1","size":"small","state":"running"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := cloud.New(cloud.Options{StateFile: behind}); err == nil || !strings.Contains(err.Error(), "nextID 1 is behind") {
		t.Errorf("New with a state file whose nextID is behind its instances: %v", err)
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// start serves c on a loopback port until the test ends.
func start(t *testing.T, c *cloud.Cloud) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	select {
	case <-c.Ready():
	case err := <-done:
		cancel()
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// A Start that cannot listen says why, and does not leave Ready's waiters
// waiting; a second Start of the same cloud is refused.
func TestStartListenFailure(t *testing.T) {
	a, err := cloud.New(cloud.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	stop := start(t, a)
	defer stop()
	taken := strings.TrimPrefix(a.URL(), "http://")
	b, err := cloud.New(cloud.Options{Addr: taken, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "cloud:") {
		t.Errorf("Start on a taken address: %v", err)
	}
	select {
	case <-b.Ready():
	case <-time.After(5 * time.Second):
		t.Fatal("Ready still open after Start failed")
	}
	if u := b.URL(); u != "" {
		t.Errorf("URL after a failed Start: %q", u)
	}
	if err := a.Start(context.Background()); err == nil {
		t.Error("a second Start of a running cloud was not refused")
	}
}

func TestStateFileRoundTrip(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cloud.json")
	c, err := cloud.New(cloud.Options{StateFile: path, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	stop := start(t, c)
	cc, err := cloudclient.New(c.URL(), cloudclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := cc.Create(ctx, small("a", map[string]string{"k": "v"}))
	if err != nil {
		t.Fatal(err)
	}
	b, err := cc.Create(ctx, small("b", nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := cc.Delete(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	stop()
	before := c.Instances()

	c2, err := cloud.New(cloud.Options{StateFile: path, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	after := c2.Instances()
	if !reflect.DeepEqual(jsonOf(t, before), jsonOf(t, after)) {
		t.Errorf("after a restart:\n%+v\nwant\n%+v", after, before)
	}
	start(t, c2)
	cc2, err := cloudclient.New(c2.URL(), cloudclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The tag index came back: a is found by its tag.
	if got, err := cc2.ListByTags(ctx, map[string]string{"k": "v"}); err != nil || len(got) != 1 || got[0].ID != a.ID {
		t.Errorf("describe by tag after a restart: %+v, %v; want %s", got, err, a.ID)
	}
	// The tokens and the ID counter came back too.
	if again, err := cc2.Create(ctx, small("a", map[string]string{"k": "v"})); err != nil || again.ID != a.ID {
		t.Errorf("token after a restart: %+v, %v; want %s", again, err, a.ID)
	}
	if n, err := cc2.Create(ctx, small("c", nil)); err != nil || n.ID == a.ID || n.ID == b.ID {
		t.Errorf("new instance after a restart: %+v, %v", n, err)
	}
}

// Many clients over real HTTP, racing on the same tokens: one instance per
// token (run with -race).
func TestConcurrentCreates(t *testing.T) {
	ctx := context.Background()
	c, err := cloud.New(cloud.Options{ProvisionDelay: time.Millisecond, VisibilityDelay: time.Millisecond, FailureRate: 0.01, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	start(t, c)
	cc, err := cloudclient.New(c.URL(), cloudclient.Options{MaxRetries: 20})
	if err != nil {
		t.Fatal(err)
	}
	const workers, tokens = 8, 100
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range tokens {
				tok := fmt.Sprintf("tok-%d", (i+w*13)%tokens)
				in, err := cc.Create(ctx, small(tok, map[string]string{"tok": tok}))
				for cloudclient.IsInternal(err) { // an injected failure: ask again
					in, err = cc.Create(ctx, small(tok, map[string]string{"tok": tok}))
				}
				if err == nil {
					_, err = cc.ListByTags(ctx, map[string]string{"tok": tok})
				}
				if err == nil && w%2 == 0 {
					_, err = cc.Modify(ctx, in.ID, cloudclient.ModifyInput{Tags: map[string]string{"tok": tok, "w": "even"}})
				}
				if cloudclient.IsInternal(err) {
					err = nil
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := len(c.Instances()); n != tokens {
		t.Errorf("%d instances for %d tokens", n, tokens)
	}
}
