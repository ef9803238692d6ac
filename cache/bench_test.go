package cache

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// benchPods returns n realistic-sized Pods spread over 100 namespaces, with
// labels and one container, at resourceVersion rv.
func benchPods(n int, rv string) []*corev1.Pod {
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Namespace:       fmt.Sprintf("team-%02d", i%100),
				Name:            fmt.Sprintf("web-%07d", i),
				ResourceVersion: rv,
				Labels:          map[string]string{"app": fmt.Sprintf("app-%d", i%10), "tier": "front"},
			},
			Spec: corev1.PodSpec{NodeName: fmt.Sprintf("node-%d", i%50), Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
		}
	}
	return pods
}

var benchSizes = []int{10_000, 100_000}

// benchOpts are the two configurations measured: the default (namespace
// index only) and one custom index by the "app" label.
var benchOpts = []struct {
	name string
	opts Options[*corev1.Pod]
}{
	{"default", Options[*corev1.Pod]{}},
	{"appIndex", Options[*corev1.Pod]{Indexers: map[string]IndexFunc[*corev1.Pod]{"app": byApp}}},
}

func filled(b *testing.B, opts Options[*corev1.Pod], pods []*corev1.Pod) *Indexer[*corev1.Pod] {
	b.Helper()
	ix, err := New(opts)
	if err != nil {
		b.Fatal(err)
	}
	if err := ix.Replace(pods, "1"); err != nil {
		b.Fatal(err)
	}
	return ix
}

// BenchmarkAdd measures inserting new keys into a cache that grows to n.
func BenchmarkAdd(b *testing.B) {
	for _, n := range benchSizes {
		pods := benchPods(n, "1")
		for _, o := range benchOpts {
			b.Run(fmt.Sprintf("%s/n=%d", o.name, n), func(b *testing.B) {
				b.ReportAllocs()
				ix, _ := New(o.opts)
				i := 0
				for b.Loop() {
					if i == n {
						b.StopTimer()
						ix, _ = New(o.opts)
						i = 0
						b.StartTimer()
					}
					if err := ix.Add(pods[i]); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		}
	}
}

// BenchmarkUpdate measures replacing existing objects by newer versions (the
// watch steady state), with unchanged index values.
func BenchmarkUpdate(b *testing.B) {
	for _, n := range benchSizes {
		pods, newer := benchPods(n, "1"), benchPods(n, "2")
		for _, o := range benchOpts {
			b.Run(fmt.Sprintf("%s/n=%d", o.name, n), func(b *testing.B) {
				ix := filled(b, o.opts, pods)
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if err := ix.Update(newer[i%n]); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		}
	}
}

func BenchmarkGet(b *testing.B) {
	for _, n := range benchSizes {
		pods := benchPods(n, "1")
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			ix := filled(b, Options[*corev1.Pod]{}, pods)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				p := pods[i%n]
				if _, ok := ix.Get(p.Namespace, p.Name); !ok {
					b.Fatal("not found")
				}
				i++
			}
		})
	}
}

// BenchmarkByIndex lists one namespace (1 % of the objects) and one app
// label value (10 %).
func BenchmarkByIndex(b *testing.B) {
	for _, n := range benchSizes {
		pods := benchPods(n, "1")
		ix := filled(b, benchOpts[1].opts, pods)
		for _, q := range []struct{ index, value string }{{NamespaceIndex, "team-07"}, {"app", "app-3"}} {
			b.Run(fmt.Sprintf("%s/n=%d", q.index, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					objs, err := ix.ByIndex(q.index, q.value)
					if err != nil || len(objs) == 0 {
						b.Fatal(len(objs), err)
					}
				}
			})
		}
	}
}

func BenchmarkList(b *testing.B) {
	for _, n := range benchSizes {
		pods := benchPods(n, "1")
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			ix := filled(b, Options[*corev1.Pod]{}, pods)
			b.ReportAllocs()
			for b.Loop() {
				if len(ix.List()) != n {
					b.Fatal("short list")
				}
			}
		})
	}
}

// BenchmarkReplace measures a relist of n objects into a full cache.
func BenchmarkReplace(b *testing.B) {
	for _, n := range benchSizes {
		pods := benchPods(n, "1")
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			ix := filled(b, benchOpts[1].opts, pods)
			b.ReportAllocs()
			for b.Loop() {
				if err := ix.Replace(pods, "2"); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/object")
		})
	}
}
