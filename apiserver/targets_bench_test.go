package apiserver_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"kloop.dev/kloop/apiserver/apiservertest"
)

// BenchmarkTargetWrites measures writes over HTTP on the embedded server
// (in memory, and with a data directory: every write fdatasynced before
// it is answered) and on the real kube-apiserver (with etcd, which
// fdatasyncs its log too) in one run, the servers of one measurement one
// after the other: creates of a ConfigMap by 4 clients in parallel and by
// 32, and server-side applies of a 20-field ConfigMap by two managers that
// each own 10 of its fields and change their values at each apply (4
// clients). Each reports its rate and the 99th percentile of its
// requests' latency. The real target needs KLOOP_REAL_K8S_DIR
// (hack/realk8s.sh); without it that half is skipped.
//
//	KLOOP_REAL_K8S_DIR=$(bash hack/realk8s.sh) go test -run '^$' -bench BenchmarkTargetWrites -benchtime 3s ./apiserver/
func BenchmarkTargetWrites(b *testing.B) {
	type server struct {
		name string
		hc   *http.Client
		cms  string // the ConfigMaps' URL
	}
	var servers []server
	for _, target := range apiservertest.Targets() {
		for _, dataDir := range []bool{false, true} {
			if dataDir && target != apiservertest.Embedded {
				continue
			}
			var opts apiservertest.Options
			name := string(target)
			if dataDir {
				opts.DataDir, name = b.TempDir(), "embedded-datadir"
			}
			if target == apiservertest.RealServer && !realBuilt() {
				b.Logf("SKIPPED ON THE REAL KUBE-APISERVER: not built (bash hack/realk8s.sh)")
				continue
			}
			env := apiservertest.Start(b, target, opts)
			srv := server{name: name, hc: env.HTTPClient(nil), cms: env.Config().Host + "/api/v1/namespaces/" + env.Namespace + "/configmaps"}
			// Four objects to apply to, one per client.
			for i := range 4 {
				sendTo(b, srv.hc, http.MethodPost, srv.cms, "application/json", fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a-%d"}}`, i), http.StatusCreated)
			}
			servers = append(servers, srv)
		}
	}
	var n atomic.Int64
	for _, clients := range []int{4, 32} {
		op := "create"
		if clients != 4 {
			op = fmt.Sprintf("create-%dclients", clients)
		}
		for _, srv := range servers {
			b.Run(op+"/"+srv.name, func(b *testing.B) {
				var lat latencies
				b.SetParallelism(max(clients/runtime.GOMAXPROCS(0), 1))
				b.RunParallel(func(pb *testing.PB) {
					var mine []time.Duration
					for pb.Next() {
						name := fmt.Sprintf("c-%d", n.Add(1))
						start := time.Now()
						sendTo(b, srv.hc, http.MethodPost, srv.cms, "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"`+name+`"},"data":{"v":"x"}}`, http.StatusCreated)
						mine = append(mine, time.Since(start))
					}
					lat.add(mine)
				})
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
				b.ReportMetric(lat.p99().Seconds()*1000, "p99-ms")
			})
		}
	}
	for _, srv := range servers {
		b.Run("apply/"+srv.name, func(b *testing.B) {
			var client atomic.Int64
			var lat latencies
			b.SetParallelism(max(4/runtime.GOMAXPROCS(0), 1))
			b.RunParallel(func(pb *testing.PB) {
				// One object per client; managers alice and bob
				// alternate on each.
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
					sendTo(b, srv.hc, http.MethodPatch, srv.cms+"/"+name+"?fieldManager="+manager, "application/apply-patch+yaml", body, http.StatusOK)
					mine = append(mine, time.Since(start))
				}
				lat.add(mine)
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "applies/s")
			b.ReportMetric(lat.p99().Seconds()*1000, "p99-ms")
		})
	}
}

// realBuilt reports whether hack/realk8s.sh built the real pair where
// apiservertest looks for it (apiservertest.Start would skip the whole
// benchmark, the embedded half too, if it is not), or whether the real
// server is required anyway.
func realBuilt() bool {
	if os.Getenv(apiservertest.EnvRequireReal) == "1" {
		return true
	}
	dir := os.Getenv(apiservertest.EnvRealDir)
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return false
		}
		dir = filepath.Join(home, ".cache", "kloop", "realk8s-"+apiservertest.KubernetesVersion+"-etcd-"+apiservertest.EtcdVersion)
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return false
		}
	}
	return true
}

// sendTo sends a request and fails b unless it is answered with want.
func sendTo(b *testing.B, hc *http.Client, method, url, ct, body string, want int) {
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

// BenchmarkTargetCRD measures a CRD's create → usable on the embedded
// server and on the real kube-apiserver in one run: one op creates a new
// CRD (benchCRD, a new name each time) and waits, as
// apiservertest.InstallCRDs does, until it is Established, discovery lists
// its resource and a list of it answers. The CRDs are deleted after the
// loop. The real target needs KLOOP_REAL_K8S_DIR (hack/realk8s.sh).
//
//	KLOOP_REAL_K8S_DIR=$(bash hack/realk8s.sh) go test -run '^$' -bench BenchmarkTargetCRD -benchtime 20x ./apiserver/
func BenchmarkTargetCRD(b *testing.B) {
	for _, target := range apiservertest.Targets() {
		b.Run(string(target), func(b *testing.B) {
			if target == apiservertest.RealServer && !realBuilt() {
				b.Skip("SKIPPED ON THE REAL KUBE-APISERVER: not built (bash hack/realk8s.sh)")
			}
			env := apiservertest.Start(b, target, apiservertest.Options{})
			ctx := context.Background()
			dyn, err := dynamic.NewForConfig(env.Config())
			if err != nil {
				b.Fatal(err)
			}
			crdRes := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
			var names []string
			b.Cleanup(func() {
				for _, n := range names {
					_ = dyn.Resource(crdRes).Delete(ctx, n, metav1.DeleteOptions{})
				}
			})
			run := strings.ToLower(rand.Text()[:6]) // the real server outlives a run
			for b.Loop() {
				plural := fmt.Sprintf("b%s%d", run, len(names))
				u := &unstructured.Unstructured{}
				if err := u.UnmarshalJSON([]byte(benchCRD(plural))); err != nil {
					b.Fatal(err)
				}
				names = append(names, u.GetName())
				if err := apiservertest.InstallCRDs(ctx, env.Config(), u); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/crd")
		})
	}
}
