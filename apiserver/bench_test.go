package apiserver_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"

	"kloop.dev/kloop/apiserver"
)

// BenchmarkNewToReady measures the time from New to a server that accepts
// connections (one op: New, Serve, Ready; the shutdown is outside the timer).
func BenchmarkNewToReady(b *testing.B) {
	for _, useTLS := range []bool{false, true} {
		b.Run(fmt.Sprintf("tls=%v", useTLS), func(b *testing.B) {
			for b.Loop() {
				srv, err := apiserver.New(apiserver.Options{TLS: useTLS})
				if err != nil {
					b.Fatal(err)
				}
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error)
				go func() { done <- srv.Serve(ctx, ln) }()
				<-srv.Ready()
				b.StopTimer()
				cancel()
				if err := <-done; err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

// benchServer starts a plain-HTTP server for benchmarks.
func benchServer(b *testing.B, opts apiserver.Options) (*apiserver.Server, *http.Client) {
	srv, err := apiserver.New(opts)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- srv.Start(ctx) }()
	<-srv.Ready()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	b.Cleanup(func() {
		cancel()
		<-done
		client.CloseIdleConnections()
	})
	return srv, client
}

func send(b *testing.B, srv *apiserver.Server, client *http.Client, method, path, body string, want int) {
	req, err := http.NewRequest(method, srv.URL()+path, strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+srv.Token())
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	var sb strings.Builder
	_, _ = bufio.NewReader(resp.Body).WriteTo(&sb)
	resp.Body.Close()
	if resp.StatusCode != want {
		b.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, sb.String())
	}
}

const cmPath = "/api/v1/namespaces/default/configmaps"

func cmBody(name, v string) string {
	return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `","labels":{"app":"bench"}},"data":{"v":"` + v + `"}}`
}

// BenchmarkCreate measures ConfigMap creates over HTTP (4 clients in parallel).
func BenchmarkCreate(b *testing.B) {
	srv, client := benchServer(b, apiserver.Options{})
	var mu sync.Mutex
	n := 0
	b.SetParallelism(2)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			mu.Lock()
			n++
			name := fmt.Sprintf("cm-%d", n)
			mu.Unlock()
			send(b, srv, client, "POST", cmPath, cmBody(name, "x"), http.StatusCreated)
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
}

// BenchmarkUpdate measures unconditional ConfigMap updates over HTTP.
func BenchmarkUpdate(b *testing.B) {
	srv, client := benchServer(b, apiserver.Options{})
	send(b, srv, client, "POST", cmPath, cmBody("u", "0"), http.StatusCreated)
	i := 0
	for b.Loop() {
		i++
		send(b, srv, client, "PUT", cmPath+"/u", cmBody("u", fmt.Sprint(i)), http.StatusOK)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "updates/s")
}

// BenchmarkWatchFanOut writes 10,000 events and delivers each to 100 HTTP
// watch streams; one op is the whole fan-out (1,000,000 deliveries).
func BenchmarkWatchFanOut(b *testing.B) {
	const events, watchers = 10_000, 100
	for b.Loop() {
		b.StopTimer()
		srv, client := benchServer(b, apiserver.Options{HistoryEvents: events})
		const writers = 10
		for w := range writers {
			send(b, srv, client, "POST", cmPath, cmBody(fmt.Sprint("f", w), "0"), http.StatusCreated)
		}
		var ready, wg sync.WaitGroup
		for range watchers {
			ready.Add(1)
			wg.Go(func() {
				req, _ := http.NewRequest("GET", srv.URL()+cmPath+"?watch=true&resourceVersion=1", nil)
				req.Header.Set("Authorization", "Bearer "+srv.Token())
				resp, err := client.Do(req)
				ready.Done()
				if err != nil {
					b.Error(err)
					return
				}
				defer resp.Body.Close()
				sc := bufio.NewScanner(resp.Body)
				sc.Buffer(make([]byte, 64<<10), 1<<20)
				for n := 0; n < events; n++ {
					if !sc.Scan() {
						b.Errorf("watch ended after %d events: %v", n, sc.Err())
						return
					}
				}
			})
		}
		ready.Wait()
		b.StartTimer()
		// Ten writers update over HTTP; the timer covers the writes and the deliveries.
		var wwg sync.WaitGroup
		for w := range writers {
			wwg.Go(func() {
				name := fmt.Sprint("f", w)
				for i := 1; i < events/writers; i++ {
					send(b, srv, client, "PUT", cmPath+"/"+name, cmBody(name, fmt.Sprint(i)), http.StatusOK)
				}
			})
		}
		wwg.Wait()
		wg.Wait()
	}
	b.ReportMetric(float64(events*watchers)*float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
}

// BenchmarkHandler measures the server's own cost per request, in process
// (no network): create, update, merge patch and get of a ConfigMap.
func BenchmarkHandler(b *testing.B) {
	srv, err := apiserver.New(apiserver.Options{Token: "t"})
	if err != nil {
		b.Fatal(err)
	}
	h := srv.Handler()
	do := func(method, path, body string, want int) {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer t")
		req.Header.Set("Content-Type", "application/json")
		if method == http.MethodPatch {
			req.Header.Set("Content-Type", "application/merge-patch+json")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			b.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
		}
	}
	created := 0 // across runs (-count): names are not reused
	b.Run("create", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			created++
			i := created
			do("POST", cmPath, cmBody(fmt.Sprint("h", i), "x"), http.StatusCreated)
		}
	})
	do("POST", cmPath, cmBody("hu", "0"), http.StatusCreated)
	b.Run("update", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			do("PUT", cmPath+"/hu", cmBody("hu", fmt.Sprint(i)), http.StatusOK)
		}
	})
	b.Run("patch", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			do("PATCH", cmPath+"/hu", `{"data":{"v":"p`+fmt.Sprint(i)+`"}}`, http.StatusOK)
		}
	})
	b.Run("get", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			do("GET", cmPath+"/hu", "", http.StatusOK)
		}
	})
}

