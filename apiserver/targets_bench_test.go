package apiserver_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"kloop.dev/kloop/apiserver/apiservertest"
)

// BenchmarkTargetWrites measures writes over HTTP, 4 clients in parallel, on
// the embedded server and on the real kube-apiserver (with etcd) in one
// run: creates of a ConfigMap, and server-side applies of a 20-field
// ConfigMap by two managers that each own 10 of its fields and change
// their values at each apply. The real target needs KLOOP_REAL_K8S_DIR
// (hack/realk8s.sh); without it that half is skipped.
//
//	KLOOP_REAL_K8S_DIR=$(bash hack/realk8s.sh) go test -run '^$' -bench BenchmarkTargetWrites -benchtime 3s ./apiserver/
func BenchmarkTargetWrites(b *testing.B) {
	for _, target := range apiservertest.Targets() {
		b.Run(string(target), func(b *testing.B) {
			env := apiservertest.Start(b, target, apiservertest.Options{})
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
			b.Run("create", func(b *testing.B) {
				b.SetParallelism(2)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						name := fmt.Sprintf("c-%d", n.Add(1))
						send(http.MethodPost, cms, "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"`+name+`"},"data":{"v":"x"}}`, http.StatusCreated)
					}
				})
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
			})
			// Four objects, one per client; managers alice and bob
			// alternate on each.
			for i := range 4 {
				send(http.MethodPost, cms, "application/json", fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a-%d"}}`, i), http.StatusCreated)
			}
			b.Run("apply", func(b *testing.B) {
				var client atomic.Int64
				b.SetParallelism(2)
				b.RunParallel(func(pb *testing.PB) {
					name := fmt.Sprintf("a-%d", client.Add(1)-1)
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
						send(http.MethodPatch, cms+"/"+name+"?fieldManager="+manager, "application/apply-patch+yaml", body, http.StatusOK)
					}
				})
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "applies/s")
			})
		})
	}
}
