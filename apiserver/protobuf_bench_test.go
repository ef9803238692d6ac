package apiserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"kloop.dev/kloop/apiserver/storage"
	"kloop.dev/kloop/informer"
)

// The protobuf benchmarks compare, side by side, the same work answered
// in JSON and in protobuf:
//
//	go test -run XXX -bench 'Protobuf' -benchmem ./apiserver

// benchKinds are the objects of the protobuf benchmarks: a small
// ConfigMap, and a Pod of the size controllers usually see (two
// containers with env, resources, probes and mounts; a status with
// conditions and container statuses).
var benchKinds = []struct {
	resource string
	object   func(name string, i int) map[string]any
}{
	{"configmaps", func(name string, i int) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": "default", "labels": map[string]any{"app": "bench", "shard": fmt.Sprint(i % 10)}},
			"data":     map[string]any{"config.yaml": "replicas: 3\nimage: nginx:1.27\n", "n": fmt.Sprint(i)}}
	}},
	{"pods", benchPod},
}

func benchPod(name string, i int) map[string]any {
	container := func(n, image string) map[string]any {
		return map[string]any{"name": n, "image": image, "imagePullPolicy": "IfNotPresent",
			"args":  []any{"--port=8080", "--verbose"},
			"ports": []any{map[string]any{"name": "http", "containerPort": int64(8080), "protocol": "TCP"}},
			"env": []any{map[string]any{"name": "POD_NAME", "valueFrom": map[string]any{"fieldRef": map[string]any{"apiVersion": "v1", "fieldPath": "metadata.name"}}},
				map[string]any{"name": "MODE", "value": "production"}},
			"resources":                map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "128Mi"}, "limits": map[string]any{"cpu": "1", "memory": "512Mi"}},
			"readinessProbe":           map[string]any{"httpGet": map[string]any{"path": "/ready", "port": "http", "scheme": "HTTP"}, "periodSeconds": int64(10), "timeoutSeconds": int64(1), "successThreshold": int64(1), "failureThreshold": int64(3)},
			"volumeMounts":             []any{map[string]any{"name": "config", "mountPath": "/etc/app", "readOnly": true}},
			"terminationMessagePath":   "/dev/termination-log",
			"terminationMessagePolicy": "File",
		}
	}
	return map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name, "namespace": "default", "labels": map[string]any{"app": "bench", "pod-template-hash": "5d9c8f7b6d", "n": fmt.Sprint(i)},
			"ownerReferences": []any{map[string]any{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "bench-5d9c8f7b6d", "uid": "6b1a7a5e-1f0e-4c55-9d5e-4f3a1f0c2b7e", "controller": true, "blockOwnerDeletion": true}}},
		"spec": map[string]any{"containers": []any{container("app", "registry.example.com/app:v1.2.3"), container("sidecar", "registry.example.com/proxy:v0.9")},
			"volumes":       []any{map[string]any{"name": "config", "configMap": map[string]any{"name": "app-config", "defaultMode": int64(420)}}},
			"restartPolicy": "Always", "terminationGracePeriodSeconds": int64(30), "dnsPolicy": "ClusterFirst", "serviceAccountName": "default",
			"schedulerName": "default-scheduler", "enableServiceLinks": true, "priority": int64(0), "preemptionPolicy": "PreemptLowerPriority",
			"tolerations": []any{map[string]any{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": int64(300)}}},
		"status": map[string]any{"phase": "Pending", "qosClass": "Burstable"},
	}
}

// processCPUTime returns the CPU time (user and system) the process used
// so far, in nanoseconds: on a shared machine a benchmark's cpu-ns/op
// measures its cost better than its elapsed time.
func processCPUTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// benchStore fills a server's store with n objects of k, written as the
// store writes them (no HTTP).
func benchStore(b *testing.B, s *Server, k *kind, object func(string, int) map[string]any, n int) {
	b.Helper()
	for i := range n {
		if _, err := s.create(k, object(fmt.Sprintf("o-%05d", i), i), "default", &writeOpts{}); err != nil {
			b.Fatal(err)
		}
	}
}

// benchUpdate writes a new state of the object name of k straight into
// the store.
func benchUpdate(b *testing.B, s *Server, k *kind, object func(string, int) map[string]any, name string, i int) {
	_, err := s.store.Update(k.storageResource, "default", name, func(cur *storage.Object) (storage.EncodeFunc, error) {
		next := object(name, i)
		meta(next)["uid"] = cur.UID
		meta(next)["labels"].(map[string]any)["update"] = fmt.Sprint(i)
		return k.encoder(next), nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// startBench starts s (plain HTTP) until the benchmark ends.
func startBench(b *testing.B, opts Options) *Server {
	b.Helper()
	s, err := New(opts)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Start(ctx) }()
	<-s.Ready()
	b.Cleanup(func() { cancel(); <-done })
	return s
}

// BenchmarkProtobufInformer: an informer — client-go's, and kloop's
// (informer.Factory) — lists 10,000 objects (one page: client-go lists
// from resourceVersion "0"; kloop's streaming list is one watch), then
// watches 1,000 updates written into the store; one op is the whole sync,
// from the informer's start to its handler's 1,000th update. The server
// and the informer share the process: ns/op, B/op and allocs/op are both
// sides' (server encoding, client decoding).
func BenchmarkProtobufInformer(b *testing.B) {
	const objects, updates = 10_000, 1_000
	for _, bk := range benchKinds {
		s := startBench(b, Options{HistoryEvents: 2 * updates})
		k := s.reg.get(namespaceGVR.GroupVersion().WithResource(bk.resource))
		benchStore(b, s, k, bk.object, objects)
		for _, enc := range []string{"json", "protobuf"} {
			b.Run("kloop/"+bk.resource+"/"+enc, func(b *testing.B) {
				cfg := &rest.Config{Host: s.URL(), BearerToken: s.Token(), QPS: -1}
				i := 0
				cpu0 := processCPUTime()
				for b.Loop() {
					ctx, cancel := context.WithCancel(context.Background())
					f, err := informer.NewFactory(cfg, informer.FactoryOptions{Protobuf: enc == "protobuf", Logger: slog.New(slog.DiscardHandler)})
					if err != nil {
						b.Fatal(err)
					}
					var seen atomic.Int64
					all := make(chan struct{})
					onUpdate := func() {
						if seen.Add(1) == updates {
							close(all)
						}
					}
					var synced func(context.Context) error
					var n func() int
					if bk.resource == "pods" {
						inf, err := informer.InformerFor[*corev1.Pod](f, informer.Scope{Namespace: "default"})
						if err != nil {
							b.Fatal(err)
						}
						if _, err := inf.AddHandler(informer.HandlerFuncs[*corev1.Pod]{UpdateFunc: func(_, _ *corev1.Pod) { onUpdate() }}, informer.HandlerOptions{}); err != nil {
							b.Fatal(err)
						}
						synced, n = inf.WaitForCacheSync, inf.Len
					} else {
						inf, err := informer.InformerFor[*corev1.ConfigMap](f, informer.Scope{Namespace: "default"})
						if err != nil {
							b.Fatal(err)
						}
						if _, err := inf.AddHandler(informer.HandlerFuncs[*corev1.ConfigMap]{UpdateFunc: func(_, _ *corev1.ConfigMap) { onUpdate() }}, informer.HandlerOptions{}); err != nil {
							b.Fatal(err)
						}
						synced, n = inf.WaitForCacheSync, inf.Len
					}
					done := make(chan error, 1)
					go func() { done <- f.Start(ctx) }()
					if err := synced(ctx); err != nil {
						b.Fatal(err)
					}
					for range updates {
						benchUpdate(b, s, k, bk.object, fmt.Sprintf("o-%05d", i%objects), i)
						i++
					}
					select {
					case <-all:
					case <-time.After(time.Minute):
						b.Fatalf("the informer saw %d of %d updates", seen.Load(), updates)
					}
					if got := n(); got != objects {
						b.Fatalf("the informer holds %d objects, want %d", got, objects)
					}
					cancel()
					if err := <-done; err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(processCPUTime()-cpu0)/float64(b.N), "cpu-ns/op")
			})
			b.Run("client-go/"+bk.resource+"/"+enc, func(b *testing.B) {
				cfg := &rest.Config{Host: s.URL(), BearerToken: s.Token(), QPS: -1}
				if enc == "protobuf" {
					cfg.ContentType = protobufContentType
					cfg.AcceptContentTypes = protobufContentType + ",application/json"
				}
				cs, err := kubernetes.NewForConfig(cfg)
				if err != nil {
					b.Fatal(err)
				}
				i := 0
				cpu0 := processCPUTime()
				for b.Loop() {
					ctx, cancel := context.WithCancel(context.Background())
					factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace("default"))
					var inf cache.SharedIndexInformer
					if bk.resource == "pods" {
						inf = factory.Core().V1().Pods().Informer()
					} else {
						inf = factory.Core().V1().ConfigMaps().Informer()
					}
					var seen atomic.Int64
					all := make(chan struct{})
					_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, _ any) {
						if seen.Add(1) == updates {
							close(all)
						}
					}})
					if err != nil {
						b.Fatal(err)
					}
					factory.Start(ctx.Done())
					if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
						b.Fatal("informer did not sync")
					}
					for range updates {
						benchUpdate(b, s, k, bk.object, fmt.Sprintf("o-%05d", i%objects), i)
						i++
					}
					select {
					case <-all:
					case <-time.After(time.Minute):
						b.Fatalf("the informer saw %d of %d updates", seen.Load(), updates)
					}
					if n := len(inf.GetStore().ListKeys()); n != objects {
						b.Fatalf("the informer holds %d objects, want %d", n, objects)
					}
					cancel()
					factory.Shutdown()
				}
				b.ReportMetric(float64(processCPUTime()-cpu0)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// BenchmarkProtobufWatchFanOut: 2,000 updates of a Pod written into the
// store, delivered to 10 HTTP watch streams asking for JSON or for
// protobuf (the clients read the frames and decode nothing); one op is
// the whole fan-out. An event's protobuf frame is encoded once, for all
// the watchers.
func BenchmarkProtobufWatchFanOut(b *testing.B) {
	const events, watchers = 2_000, 10
	for _, enc := range []string{"json", "protobuf"} {
		b.Run(enc, func(b *testing.B) {
			var cpu int64 // of the fan-outs alone
			for b.Loop() {
				b.StopTimer()
				s := startBench(b, Options{HistoryEvents: events})
				k := s.reg.get(namespaceGVR.GroupVersion().WithResource("pods"))
				benchStore(b, s, k, benchPod, 1)
				rev := s.store.Revision()
				client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: watchers}}
				var ready, wg sync.WaitGroup
				for range watchers {
					ready.Add(1)
					wg.Go(func() {
						req, _ := http.NewRequest("GET", fmt.Sprintf("%s/api/v1/namespaces/default/pods?watch=true&resourceVersion=%d", s.URL(), rev), nil)
						req.Header.Set("Authorization", "Bearer "+s.Token())
						if enc == "protobuf" {
							req.Header.Set("Accept", protobufContentType+",application/json")
						}
						resp, err := client.Do(req)
						ready.Done()
						if err != nil {
							b.Error(err)
							return
						}
						defer resp.Body.Close()
						if err := readFrames(resp.Body, enc == "protobuf", events); err != nil {
							b.Error(err)
						}
					})
				}
				ready.Wait()
				b.StartTimer()
				cpu0 := processCPUTime()
				for i := range events {
					benchUpdate(b, s, k, benchPod, "o-00000", i)
				}
				wg.Wait()
				cpu += processCPUTime() - cpu0
				b.StopTimer()
				client.CloseIdleConnections()
				b.StartTimer()
			}
			b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// readFrames reads n watch events from a JSON (lines) or protobuf
// (length-prefixed) watch stream.
func readFrames(r io.Reader, pb bool, n int) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for i := range n {
		if !pb {
			if _, err := br.ReadSlice('\n'); err != nil {
				return fmt.Errorf("watch ended after %d events: %w", i, err)
			}
			continue
		}
		var l [4]byte
		if _, err := io.ReadFull(br, l[:]); err != nil {
			return fmt.Errorf("watch ended after %d events: %w", i, err)
		}
		if _, err := br.Discard(int(binary.BigEndian.Uint32(l[:]))); err != nil {
			return fmt.Errorf("watch ended after %d events: %w", i, err)
		}
	}
	return nil
}

// BenchmarkProtobufEncode: what encoding one stored Pod costs, as a
// watch event's frame: the JSON frame (a copy of the stored bytes), the
// protobuf frame (pbenc, from the stored JSON), and the protobuf frame
// the long way (the JSON decoded into the Go type, marshalled).
func BenchmarkProtobufEncode(b *testing.B) {
	s := startBench(b, Options{})
	k := s.reg.get(namespaceGVR.GroupVersion().WithResource("pods"))
	benchStore(b, s, k, benchPod, 1)
	o, err := s.store.Get(k.storageResource, "default", "o-00000")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("json", func(b *testing.B) {
		var buf bytes.Buffer
		cpu0 := processCPUTime()
		for b.Loop() {
			ev := &storage.Event{Type: storage.Modified, Revision: o.ResourceVersion, Object: o}
			if _, err := s.frame(&buf, k, ev, tableOptions{}, false, metadataOnly{}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(processCPUTime()-cpu0)/float64(b.N), "cpu-ns/op")
		b.ReportMetric(float64(len(o.Data)), "bytes")
	})
	b.Run("protobuf", func(b *testing.B) {
		var buf bytes.Buffer
		var n int
		cpu0 := processCPUTime()
		for b.Loop() {
			ev := &storage.Event{Type: storage.Modified, Revision: o.ResourceVersion, Object: o}
			f, err := s.protobufFrame(&buf, k, ev, metadataOnly{})
			if err != nil {
				b.Fatal(err)
			}
			n = len(f)
		}
		b.ReportMetric(float64(processCPUTime()-cpu0)/float64(b.N), "cpu-ns/op")
		b.ReportMetric(float64(n), "bytes")
	})
	b.Run("protobuf-via-go-type", func(b *testing.B) {
		// The way for what pbenc does not read: the JSON decoded into
		// the Go type, which marshals itself.
		m := &corev1.Pod{}
		cpu0 := processCPUTime()
		for b.Loop() {
			if err := decodeInto(m, o.Data); err != nil {
				b.Fatal(err)
			}
			msg, err := appendMessage(nil, m, m.Size())
			if err != nil {
				b.Fatal(err)
			}
			appendWatchEvent(nil, "MODIFIED", envelope("v1", "Pod", msg))
		}
		b.ReportMetric(float64(processCPUTime()-cpu0)/float64(b.N), "cpu-ns/op")
	})
}

// BenchmarkProtobufList splits an informer's list of 10,000 Pods into its
// two sides: the server's answer (one op: a LIST through the handler, in
// process, no network) and the client's decoding of that answer
// (client-go's codec into a PodList), in JSON and in protobuf.
func BenchmarkProtobufList(b *testing.B) {
	const objects = 10_000
	s := startBench(b, Options{})
	k := s.reg.get(namespaceGVR.GroupVersion().WithResource("pods"))
	benchStore(b, s, k, benchPod, objects)
	h := s.Handler()
	list := func(accept string) []byte {
		req, _ := http.NewRequest("GET", "/api/v1/namespaces/default/pods?resourceVersion=0", nil)
		req.Header.Set("Authorization", "Bearer "+s.Token())
		req.Header.Set("Accept", accept)
		rec := &benchRecorder{h: http.Header{}}
		h.ServeHTTP(rec, req)
		if rec.code != http.StatusOK {
			b.Fatalf("list: %d %s", rec.code, rec.body.Bytes())
		}
		return rec.body.Bytes()
	}
	accepts := map[string]string{"json": "application/json", "protobuf": protobufContentType + ",application/json"}
	for _, enc := range []string{"json", "protobuf"} {
		b.Run("server/"+enc, func(b *testing.B) {
			var n int
			cpu0 := processCPUTime()
			for b.Loop() {
				n = len(list(accepts[enc]))
			}
			b.ReportMetric(float64(processCPUTime()-cpu0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(n), "bytes")
		})
	}
	codecs := clientgoscheme.Codecs.UniversalDeserializer()
	for _, enc := range []string{"json", "protobuf"} {
		body := bytes.Clone(list(accepts[enc]))
		b.Run("client-go-decode/"+enc, func(b *testing.B) {
			cpu0 := processCPUTime()
			for b.Loop() {
				obj, _, err := codecs.Decode(body, nil, &corev1.PodList{})
				if err != nil || len(obj.(*corev1.PodList).Items) != objects {
					b.Fatalf("decode: %v", err)
				}
			}
			b.ReportMetric(float64(processCPUTime()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// benchRecorder is an http.ResponseWriter that keeps the body.
type benchRecorder struct {
	h    http.Header
	code int
	body bytes.Buffer
}

func (r *benchRecorder) Header() http.Header { return r.h }
func (r *benchRecorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}
func (r *benchRecorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.body.Write(b)
}
