package apiserver

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"kloop.dev/kloop/apiserver/storage"
)

// BenchmarkHTTPWatchFanOut isolates the HTTP watch path: 10,000 events are
// written straight into the store (no HTTP writers) and delivered to 100
// plain-HTTP watch streams; one op is the whole fan-out.
func BenchmarkHTTPWatchFanOut(b *testing.B) {
	const events, watchers = 10_000, 100
	for b.Loop() {
		b.StopTimer()
		s, err := New(Options{HistoryEvents: events})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- s.Start(ctx) }()
		<-s.Ready()
		k := s.reg.get(namespaceGVR.GroupVersion().WithResource("configmaps"))
		obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "f", "namespace": "default"}, "data": map[string]any{"v": "0"}}
		if _, err := s.create(k, obj, "default", &writeOpts{}); err != nil {
			b.Fatal(err)
		}
		rev := s.store.Revision()
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: watchers}}
		var ready, wg sync.WaitGroup
		for range watchers {
			ready.Add(1)
			wg.Go(func() {
				req, _ := http.NewRequest("GET", fmt.Sprintf("%s/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=%d", s.URL(), rev), nil)
				req.Header.Set("Authorization", "Bearer "+s.Token())
				resp, err := client.Do(req)
				ready.Done()
				if err != nil {
					b.Error(err)
					return
				}
				defer resp.Body.Close()
				sc := bufio.NewScanner(resp.Body)
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
		for i := range events {
			_, err := s.store.Update(k.storageResource, "default", "f", func(cur *storage.Object) (storage.EncodeFunc, error) {
				next := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "f", "namespace": "default", "uid": cur.UID}, "data": map[string]any{"v": fmt.Sprint(i)}}
				return k.encoder(next), nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		wg.Wait()
		b.StopTimer()
		cancel()
		<-done
		client.CloseIdleConnections()
		b.StartTimer()
	}
	b.ReportMetric(float64(events*watchers)*float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
}
