package apiserver_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"kloop.dev/kloop/apiserver/apiservertest"
)

// BenchmarkTargetWrites measures writes over HTTP on the embedded server
// (in memory, and with a data directory: every write fdatasynced before
// it is answered) and on the real kube-apiserver (with etcd, which
// fdatasyncs its log too) in one run: creates of a ConfigMap by 4 clients
// in parallel and by 32, and server-side applies of a 20-field ConfigMap by
// two managers that each own 10 of its fields and change their values at
// each apply (4 clients). Each reports its rate and the 99th percentile of
// its requests' latency. The real target needs KLOOP_REAL_K8S_DIR
// (hack/realk8s.sh); without it that half is skipped.
//
//	KLOOP_REAL_K8S_DIR=$(bash hack/realk8s.sh) go test -run '^$' -bench BenchmarkTargetWrites -benchtime 3s ./apiserver/
func BenchmarkTargetWrites(b *testing.B) {
	type variant struct {
		name    string
		target  apiservertest.Target
		dataDir bool
	}
	var variants []variant
	for _, target := range apiservertest.Targets() {
		variants = append(variants, variant{string(target), target, false})
		if target == apiservertest.Embedded {
			variants = append(variants, variant{"embedded-datadir", target, true})
		}
	}
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			var opts apiservertest.Options
			if v.dataDir {
				opts.DataDir = b.TempDir()
			}
			env := apiservertest.Start(b, v.target, opts)
			hc := env.HTTPClient(nil)
			host := env.Config().Host
			cms := host + "/api/v1/namespaces/" + env.Namespace + "/configmaps"
			send := func(method, url, ct, body string, want int) {
				req, err := http.NewRequestWithContext(context.Background(), method, url, strings.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				req.Header.Set("Content-Type", ct)
				resp, err := hc.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				data, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != want {
					b.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, data)
				}
			}
			var n atomic.Int64
			for _, clients := range []int{4, 32} {
				name := "create"
				if clients != 4 {
					name = fmt.Sprintf("create-%dclients", clients)
				}
				b.Run(name, func(b *testing.B) {
					var lat latencies
					b.SetParallelism(max(clients/runtime.GOMAXPROCS(0), 1))
					b.RunParallel(func(pb *testing.PB) {
						var mine []time.Duration
						for pb.Next() {
							name := fmt.Sprintf("c-%d", n.Add(1))
							start := time.Now()
							send(http.MethodPost, cms, "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"`+name+`"},"data":{"v":"x"}}`, http.StatusCreated)
							mine = append(mine, time.Since(start))
						}
						lat.add(mine)
					})
					b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
					b.ReportMetric(lat.p99().Seconds()*1000, "p99-ms")
				})
			}
			// Four objects, one per client; managers alice and bob
			// alternate on each.
			for i := range 4 {
				send(http.MethodPost, cms, "application/json", fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a-%d"}}`, i), http.StatusCreated)
			}
			b.Run("apply", func(b *testing.B) {
				var client atomic.Int64
				var lat latencies
				b.SetParallelism(max(4/runtime.GOMAXPROCS(0), 1))
				b.RunParallel(func(pb *testing.PB) {
					name := fmt.Sprintf("a-%d", client.Add(1)-1)
					var mine []time.Duration
					for i := 0; pb.Next(); i++ {
						manager, first := "alice", 0
						if i%2 == 1 {
							manager, first = "bob", 10
						}
						var data []string
						for f := first; f < first+10; f++ {
							data = append(data, fmt.Sprintf(`"f%02d":"%s-%d"`, f, manager, i))
						}
						body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `"},"data":{` + strings.Join(data, ",") + `}}`
						start := time.Now()
						send(http.MethodPatch, cms+"/"+name+"?fieldManager="+manager, "application/apply-patch+yaml", body, http.StatusOK)
						mine = append(mine, time.Since(start))
					}
					lat.add(mine)
				})
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "applies/s")
				b.ReportMetric(lat.p99().Seconds()*1000, "p99-ms")
			})
		})
	}
}

// latencies collects the latencies of a benchmark's requests.
type latencies struct {
	mu  sync.Mutex
	all []time.Duration
}

func (l *latencies) add(d []time.Duration) {
	l.mu.Lock()
	l.all = append(l.all, d...)
	l.mu.Unlock()
}

// p99 is the 99th percentile.
func (l *latencies) p99() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.all) == 0 {
		return 0
	}
	slices.Sort(l.all)
	return l.all[len(l.all)*99/100]
}
