package openapi

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"unicode"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Building the documents from the resources: /openapi/v2, one /openapi/v3
// document per group version, their paths and kind definitions.

func (b *Builder) buildV2(rs []Resource) (*Document, error) {
	g := newGen(false)
	paths := map[string]any{}
	for i := range rs {
		if err := g.resource(&rs[i], paths); err != nil {
			return nil, err
		}
	}
	doc := map[string]any{
		"swagger":     "2.0",
		"info":        map[string]any{"title": b.opts.Title, "version": b.opts.Version},
		"paths":       paths,
		"definitions": g.defs,
		"securityDefinitions": map[string]any{
			"BearerToken": map[string]any{"description": "Bearer Token authentication", "type": "apiKey", "name": "authorization", "in": "header"},
		},
		"security": []any{map[string]any{"BearerToken": []any{}}},
	}
	for _, w := range g.warnings {
		b.opts.Logger.Warn("openapi: v2 schema", "problem", w)
	}
	js, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return newDocument(js), nil
}

// buildV3 builds the v3 document of every group version whose resources
// differ from the previous build (old, oldKeys), reusing the others.
func (b *Builder) buildV3(rs []Resource, old map[string]*Document, oldKeys map[string]string) (map[string]*Document, map[string]string, *Document, error) {
	byGV := map[string][]Resource{}
	var keys []string
	for _, r := range rs {
		k := pathKey(r.GVK.GroupVersion())
		if _, ok := byGV[k]; !ok {
			keys = append(keys, k)
		}
		byGV[k] = append(byGV[k], r)
	}
	docs := map[string]*Document{}
	gvKeys := map[string]string{}
	discPaths := map[string]any{}
	for _, k := range keys {
		fp, err := fingerprint(byGV[k])
		if err != nil {
			return nil, nil, nil, err
		}
		gvKeys[k] = fp
		d := old[k]
		if d == nil || oldKeys[k] != fp {
			if d, err = b.buildGroupVersion(byGV[k]); err != nil {
				return nil, nil, nil, err
			}
		}
		docs[k] = d
		discPaths[k] = map[string]any{"serverRelativeURL": "/openapi/v3/" + k + "?hash=" + d.Hash}
	}
	js, err := json.Marshal(map[string]any{"paths": discPaths})
	if err != nil {
		return nil, nil, nil, err
	}
	return docs, gvKeys, newDocument(js), nil
}

func (b *Builder) buildGroupVersion(rs []Resource) (*Document, error) {
	g := newGen(true)
	paths := map[string]any{}
	for i := range rs {
		if err := g.resource(&rs[i], paths); err != nil {
			return nil, err
		}
	}
	doc := map[string]any{
		"openapi": "3.0.0",
		"info":    map[string]any{"title": b.opts.Title, "version": b.opts.Version},
		"paths":   paths,
		"components": map[string]any{
			"schemas": g.defs,
			"securitySchemes": map[string]any{
				"BearerToken": map[string]any{"type": "apiKey", "description": "Bearer Token authentication", "name": "authorization", "in": "header"},
			},
		},
		"security": []any{map[string]any{"BearerToken": []any{}}},
	}
	for _, w := range g.warnings {
		b.opts.Logger.Warn("openapi: v3 schema", "problem", w)
	}
	js, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return newDocument(js), nil
}

