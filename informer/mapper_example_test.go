package informer_test

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kloop.dev/kloop/informer"
)

// A factory that maps kinds without discovery: a meta.DefaultRESTMapper,
// filled by hand, given as StaticMapper (FactoryOptions.Mapper).
func ExampleStaticMapper() {
	widgets := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	rm := meta.NewDefaultRESTMapper(nil)
	rm.Add(widgets, meta.RESTScopeNamespace)
	m := informer.StaticMapper(rm)

	mapping, err := m.RESTMapping(context.Background(), widgets.GroupKind(), widgets.Version)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(mapping.Resource, mapping.Scope.Name())
	_, err = m.RESTMapping(context.Background(), schema.GroupKind{Group: "example.com", Kind: "Gadget"}, "v1")
	fmt.Println(meta.IsNoMatchError(err))
	// Output:
	// example.com/v1, Resource=widgets namespace
	// true
}
