package apiserver

import (
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"

	"kloop.dev/kloop/apiserver/internal/jsontree"
	"kloop.dev/kloop/apiserver/internal/typed"
	"kloop.dev/kloop/apiserver/storage"
)

// The usual body of a built-in kind is already in the form its Go type
// gives back: the round trip decodeTypedPlain makes (strict decoding into
// the type, encoding, decoding into a JSON tree) returns the same tree.
// fastTyped recognizes such bodies from the JSON tree alone, with a
// description of the type (typed.Schema), and takes the tree as it is. It
// answers only when the round trip is sure to give that tree: no unknown
// or repeated field, every value of its field's Go type and in the form
// that type encodes it (no null, no empty value that omitempty would drop,
// canonical timestamps and base64), and a kind whose type has no defaults.
// Anything else goes the long way, which decides.

// fastTyped decodes body as decodeTypedPlain would, when it can tell the
// result from the body's JSON tree (see above); ok is false otherwise.
func (k *kind) fastTyped(body []byte) (obj map[string]any, ok bool) {
	s := k.typedSchema()
	if s == nil {
		return nil, false
	}
	obj, ok = jsontree.DecodeStrict(body)
	if !ok || !k.typedTree(s, obj) {
		return nil, false
	}
	return obj, true
}

// typedTree reports whether the JSON tree obj (with no repeated key) round
// trips through k's Go type (schema s) unchanged once its zero fields are
// added, and adds them.
func (k *kind) typedTree(s *typed.Schema, obj map[string]any) bool {
	if av, _ := obj["apiVersion"].(string); av != k.apiVersion() {
		return false
	}
	if kd, _ := obj["kind"].(string); kd != k.kind {
		return false
	}
	return s.Check(obj)
}

// fastMergePatch applies a JSON merge patch to cur, an object of k, as
// servePatch's long way does (internal/jsonpatch's MergePatch, which is
// json-patch.v4's, of cur's served bytes, then decodeBody), when it can
// tell the result from the JSON trees alone: k served as stored, the patch
// a JSON object jsontree.Decode decodes, and the result of the form
// fastTyped takes. ok is false otherwise. (Both ways take time linear in
// the sizes: a patch nested deeper than jsontree.Decode goes, which may be
// 10,000 levels, goes the long way.)
func (s *Server) fastMergePatch(k *kind, cur *storage.Object, patch []byte) (obj map[string]any, ok bool) {
	sch := k.typedSchema()
	if sch == nil || !k.servesAsIs(cur) {
		return nil, false
	}
	// jsontree.Decode skips JSON white space only: other bytes around the
	// object (form feed, Unicode spaces) make the long way's "invalid JSON
	// patch".
	p, ok := jsontree.Decode(patch)
	if !ok {
		return nil, false
	}
	if m, ok := s.decoded.get(cur); ok {
		obj = runtime.DeepCopyJSON(m)
	} else if obj, ok = jsontree.Decode(cur.Data); !ok {
		return nil, false
	}
	jsontree.MergePatch(obj, p)
	if !k.typedTree(sch, obj) {
		return nil, false
	}
	return obj, true
}

// typedSchema returns the description of k's Go type for fastTyped, nil
// when fastTyped cannot serve k (no Go type, defaults, or a type shape it
// does not know).
func (k *kind) typedSchema() *typed.Schema {
	k.schemaOnce.Do(func() {
		if k.newTyped == nil || k.review != nil {
			return
		}
		v := k.newTyped()
		if k.applyDefaults(v) {
			return // defaults change the tree
		}
		t := reflect.TypeOf(v)
		if t.Kind() != reflect.Pointer {
			return
		}
		s, err := typed.New(t.Elem())
		if err == nil {
			k.schema = s
		}
	})
	return k.schema
}
