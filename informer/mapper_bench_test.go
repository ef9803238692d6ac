package informer

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// BenchmarkRESTMappingParallel: cached mappings of several kinds in three
// group versions, asked from parallel goroutines as every cached client
// read does. Hits take no lock, so the rate scales with GOMAXPROCS
// (-cpu 1,2,4).
func BenchmarkRESTMappingParallel(b *testing.B) {
	fd := newFakeDiscovery()
	fd.serveGV("", "v1", apiResource("pods", "Pod"), apiResource("configmaps", "ConfigMap"), apiResource("secrets", "Secret"))
	fd.serveGV("apps", "v1", apiResource("deployments", "Deployment"), apiResource("statefulsets", "StatefulSet"))
	fd.serveGV("a.example", "v1", apiResource("widgets", "Widget"))
	m := fd.mapper(b)
	gvks := []schema.GroupVersionKind{
		{Version: "v1", Kind: "Pod"}, {Version: "v1", Kind: "ConfigMap"}, {Version: "v1", Kind: "Secret"},
		{Group: "apps", Version: "v1", Kind: "Deployment"}, {Group: "apps", Version: "v1", Kind: "StatefulSet"},
		{Group: "a.example", Version: "v1", Kind: "Widget"},
	}
	ctx := b.Context()
	for _, gvk := range gvks {
		if _, err := m.RESTMapping(ctx, gvk.GroupKind(), gvk.Version); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for i := 0; pb.Next(); i++ {
			gvk := gvks[i%len(gvks)]
			if _, err := m.RESTMapping(ctx, gvk.GroupKind(), gvk.Version); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