// discardWatch is a ResponseWriter for an in-process watch: it counts the
// events written (one per line) and keeps nothing.
type discardWatch struct {
	h      http.Header
	mu     sync.Mutex // guards events and cond's waiters
	cond   *sync.Cond
	events int
}

func newDiscardWatch() *discardWatch {
	d := &discardWatch{h: http.Header{}}
	d.cond = sync.NewCond(&d.mu)
	return d
}

func (d *discardWatch) Header() http.Header { return d.h }
func (d *discardWatch) WriteHeader(int)     {}
func (d *discardWatch) Flush()              {}
func (d *discardWatch) Write(p []byte) (int, error) {
	n := bytes.Count(p, []byte("\n"))
	d.mu.Lock()
	d.events += n
	d.cond.Broadcast()
	d.mu.Unlock()
	return len(p), nil
}

// wait blocks until n events were written.
func (d *discardWatch) wait(n int) {
	d.mu.Lock()
	for d.events < n {
		d.cond.Wait()
	}
	d.mu.Unlock()
}

// processCPU returns the CPU time (user and system) used by the process so
// far, in nanoseconds: on a shared machine it measures a benchmark's cost
// better than the elapsed time.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkHandlerPut measures an update (PUT) of a small ConfigMap through
// the server's handler in process, as bench/'s e2eDirect writer sends it,
// with 0, 1 and 2 watches of the namespace served in process (they encode
// and deliver the events alongside the PUTs, and every event reaches every
// watch before the benchmark ends). cpu-ns/op is the process's CPU time per
// PUT (the GC's and the watches' included).
func BenchmarkHandlerPut(b *testing.B) {
	for _, watchers := range []int{0, 1, 2} {
		b.Run(fmt.Sprintf("watchers=%d", watchers), func(b *testing.B) {
			srv, err := apiserver.New(apiserver.Options{Token: "t", HistoryEvents: 1000})
			if err != nil {
				b.Fatal(err)
			}
			h := srv.Handler()
			body := func(seq int) string {
				return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"p","namespace":"default","labels":{"app":"bench"}},"data":{"seq":"` + fmt.Sprint(seq) + `"}}`
			}
			do := func(method, path, body string, want int) {
				req := httptest.NewRequest(method, path, strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer t")
				req.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != want {
					b.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
				}
			}
			do("POST", cmPath, body(-1), http.StatusCreated)
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			ws := make([]*discardWatch, watchers)
			for i := range ws {
				ws[i] = newDiscardWatch()
				req := httptest.NewRequest("GET", cmPath+"?watch=true&resourceVersion=0", nil).WithContext(ctx)
				req.Header.Set("Authorization", "Bearer t")
				wg.Go(func() { h.ServeHTTP(ws[i], req) })
				ws[i].wait(1) // the initial ADDED event
			}
			defer func() {
				cancel()
				wg.Wait()
			}()
			b.ReportAllocs()
			cpu0 := processCPU()
			seq := 0
			for b.Loop() {
				do("PUT", cmPath+"/p", body(seq), http.StatusOK)
				seq++
			}
			for _, w := range ws {
				w.wait(1 + seq)
			}
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// cronJobPath is where the custom resources of testdata/cronjobs.yaml (a
// kubebuilder CronJob: defaults, an enum, formats, a list map, a set, a
// CEL rule, the status and scale subresources) live.
const cronJobPath = "/apis/batch.tutorial.kubebuilder.io/v1/namespaces/default/cronjobs"

func cronJobBody(name string, replicas int) string {
	return `{"apiVersion":"batch.tutorial.kubebuilder.io/v1","kind":"CronJob","metadata":{"name":"` + name + `","labels":{"app":"bench"}},` +
		`"spec":{"schedule":"*/5 * * * *","jobTemplate":{"spec":{"template":{}}},"replicas":` + fmt.Sprint(replicas) + `,` +
		`"ports":[{"containerPort":80},{"containerPort":443,"protocol":"TCP"}],"resources":{"cpu":"100m","memory":1024},` +
		`"selector":{"matchLabels":{"a":"b"}},"tags":["x","y"],"unknown":1}}`
}

// BenchmarkCustomResource measures the server's own cost per write of a
// custom resource, in process (no network): the create and the update
// (PUT, the spec changed) of a kubebuilder CronJob, whose schema is
// pruned, defaulted and validated (CEL rule included) on each, and the
// create of a CRD to the first list of its resource ("crd", one op: POST
// the CRD, GET the list; a new CRD name each time). The update's op
// includes the GET it takes the resourceVersion from. cpu-ns/op is the
// process's CPU time per op, steadier than the elapsed time on a shared
// machine.
func BenchmarkCustomResource(b *testing.B) {
	srv, err := apiserver.New(apiserver.Options{Token: "t", CRDPaths: []string{"testdata/cronjobs.yaml"}})
	if err != nil {
		b.Fatal(err)
	}
	h := srv.Handler()
	do := func(method, path, body string, want int) string {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer t")
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			b.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
		}
		return rec.Body.String()
	}
	created := 0 // across runs (-count): names are not reused
	b.Run("create", func(b *testing.B) {
		b.ReportAllocs()
		cpu0 := processCPU()
		for b.Loop() {
			created++
			do("POST", cronJobPath, cronJobBody(fmt.Sprint("c", created), 1), http.StatusCreated)
		}
		b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
	})
	do("POST", cronJobPath, cronJobBody("u", 0), http.StatusCreated)
	b.Run("update", func(b *testing.B) {
		b.ReportAllocs()
		cpu0 := processCPU()
		i := 0
		for b.Loop() {
			i++
			// No resourceVersion: custom resources need one, so take it
			// from the last answer.
			cur := do("GET", cronJobPath+"/u", "", http.StatusOK)
			rv := cur[strings.Index(cur, `"resourceVersion":"`)+len(`"resourceVersion":"`):]
			rv = rv[:strings.IndexByte(rv, '"')]
			body := strings.Replace(cronJobBody("u", i%100), `"labels"`, `"resourceVersion":"`+rv+`","labels"`, 1)
			do("PUT", cronJobPath+"/u", body, http.StatusOK)
		}
		b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
	})
	crds := 0
	b.Run("crd", func(b *testing.B) {
		b.ReportAllocs()
		cpu0 := processCPU()
		for b.Loop() {
			crds++
			plural := fmt.Sprintf("things%d", crds)
			do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", benchCRD(plural), http.StatusCreated)
			do("GET", "/apis/bench.example.com/v1/namespaces/default/"+plural, "", http.StatusOK)
		}
		b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
	})
}

// benchCRD is a CRD of bench.example.com with a small schema: a default,
// an enum, a pattern, a list map, a CEL rule, status and printer columns.
func benchCRD(plural string) string {
	return `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"` + plural + `.bench.example.com"},` +
		`"spec":{"group":"bench.example.com","scope":"Namespaced","names":{"plural":"` + plural + `","kind":"T` + plural + `"},` +
		`"versions":[{"name":"v1","served":true,"storage":true,"subresources":{"status":{}},` +
		`"additionalPrinterColumns":[{"name":"Size","type":"integer","jsonPath":".spec.size"}],` +
		`"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object",` +
		`"x-kubernetes-validations":[{"rule":"self.size >= 0","message":"size must not be negative"}],` +
		`"properties":{"size":{"type":"integer","default":1},"mode":{"type":"string","enum":["a","b"]},"name":{"type":"string","pattern":"^[a-z]+$"},` +
		`"ports":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["port"],"items":{"type":"object","required":["port"],"properties":{"port":{"type":"integer"}}}}}},` +
		`"status":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}}}]}}`
}
