package apiserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/internal/testutil"
)

const widgetCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas, labelSelectorPath: .status.selector}
    additionalPrinterColumns:
    - {name: Color, type: string, jsonPath: .spec.color}
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    selectableFields:
    - jsonPath: .spec.color
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [color]
            properties:
              color: {type: string, enum: [red, green, blue]}
              replicas: {type: integer, minimum: 0, default: 1}
              size: {type: string, pattern: '^[0-9]+(cm|m)$'}
              extra: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status:
            type: object
            properties:
              replicas: {type: integer}
              selector: {type: string}
  - name: v1beta1
    served: true
    storage: false
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// widgetGroup is a CRD group of the test's own: CRDs are cluster-scoped, and
// the real server is shared by every test of the binary.
func widgetGroup(env *apiservertest.Env) string { return env.Namespace + ".example.com" }

// widgetCRDIn is widgetCRD in another group.
func widgetCRDIn(group string) string { return strings.ReplaceAll(widgetCRD, "example.com", group) }

func widgetGVR(group, version string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: group, Version: version, Resource: "widgets"}
}

func fromYAML(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(y), &m); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

func widget(group, name, color string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": group + "/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"color": color, "unknown": "dropped", "extra": map[string]any{"kept": true}},
	}}
}

// createCRD creates a CRD and waits until it is established and its
// resource served (kube-apiserver does both asynchronously; the embedded
// server before the create returns). It deletes the CRD when the test ends.
func createCRD(t *testing.T, dyn dynamic.Interface, crd *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	ctx := ctxT(t)
	created, err := dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		err := dyn.Resource(crdGVR).Delete(context.Background(), created.GetName(), metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete CRD %s: %v", created.GetName(), err)
		}
	})
	waitServed(t, dyn, created)
	out, err := dyn.Resource(crdGVR).Get(ctx, created.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// waitServed waits for a CRD's Established and NamesAccepted conditions and
// for a successful list of the widgets of each of its versions.
func waitServed(t *testing.T, dyn dynamic.Interface, crd *unstructured.Unstructured) {
	t.Helper()
	ctx := ctxT(t)
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	testutil.Eventually(t, "CRD "+crd.GetName()+" established", func() error {
		got, err := dyn.Resource(crdGVR).Get(ctx, crd.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		if !hasCondition(conds, "Established") || !hasCondition(conds, "NamesAccepted") {
			return fmt.Errorf("conditions %v", conds)
		}
		return nil
	})
	for _, v := range versions {
		name, _, _ := unstructured.NestedString(v.(map[string]any), "name")
		testutil.Eventually(t, "CRD "+crd.GetName()+" served", func() error {
			_, err := dyn.Resource(widgetGVR(group, name)).List(ctx, metav1.ListOptions{})
			return err
		})
	}
}

func dynamicClient(t *testing.T, env *apiservertest.Env) dynamic.Interface {
	t.Helper()
	dyn, err := dynamic.NewForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	return dyn
}

func TestCustomResources(t *testing.T) {
	forEachTarget(t, apiservertest.Options{}, testCustomResources)
}

func testCustomResources(t *testing.T, env *apiservertest.Env) {
	ctx := ctxT(t)
	dyn := dynamicClient(t, env)
	group := widgetGroup(env)
	crdName := "widgets." + group
	createCRD(t, dyn, fromYAML(t, widgetCRDIn(group)))
	widgets := dyn.Resource(widgetGVR(group, "v1")).Namespace(env.Namespace)
	// Defaulting and pruning.
	w, err := widgets.Create(ctx, widget(group, "w1", "red"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r, _, _ := unstructured.NestedInt64(w.Object, "spec", "replicas"); r != 1 {
		t.Fatalf("default replicas %d", r)
	}
	if _, ok, _ := unstructured.NestedString(w.Object, "spec", "unknown"); ok {
		t.Fatal("unknown field not pruned")
	}
	if kept, _, _ := unstructured.NestedBool(w.Object, "spec", "extra", "kept"); !kept {
		t.Fatal("preserved field pruned")
	}
	if w.GetGeneration() != 1 {
		t.Fatalf("generation %d", w.GetGeneration())
	}
	// Validation.
	for _, tc := range []struct {
		name string
		spec map[string]any
	}{
		{"enum", map[string]any{"color": "pink"}},
		{"required", map[string]any{"size": "3cm"}},
		{"minimum", map[string]any{"color": "red", "replicas": int64(-1)}},
		{"pattern", map[string]any{"color": "red", "size": "big"}},
		{"type", map[string]any{"color": int64(3)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := widget(group, "bad", "red")
			bad.Object["spec"] = tc.spec
			_, err := widgets.Create(ctx, bad, metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) {
				t.Fatalf("got %v", err)
			}
			if st := err.(apierrors.APIStatus).Status(); st.Details == nil || len(st.Details.Causes) == 0 {
				t.Fatalf("no causes: %+v", st)
			}
		})
	}
	// Status subresource and generation.
	if err := unstructured.SetNestedField(w.Object, int64(2), "status", "replicas"); err != nil {
		t.Fatal(err)
	}
	w, err = widgets.UpdateStatus(ctx, w, metav1.UpdateOptions{})
	if err != nil || w.GetGeneration() != 1 {
		t.Fatalf("status update: %v generation %d", err, w.GetGeneration())
	}
	w, err = widgets.Patch(ctx, "w1", types.MergePatchType, []byte(`{"spec":{"color":"blue"},"status":{"replicas":9}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r, _, _ := unstructured.NestedInt64(w.Object, "status", "replicas"); r != 2 || w.GetGeneration() != 2 {
		t.Fatalf("main-resource patch: status.replicas %d generation %d", r, w.GetGeneration())
	}
	if _, err := widgets.Patch(ctx, "w1", types.StrategicMergePatchType, []byte(`{"spec":{"color":"red"}}`), metav1.PatchOptions{}); !apierrors.IsUnsupportedMediaType(err) {
		t.Fatalf("strategic merge patch on a CR: %v", err)
	}
	// Scale subresource.
	sc, err := widgets.Patch(ctx, "w1", types.MergePatchType, []byte(`{"spec":{"replicas":4}}`), metav1.PatchOptions{}, "scale")
	if err != nil {
		t.Fatal(err)
	}
	if r, _, _ := unstructured.NestedInt64(sc.Object, "spec", "replicas"); r != 4 || sc.GetKind() != "Scale" {
		t.Fatalf("scale: %v", sc.Object)
	}
	// Switching the storage version records it in status.storedVersions.
	crdObj, err := dyn.Resource(crdGVR).Patch(ctx, crdName, types.JSONPatchType,
		[]byte(`[{"op":"replace","path":"/spec/versions/0/storage","value":false},{"op":"replace","path":"/spec/versions/1/storage","value":true}]`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sv, _, _ := unstructured.NestedStringSlice(crdObj.Object, "status", "storedVersions"); fmt.Sprint(sv) != "[v1 v1beta1]" {
		t.Fatalf("storedVersions %v", sv)
	}
	// Another version serves the same objects.
	v1beta1 := dyn.Resource(widgetGVR(group, "v1beta1")).Namespace(env.Namespace)
	old, err := v1beta1.Get(ctx, "w1", metav1.GetOptions{})
	if err != nil || old.GetAPIVersion() != group+"/v1beta1" {
		t.Fatalf("v1beta1 get: %v %v", err, old)
	}
	// Field selectors on selectable fields.
	if _, err := widgets.Create(ctx, widget(group, "w2", "green"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	l, err := widgets.List(ctx, metav1.ListOptions{FieldSelector: "spec.color=green"})
	if err != nil || len(l.Items) != 1 || l.Items[0].GetName() != "w2" {
		t.Fatalf("field selector: %v %v", err, l)
	}
	// Table output with printer columns.
	tbl := getTable(t, env.Config(), "/apis/"+group+"/v1/namespaces/"+env.Namespace+"/widgets")
	if fmt.Sprint(columnNames(tbl)) != "[Name Color Replicas Age]" || len(tbl.Rows) != 2 || tbl.Rows[0].Cells[1] != "blue" {
		t.Fatalf("table %v rows %v", columnNames(tbl), tbl.Rows)
	}
	// Finalizers on a CR, then deleting the CRD deletes the objects
	// (kube-apiserver's CRD finalizer does it asynchronously).
	if _, err := widgets.Patch(ctx, "w2", types.MergePatchType, []byte(`{"metadata":{"finalizers":["example.com/hold"]}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := dyn.Resource(crdGVR).Delete(ctx, crdName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "w1 deleted with its CRD", func() error {
		if _, err := widgets.Get(ctx, "w1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("get w1: %v", err)
		}
		return nil
	})
	// kube-apiserver's finalizer deletes the objects one by one: w2 may be
	// marked a moment after w1 is gone.
	testutil.Eventually(t, "w2 terminating", func() error {
		w2, err := widgets.Get(ctx, "w2", metav1.GetOptions{})
		if err != nil || w2.GetDeletionTimestamp() == nil {
			return fmt.Errorf("w2 should be terminating: %v", err)
		}
		return nil
	})
	if _, err := widgets.Create(ctx, widget(group, "w3", "red"), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("create while the CRD terminates: %v", err)
	}
	if _, err := widgets.Patch(ctx, "w2", types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/finalizers"}]`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "CRD gone and its resource no longer served", func() error {
		if _, err := dyn.Resource(crdGVR).Get(ctx, crdName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("get CRD: %v", err)
		}
		if _, err := widgets.List(ctx, metav1.ListOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("list widgets: %v", err)
		}
		return nil
	})
}

func TestCRDValidation(t *testing.T) {
	forEachTarget(t, apiservertest.Options{}, testCRDValidation)
}

func testCRDValidation(t *testing.T, env *apiservertest.Env) {
	ctx := ctxT(t)
	dyn := dynamicClient(t, env)
	group := widgetGroup(env)
	bad := fromYAML(t, strings.Replace(widgetCRDIn(group), "name: widgets."+group, "name: wrong."+group, 1))
	if _, err := dyn.Resource(crdGVR).Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("CRD with a wrong name: %v", err)
	}
	createCRD(t, dyn, fromYAML(t, strings.Replace(widgetCRDIn(group), "scope: Namespaced", "scope: Cluster", 1)))
	ws := dyn.Resource(widgetGVR(group, "v1"))
	if _, err := ws.Create(ctx, widget(group, "c1", "red"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("cluster-scoped create: %v", err)
	}
	if _, err := ws.Namespace(env.Namespace).Get(ctx, "c1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("namespaced path of a cluster-scoped resource: %v", err)
	}
}

func hasCondition(conds []any, typ string) bool {
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ && m["status"] == "True" {
			return true
		}
	}
	return false
}

func getTable(t *testing.T, cfg *rest.Config, path string) *metav1.Table {
	t.Helper()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, cfg.Host+path, nil)
	req.Header.Set("Authorization", "Bearer "+cfg.BearerToken)
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tbl metav1.Table
	if err := json.NewDecoder(resp.Body).Decode(&tbl); err != nil || tbl.Kind != "Table" {
		t.Fatalf("table: %v %+v", err, tbl)
	}
	return &tbl
}

func columnNames(t *metav1.Table) []string {
	var out []string
	for _, c := range t.ColumnDefinitions {
		out = append(out, c.Name)
	}
	return out
}
