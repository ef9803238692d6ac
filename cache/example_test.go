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
