package v1_test

import (
	"testing"

	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/runtime"

	examplev1 "kloop.dev/kloop/examples/widget/api/v1"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestAddToScheme(t *testing.T) {
	s := runtime.NewScheme()
	if err := examplev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []runtime.Object{&examplev1.Widget{}, &examplev1.WidgetList{}, &examplev1.WidgetSet{}, &examplev1.WidgetSetList{}} {
		gvks, _, err := s.ObjectKinds(obj)
		if err != nil || len(gvks) != 1 || gvks[0].GroupVersion() != examplev1.GroupVersion() {
			t.Errorf("%T: %v, %v", obj, gvks, err)
		}
	}
}

// The generated deep copies share nothing with their source.
func TestDeepCopy(t *testing.T) {
	n := int32(2)
	set := &examplev1.WidgetSet{Spec: examplev1.WidgetSetSpec{Replicas: &n, Template: examplev1.WidgetTemplate{
		Spec: examplev1.WidgetSpec{Region: "r", Tags: map[string]string{"a": "1"}}}}}
	cp := set.DeepCopyObject().(*examplev1.WidgetSet)
	*cp.Spec.Replicas = 5
	cp.Spec.Template.Spec.Tags["a"] = "2"
	if *set.Spec.Replicas != 2 || set.Spec.Template.Spec.Tags["a"] != "1" {
		t.Errorf("the copy shares memory with the original: %+v", set.Spec)
	}
}
