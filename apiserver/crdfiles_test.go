package apiserver_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"kloop.dev/kloop/apiserver"
	"kloop.dev/kloop/apiserver/apiservertest"
)

func crdYAML(group, kind string) string {
	plural := strings.ToLower(kind) + "s"
	return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: ` + plural + `.` + group + `
spec:
  group: ` + group + `
  scope: Namespaced
  names: {plural: ` + plural + `, singular: ` + strings.ToLower(kind) + `, kind: ` + kind + `}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
`
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// CRDs from files and directories (multi-document YAML, JSON, other kinds
// and subdirectories skipped) are established when the server is handed
// out, on both servers.
func TestCRDPaths(t *testing.T) {
	dir := t.TempDir()
	group := "crdpaths.kloop.dev"
	writeFile(t, dir, "bases/a.yaml", crdYAML(group, "Apple")+"---\n# a comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: skipped}\n---\n"+crdYAML(group, "Banana"))
	writeFile(t, dir, "bases/c.json", `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"cherries.`+group+`"},
"spec":{"group":"`+group+`","scope":"Cluster","names":{"plural":"cherries","singular":"cherry","kind":"Cherry"},"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object"}}}]}}`)
	writeFile(t, dir, "bases/notes.txt", "not read")
	writeFile(t, dir, "bases/sub/d.yaml", "not: read")
	extra := writeFile(t, dir, "extra.yml", crdYAML(group, "Date"))
	forEachTarget(t, apiservertest.Options{CRDPaths: []string{filepath.Join(dir, "bases"), extra}}, func(t *testing.T, env *apiservertest.Env) {
		dyn, err := dynamic.NewForConfig(env.Config())
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		for _, res := range []string{"apples", "bananas", "dates"} {
			if _, err := dyn.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: res}).Namespace(env.Namespace).List(ctx, metav1.ListOptions{}); err != nil {
				t.Errorf("list %s: %v", res, err)
			}
		}
		if _, err := dyn.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "cherries"}).List(ctx, metav1.ListOptions{}); err != nil {
			t.Errorf("list cherries: %v", err)
		}
	})
}

// A bad CRD file fails New with an error naming the file, the document and
// the field.
func TestCRDPathsErrors(t *testing.T) {
	dir := t.TempDir()
	group := "bad.kloop.dev"
	for _, tc := range []struct {
		name, content string
		want          []string
	}{
		// kube-apiserver validates the internal form of a CRD, where a
		// schema every version shares is spec.validation's.
		{"typo.yaml", strings.Replace(crdYAML(group, "Typo"), "scope:", "scoop:", 1), []string{"typo.yaml, document 1", "scoop"}},
		{"invalid.yaml", "---\n" + strings.Replace(crdYAML(group, "Invalid"), "type: integer", "type: int", 1), []string{"invalid.yaml, document 1", "spec.validation.openAPIV3Schema.properties[spec].properties[size].type"}},
		{"second.yaml", crdYAML(group, "Fine") + "---\n" + strings.Replace(crdYAML(group, "Second"), "scope: Namespaced", "scope: Galaxy", 1), []string{"second.yaml, document 2", "spec.scope"}},
		{"beta.yaml", strings.Replace(crdYAML(group, "Beta"), "apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1", 1), []string{"beta.yaml, document 1", "v1beta1 is not served"}},
		{"broken.yaml", "apiVersion: [", []string{"broken.yaml, document 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, dir, tc.name, tc.content)
			_, err := apiserver.New(apiserver.Options{CRDPaths: []string{p}})
			if err == nil {
				t.Fatal("New succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	if _, err := apiserver.New(apiserver.Options{CRDPaths: []string{filepath.Join(dir, "missing")}}); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("a missing path: %v", err)
	}
}
