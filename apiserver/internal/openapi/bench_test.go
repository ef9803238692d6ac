package openapi

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// BenchmarkRebuild measures Set after a CRD is added or removed (six
// built-in kinds, the CronJob CRD and one changing Widget CRD): only the
// changed group version's v3 document is rebuilt.
func BenchmarkRebuild(b *testing.B) {
	benchRebuild(b, false)
}

// BenchmarkRebuildWithV2 adds the lazy v2 build of the next /openapi/v2.
func BenchmarkRebuildWithV2(b *testing.B) {
	benchRebuild(b, true)
}

func benchRebuild(b *testing.B, v2 bool) {
	bl, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	base := testResources(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		w := Resource{GVK: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: fmt.Sprintf("Widget%d", i%2)}, Plural: "widgets"}
		if err := bl.Set(append(base, w)); err != nil {
			b.Fatal(err)
		}
		if v2 {
			if _, err := bl.V2(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkSetUnchanged measures Set with the same resources (no rebuild).
func BenchmarkSetUnchanged(b *testing.B) {
	bl := newBuilder(b)
	rs := testResources(b)
	b.ReportAllocs()
	for b.Loop() {
		if err := bl.Set(rs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkV2Proto measures building the v2 document and its protobuf form
// (what the first kubectl request after a CRD change pays).
func BenchmarkV2Proto(b *testing.B) {
	base := testResources(b)
	b.ReportAllocs()
	for b.Loop() {
		bl, err := New(Options{})
		if err != nil {
			b.Fatal(err)
		}
		if err := bl.Set(base); err != nil {
			b.Fatal(err)
		}
		pb, _, err := bl.V2Proto()
		if err != nil || len(pb) == 0 {
			b.Fatal(err)
		}
	}
}