// resource adds the definitions and paths of r.
func (g *gen) resource(r *Resource, paths map[string]any) error {
	kindName, listName, err := g.kindDefinitions(r)
	if err != nil {
		return fmt.Errorf("resource %s: %w", r.GVK, err)
	}
	// Only what the resource's operations use is defined: kube-apiserver's
	// document of a create-only group (access reviews) has no Status,
	// DeleteOptions or Patch.
	var statusName, deleteOptsName, patchName string
	if r.has("delete") || r.has("deletecollection") {
		statusName = g.define(reflect.TypeFor[metav1.Status]())
		deleteOptsName = g.define(reflect.TypeFor[metav1.DeleteOptions]())
	}
	if r.has("patch") || len(r.Subresources) > 0 {
		patchName = g.define(reflect.TypeFor[metav1.Patch]())
	}
	gv := r.GVK.GroupVersion()
	prefix := "/" + pathKey(gv)
	op := opBuilder{g: g, r: r, tag: tagFor(gv), gvCamel: gvCamel(gv)}

	root := prefix + "/" + r.Plural
	if r.Namespaced {
		if r.has("list") {
			paths[root] = map[string]any{
				"get":        op.build("get", "list", "list"+op.gvCamel+r.GVK.Kind+"ForAllNamespaces", "list or watch objects of kind "+r.GVK.Kind, listName, ""),
				"parameters": op.pathParams(false, false),
			}
		}
		root = prefix + "/namespaces/{namespace}/" + r.Plural
	}
	ns := ""
	if r.Namespaced {
		ns = "Namespaced"
	}
	coll := map[string]any{}
	if r.has("list") {
		coll["get"] = op.build("get", "list", "list"+op.gvCamel+ns+r.GVK.Kind, "list or watch objects of kind "+r.GVK.Kind, listName, "")
	}
	if r.has("create") {
		coll["post"] = op.build("post", "post", "create"+op.gvCamel+ns+r.GVK.Kind, "create "+article(r.GVK.Kind)+r.GVK.Kind, kindName, kindName)
	}
	if r.has("deletecollection") {
		coll["delete"] = op.build("delete", "deletecollection", "deletecollection"+op.gvCamel+ns+r.GVK.Kind, "delete collection of "+r.GVK.Kind, statusName, deleteOptsName)
	}
	if len(coll) > 0 {
		coll["parameters"] = op.pathParams(r.Namespaced, false)
		paths[root] = coll
	}
	item := map[string]any{}
	if r.has("get") {
		item["get"] = op.build("get", "get", "read"+op.gvCamel+ns+r.GVK.Kind, "read the specified "+r.GVK.Kind, kindName, "")
	}
	if r.has("update") {
		item["put"] = op.build("put", "put", "replace"+op.gvCamel+ns+r.GVK.Kind, "replace the specified "+r.GVK.Kind, kindName, kindName)
	}
	if r.has("patch") {
		item["patch"] = op.build("patch", "patch", "patch"+op.gvCamel+ns+r.GVK.Kind, "partially update the specified "+r.GVK.Kind, kindName, patchName)
	}
	if r.has("delete") {
		item["delete"] = op.build("delete", "delete", "delete"+op.gvCamel+ns+r.GVK.Kind, "delete "+article(r.GVK.Kind)+r.GVK.Kind, statusName, deleteOptsName)
	}
	if len(item) > 0 {
		item["parameters"] = op.pathParams(r.Namespaced, true)
		paths[root+"/{name}"] = item
	}
	for _, sub := range r.Subresources {
		target := kindName
		if sub == "scale" {
			target = g.define(reflect.TypeFor[autoscalingv1.Scale]())
		}
		title := strings.ToUpper(sub[:1]) + sub[1:]
		sp := map[string]any{
			"get":        op.build("get", "get", "read"+op.gvCamel+ns+r.GVK.Kind+title, "read "+sub+" of the specified "+r.GVK.Kind, target, ""),
			"put":        op.build("put", "put", "replace"+op.gvCamel+ns+r.GVK.Kind+title, "replace "+sub+" of the specified "+r.GVK.Kind, target, target),
			"patch":      op.build("patch", "patch", "patch"+op.gvCamel+ns+r.GVK.Kind+title, "partially update "+sub+" of the specified "+r.GVK.Kind, target, patchName),
			"parameters": op.pathParams(r.Namespaced, true),
		}
		paths[root+"/{name}/"+sub] = sp
	}
	return nil
}

