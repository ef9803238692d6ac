package config_test

import (
	"slices"
	"testing"

	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kloop.dev/kloop/examples/widget/config"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The embedded CRDs are the issue's: names, printer columns, the status
// subresource (and scale for WidgetSets).
func TestCRDs(t *testing.T) {
	crds, err := config.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		columns []string
		scale   bool
	}{
		{"widgets.example.kloop.dev", []string{"State", "InstanceID", "Age"}, false},
		{"widgetsets.example.kloop.dev", []string{"Replicas", "Ready", "Age"}, true},
	} {
		i := slices.IndexFunc(crds, func(u *unstructured.Unstructured) bool { return u.GetName() == tc.name })
		if i < 0 {
			t.Errorf("no CRD %s", tc.name)
			continue
		}
		versions, _, _ := unstructured.NestedSlice(crds[i].Object, "spec", "versions")
		if len(versions) != 1 {
			t.Fatalf("%s: %d versions", tc.name, len(versions))
		}
		v := versions[0].(map[string]any)
		var cols []string
		for _, c := range v["additionalPrinterColumns"].([]any) {
			cols = append(cols, c.(map[string]any)["name"].(string))
		}
		if !slices.Equal(cols, tc.columns) {
			t.Errorf("%s: printer columns %v, want %v", tc.name, cols, tc.columns)
		}
		sub, _ := v["subresources"].(map[string]any)
		if _, ok := sub["status"]; !ok {
			t.Errorf("%s: no status subresource", tc.name)
		}
		if _, ok := sub["scale"]; ok != tc.scale {
			t.Errorf("%s: scale subresource %v, want %v", tc.name, ok, tc.scale)
		}
	}
}

func TestRole(t *testing.T) {
	r, err := config.Role()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"widgets":            {"create", "delete", "get", "list", "patch", "update", "watch"},
		"widgets/finalizers": {"update"},
		"widgets/status":     {"get", "patch", "update"},
		"events":             {"create", "patch"},
	}
	for res, verbs := range want {
		found := false
		for _, rule := range r.Rules {
			if slices.Contains(rule.Resources, res) {
				found = true
				if !slices.Equal(rule.Verbs, verbs) {
					t.Errorf("%s: verbs %v, want %v", res, rule.Verbs, verbs)
				}
			}
		}
		if !found {
			t.Errorf("no rule for %s", res)
		}
	}
}
