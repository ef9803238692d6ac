package apiserver

import (
	"fmt"
	"net/url"
	"strconv"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"kloop.dev/kloop/apiserver/internal/jsontree"
	"kloop.dev/kloop/apiserver/storage"
)

// predicate builds the object filter of the labelSelector and fieldSelector
// parameters; nil when there is none. Unknown fields get 400, as
// kube-apiserver answers "field label not supported".
func (s *Server) predicate(k *kind, q url.Values) (func(*storage.Object) bool, error) {
	var ls labels.Selector
	if v := q.Get("labelSelector"); v != "" {
		sel, err := labels.Parse(v)
		if err != nil {
			return nil, badRequest("%v", err)
		}
		if !sel.Empty() {
			ls = sel
		}
	}
	var fs fields.Selector
	if v := q.Get("fieldSelector"); v != "" {
		sel, err := fields.ParseSelector(v)
		if err != nil {
			// The parser's message as is, as kube-apiserver answers it.
			return nil, badRequest("%v", err)
		}
		if len(k.fieldAliases) > 0 {
			sel, err = sel.Transform(func(f, v string) (string, string, error) {
				if to, ok := k.fieldAliases[f]; ok {
					return to, v, nil
				}
				return f, v, nil
			})
			if err != nil {
				return nil, badRequest("invalid field selector: %v", err)
			}
		}
		for _, req := range sel.Requirements() {
			if !k.selectable(req.Field) {
				if len(k.fields) == 0 && k.crd == nil {
					// Kinds with no selectable fields of their own use
					// apimachinery's default conversion and its message.
					return nil, badRequest("%q is not a known field selector: only %q, %q", req.Field, "metadata.name", "metadata.namespace")
				}
				return nil, badRequest("field label not supported: %s", req.Field)
			}
		}
		if !sel.Empty() {
			fs = sel
		}
	}
	switch {
	case ls == nil && fs == nil:
		return nil, nil
	case fs == nil:
		return func(o *storage.Object) bool { return ls.Matches(labels.Set(o.Labels)) }, nil
	case ls == nil:
		return func(o *storage.Object) bool { return fs.Matches(fields.Set(o.Fields)) }, nil
	}
	return func(o *storage.Object) bool {
		return ls.Matches(labels.Set(o.Labels)) && fs.Matches(fields.Set(o.Fields))
	}, nil
}

func (k *kind) selectable(f string) bool {
	if f == "metadata.name" || f == "metadata.namespace" {
		return true
	}
	for _, sf := range k.fields {
		if sf.name == f {
			return true
		}
	}
	return false
}

// fieldsOf extracts the selectable fields of a stored object.
func (k *kind) fieldsOf(obj map[string]any) map[string]string {
	out := make(map[string]string, 2+len(k.fields))
	out["metadata.name"] = jsontree.Str(obj, "metadata", "name")
	out["metadata.namespace"] = jsontree.Str(obj, "metadata", "namespace")
	for _, f := range k.fields {
		switch v := jsontree.Get(obj, f.path...).(type) {
		case string:
			out[f.name] = v
		case bool:
			out[f.name] = strconv.FormatBool(v)
		case int64:
			out[f.name] = strconv.FormatInt(v, 10)
		case nil:
			out[f.name] = f.absent
		default:
			out[f.name] = fmt.Sprint(v)
		}
	}
	return out
}

// labelsOf extracts the labels of an object.
func labelsOf(obj map[string]any) map[string]string {
	m, _ := jsontree.Get(obj, "metadata", "labels").(map[string]any)
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k], _ = v.(string)
	}
	return out
}