// kindDefinitions defines the kind and list schemas of r and returns their
// names, with x-kubernetes-group-version-kind on both; a resource that
// cannot be listed has no list schema (listName "").
func (g *gen) kindDefinitions(r *Resource) (kindName, listName string, err error) {
	gvk := r.GVK
	if r.Type != nil {
		kindName = g.define(r.Type)
	} else {
		kindName = gvkModelName(gvk.Group, gvk.Version, gvk.Kind)
		s, err := g.crdSchema(r.Schema)
		if err != nil {
			// Like kube-apiserver with a schema it cannot publish: serve
			// the kind as an object with any fields rather than fail every
			// document.
			g.warnings = append(g.warnings, fmt.Sprintf("%s: publishing as type object: %v", gvk, err))
			s = map[string]any{"type": "object"}
		}
		g.defs[kindName] = s
		g.done[kindName] = nil
	}
	addGVK(g.defs[kindName], gvk)
	if !r.has("list") {
		return kindName, "", nil // no list type either (access reviews)
	}
	listGVK := gvk.GroupVersion().WithKind(r.listKind())
	if r.ListType != nil {
		listName = g.define(r.ListType)
	} else {
		if r.Type != nil {
			listName = strings.TrimSuffix(kindName, gvk.Kind) + r.listKind()
		} else {
			listName = gvkModelName(gvk.Group, gvk.Version, r.listKind())
		}
		g.defs[listName] = map[string]any{
			"type":        "object",
			"description": fmt.Sprintf("%s is a list of %s", r.listKind(), gvk.Kind),
			"required":    []any{"items"},
			"properties": map[string]any{
				"apiVersion": map[string]any{"type": "string", "description": typeMetaDocs["apiVersion"]},
				"kind":       map[string]any{"type": "string", "description": typeMetaDocs["kind"]},
				"metadata":   g.ref(g.define(reflect.TypeFor[metav1.ListMeta]()), partialMetaListDocs["metadata"]),
				"items": map[string]any{
					"type":        "array",
					"description": fmt.Sprintf("List of %s. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md", r.Plural),
					"items":       g.ref(kindName, ""),
				},
			},
		}
		g.done[listName] = nil
	}
	addGVK(g.defs[listName], listGVK)
	return kindName, listName, nil
}

func addGVK(def map[string]any, gvk schema.GroupVersionKind) {
	entry := map[string]any{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind}
	list, _ := def["x-kubernetes-group-version-kind"].([]any)
	for _, e := range list {
		if m, ok := e.(map[string]any); ok && m["group"] == gvk.Group && m["version"] == gvk.Version && m["kind"] == gvk.Kind {
			return
		}
	}
	def["x-kubernetes-group-version-kind"] = append(list, entry)
}

// gvkModelName is the definition name of a custom resource kind:
// the group reversed, then version and kind ("com.example.v1.Widget").
func gvkModelName(group, version, kind string) string {
	parts := strings.Split(group, ".")
	slices.Reverse(parts)
	return fmt.Sprintf("%s.%s.%s", strings.Join(parts, "."), version, kind)
}

func tagFor(gv schema.GroupVersion) string {
	g := gv.Group
	if g == "" {
		g = "core"
	}
	return camel(g, false) + "_" + gv.Version
}

func gvCamel(gv schema.GroupVersion) string {
	g := gv.Group
	if g == "" {
		g = "core"
	}
	return camel(g, true) + camel(gv.Version, true)
}

// camel turns "apiextensions.k8s.io" into "apiextensionsK8sIo".
func camel(s string, upperFirst bool) string {
	var out []rune
	up := upperFirst
	for _, r := range s {
		if r == '.' || r == '-' || r == '_' {
			up = true
			continue
		}
		if up {
			r = unicode.ToUpper(r)
			up = false
		}
		out = append(out, r)
	}
	return string(out)
}

func article(noun string) string {
	if noun != "" && strings.ContainsRune("AEIOU", rune(noun[0])) {
		return "an "
	}
	return "a "
}
