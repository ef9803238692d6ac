package reflector_test

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/reflector"
)

// cmStore prints the names the reflector hands over and reports each call.
type cmStore struct{ calls chan<- string }

func (s cmStore) Add(o *corev1.ConfigMap) error    { s.calls <- "add " + o.Name; return nil }
func (s cmStore) Update(o *corev1.ConfigMap) error { s.calls <- "update " + o.Name; return nil }
func (s cmStore) Delete(o *corev1.ConfigMap) error { s.calls <- "delete " + o.Name; return nil }
func (s cmStore) Bookmark(string) error            { return nil }
func (s cmStore) Replace(os []*corev1.ConfigMap, _ string) error {
	names := make([]string, len(os))
	for i, o := range os {
		names[i] = o.Name
	}
	slices.Sort(names)
	s.calls <- fmt.Sprint("replace ", names)
	return nil
}

func configMap(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetName(name)
	u.SetLabels(map[string]string{"example": "reflector"})
	return u
}

// A reflector over the REST ListerWatcher, against kloop's embedded API
// server: the initial state arrives as one Replace (by a streaming list),
// then each change as it happens.
func Example_embeddedServer() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := apiservertest.New(apiservertest.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	cfg := srv.RESTConfig()

	gvr := corev1.SchemeGroupVersion.WithResource("configmaps")
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	cms := dyn.Resource(gvr).Namespace("default")
	for _, name := range []string{"b", "a"} {
		if _, err := cms.Create(ctx, configMap(name), metav1.CreateOptions{}); err != nil {
			fmt.Println(err)
			return
		}
	}

	// The example's ConfigMaps (default also holds the cluster's
	// kube-root-ca.crt).
	lw, err := reflector.NewRESTListerWatcher[*corev1.ConfigMap](cfg, gvr, "default", reflector.RESTOptions[*corev1.ConfigMap]{LabelSelector: "example=reflector"})
	if err != nil {
		fmt.Println(err)
		return
	}
	calls := make(chan string)
	r, err := reflector.New[*corev1.ConfigMap](lw, cmStore{calls}, reflector.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(rctx) }()

	fmt.Println(<-calls) // the initial state
	if _, err := cms.Create(ctx, configMap("c"), metav1.CreateOptions{}); err != nil {
		fmt.Println(err)
	}
	fmt.Println(<-calls)
	if err := cms.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		fmt.Println(err)
	}
	fmt.Println(<-calls)
	stop()
	<-done
	// Output:
	// replace [a b]
	// add c
	// delete a
}
