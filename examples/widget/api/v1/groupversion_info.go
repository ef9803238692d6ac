package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group and Version of the API.
const (
	Group   = "example.kloop.dev"
	Version = "v1"
)

// GroupVersion is example.kloop.dev/v1.
func GroupVersion() schema.GroupVersion { return schema.GroupVersion{Group: Group, Version: Version} }

// AddToScheme adds the API's kinds to a scheme.
func AddToScheme(s *runtime.Scheme) error {
	gv := GroupVersion()
	s.AddKnownTypes(gv, &Widget{}, &WidgetList{}, &WidgetSet{}, &WidgetSetList{})
	metav1.AddToGroupVersion(s, gv)
	return nil
}
