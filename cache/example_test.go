package cache_test

import (
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kloop.dev/kloop/cache"
)

func Example() {
	byApp := func(p *corev1.Pod) ([]string, error) { return []string{p.Labels["app"]}, nil }
	pods, err := cache.New(cache.Options[*corev1.Pod]{
		Indexers: map[string]cache.IndexFunc[*corev1.Pod]{"app": byApp},
	})
	if err != nil {
		panic(err)
	}
	for _, p := range []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1", Labels: map[string]string{"app": "web"}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db-1", Labels: map[string]string{"app": "db"}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "blog", Name: "web-1", Labels: map[string]string{"app": "web"}}},
	} {
		if err := pods.Add(p); err != nil {
			panic(err)
		}
	}

	p, ok := pods.Get("shop", "db-1")
	fmt.Println(cache.Key(p), ok)

	keys, _ := pods.IndexKeys(cache.NamespaceIndex, "shop")
	slices.Sort(keys)
	fmt.Println("namespace shop:", keys)

	web, _ := pods.ByIndex("app", "web")
	fmt.Println("app=web:", len(web), "pods")

	// Objects from the cache are shared: copy before changing.
	mine := p.DeepCopy()
	mine.Labels["app"] = "db-v2"
	fmt.Println(p.Labels["app"], mine.Labels["app"])
	// Output:
	// shop/db-1 true
	// namespace shop: [shop/db-1 shop/web-1]
	// app=web: 2 pods
	// db db-v2
}

func ExampleOptions_detectMutations() {
	pods, err := cache.New(cache.Options[*corev1.Pod]{DetectMutations: true})
	if err != nil {
		panic(err)
	}
	_ = pods.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1"}})

	p, _ := pods.Get("shop", "web-1")
	p.Spec.NodeName = "node-7" // the bug: changing a cached object in place

	var me *cache.MutationError
	if err := pods.Check(); errors.As(err, &me) {
		fmt.Println(me.Key, me.Path)
	}
	// Output:
	// shop/web-1 .Spec.NodeName
}

func ExampleSplitKey() {
	ns, name, _ := cache.SplitKey("shop/web-1")
	fmt.Printf("%q %q\n", ns, name)
	ns, name, _ = cache.SplitKey("node-7")
	fmt.Printf("%q %q\n", ns, name)
	_, _, err := cache.SplitKey("a/b/c")
	fmt.Println(errors.Is(err, cache.ErrInvalidKey))
	// Output:
	// "shop" "web-1"
	// "" "node-7"
	// true
}

// An informer applies a delta and learns in the same step what to notify.
func ExampleIndexer_Swap() {
	pods, err := cache.New(cache.Options[*corev1.Pod]{})
	if err != nil {
		panic(err)
	}
	apply := func(p *corev1.Pod) {
		old, replaced, err := pods.Swap(p)
		switch {
		case err != nil:
			fmt.Println("error:", err)
		case replaced:
			fmt.Printf("OnUpdate %s: %s -> %s\n", cache.Key(p), old.ResourceVersion, p.ResourceVersion)
		default:
			fmt.Printf("OnAdd %s\n", cache.Key(p))
		}
	}
	apply(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1", ResourceVersion: "1"}})
	apply(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1", ResourceVersion: "2"}})
	apply(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop"}})
	if old, ok, _ := pods.LoadAndDelete("shop/web-1"); ok {
		fmt.Printf("OnDelete %s at %s\n", cache.Key(old), old.ResourceVersion)
	}
	// Output:
	// OnAdd shop/web-1
	// OnUpdate shop/web-1: 1 -> 2
	// error: cache: swap: invalid object: empty name
	// OnDelete shop/web-1 at 2
}
