package builder

import (
	"log/slog"
	"maps"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kloop.dev/kloop/client"
	"kloop.dev/kloop/informer"
)

// readScopes gives a kind the scope every watch of it shares, whatever the
// form and the spelling of the selectors, and no scope when the watches
// disagree or watch the whole kind.
func TestReadScopes(t *testing.T) {
	cmGVK := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	deployGVK := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	teamA := informer.Scope{Namespace: "a"}
	web := informer.Scope{Namespace: "a", LabelSelector: "app=web"}
	type w struct {
		gvk   schema.GroupVersionKind
		scope informer.Scope
		meta  bool
	}
	tests := []struct {
		name    string
		watches []w
		want    client.ReadScopes
	}{
		{"no scope", []w{{gvk: cmGVK}, {gvk: deployGVK}}, nil},
		{"one scoped kind", []w{{gvk: cmGVK, scope: teamA}, {gvk: deployGVK}}, client.ReadScopes{cmGVK: teamA}},
		{"two scoped kinds", []w{{gvk: cmGVK, scope: teamA}, {gvk: deployGVK, scope: web}}, client.ReadScopes{cmGVK: teamA, deployGVK: web}},
		{"one scope, two spellings", []w{{gvk: cmGVK, scope: web}, {gvk: cmGVK, scope: informer.Scope{Namespace: "a", LabelSelector: " app = web "}}},
			client.ReadScopes{cmGVK: web}},
		{"one scope, two forms", []w{{gvk: cmGVK, scope: teamA}, {gvk: cmGVK, scope: teamA, meta: true}}, client.ReadScopes{cmGVK: teamA}},
		{"two scopes", []w{{gvk: cmGVK, scope: teamA}, {gvk: cmGVK, scope: web}, {gvk: deployGVK, scope: web}}, client.ReadScopes{deployGVK: web}},
		{"scoped and whole", []w{{gvk: cmGVK, scope: teamA}, {gvk: cmGVK, meta: true}}, nil},
		{"a selector that does not parse is kept", []w{{gvk: cmGVK, scope: informer.Scope{LabelSelector: "app in (web"}}},
			client.ReadScopes{cmGVK: {LabelSelector: "app in (web"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var all []watch
			var gvks []schema.GroupVersionKind
			for _, x := range tt.watches {
				var obj client.Object = &corev1.ConfigMap{}
				if x.gvk == deployGVK {
					obj = &appsv1.Deployment{}
				}
				all = append(all, watch{obj: obj, what: "Watches", opts: watchOptions{scope: x.scope, onlyMetadata: x.meta}})
				gvks = append(gvks, x.gvk)
			}
			got := readScopes(all, gvks, slog.New(slog.DiscardHandler))
			if !maps.Equal(got, tt.want) {
				t.Fatalf("readScopes = %v, want %v", got, tt.want)
			}
		})
	}
}
