package apiext

import (
	"sort"
	"strconv"
	"strings"
)

// Default applies the schema's defaults to obj in place, as kube-apiserver
// does when it decodes a custom resource:
//
//  1. null values of fields that are not nullable and have no default are
//     removed (so that an explicit null means "unset");
//  2. every property that is missing, or null while not nullable, gets a deep
//     copy of its default, recursively: inside properties, array items and
//     additionalProperties values, including inside values that were just
//     defaulted.
//
// The root's apiVersion, kind and metadata are never touched (kube-apiserver
// forbids defaults there).
func (s *Structural) Default(obj map[string]any) {
	if s == nil || s.root == nil || obj == nil {
		return
	}
	pruneNulls(obj, s.root, true)
	applyDefaults(obj, s.root, true)
}

func isNonNullableNull(v any, n *node) bool {
	return v == nil && n != nil && !n.nullable
}

// pruneNulls is PruneNonNullableNullsWithoutDefaults.
func pruneNulls(v any, n *node, root bool) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if root && metaField(k) {
				continue
			}
			var c *node
			if n != nil {
				if pc, ok := n.properties[k]; ok {
					c = pc
				} else {
					c = n.additional
				}
			}
			if isNonNullableNull(e, c) && !c.hasDefault {
				delete(t, k)
				continue
			}
			pruneNulls(e, c, false)
		}
	case []any:
		var c *node
		if n != nil {
			c = n.items
		}
		for _, e := range t {
			pruneNulls(e, c, false)
		}
	}
}

func applyDefaults(v any, n *node, root bool) {
	if n == nil {
		return
	}
	switch t := v.(type) {
	case map[string]any:
		for _, k := range n.propNames {
			if root && metaField(k) {
				continue
			}
			p := n.properties[k]
			if !p.hasDefault {
				continue
			}
			if e, found := t[k]; !found || isNonNullableNull(e, p) {
				t[k] = deepCopyJSON(p.def)
			}
		}
		for k, e := range t {
			if root && metaField(k) {
				continue
			}
			if p, ok := n.properties[k]; ok {
				applyDefaults(e, p, false)
			} else if a := n.additional; a != nil {
				if isNonNullableNull(e, a) && a.hasDefault {
					t[k] = deepCopyJSON(a.def)
				}
				applyDefaults(t[k], a, false)
			}
		}
	case []any:
		it := n.items
		if it == nil {
			return
		}
		for i := range t {
			if isNonNullableNull(t[i], it) && it.hasDefault {
				t[i] = deepCopyJSON(it.def)
			}
			applyDefaults(t[i], it, false)
		}
	}
}

func metaField(k string) bool {
	return k == "apiVersion" || k == "kind" || k == "metadata"
}

// Prune removes, in place, every field of obj the schema does not specify,
// unless x-kubernetes-preserve-unknown-fields is true at that point (fields
// the schema does specify below such a node are still pruned recursively).
// apiVersion, kind and metadata are never pruned at the root nor inside a
// node with x-kubernetes-embedded-resource; their contents are left alone
// (the server validates metadata itself).
//
// It returns the paths of the removed fields, sorted, in kube-apiserver's
// notation ("spec.foo", "spec.ports[0].bar"), ready for
// `unknown field "<path>"` warnings.
func (s *Structural) Prune(obj map[string]any) []string {
	if s == nil || s.root == nil || obj == nil {
		return nil
	}
	root := *s.root
	root.embedded = true
	pr := &pruner{}
	pr.prune(obj, &root)
	sort.Strings(pr.pruned)
	return pr.pruned
}

type pruner struct {
	path   []string
	pruned []string
}

func (pr *pruner) pushKey(k string) int {
	l := len(pr.path)
	if l > 0 {
		pr.path = append(pr.path, ".")
	}
	pr.path = append(pr.path, k)
	return l
}

func (pr *pruner) pushIndex(i int) int {
	l := len(pr.path)
	pr.path = append(pr.path, "[", strconv.Itoa(i), "]")
	return l
}

func (pr *pruner) record(k string) {
	l := pr.pushKey(k)
	pr.pruned = append(pr.pruned, strings.Join(pr.path, ""))
	pr.path = pr.path[:l]
}

func (pr *pruner) prune(v any, n *node) {
	if n != nil && n.preserveUnknown {
		pr.skipPrune(v, n)
		return
	}
	switch t := v.(type) {
	case map[string]any:
		if n == nil {
			for k := range t {
				pr.record(k)
				delete(t, k)
			}
			return
		}
		for k, e := range t {
			if n.embedded && metaField(k) {
				continue
			}
			if c, ok := n.child(k); ok {
				l := pr.pushKey(k)
				pr.prune(e, c)
				pr.path = pr.path[:l]
			} else {
				pr.record(k)
				delete(t, k)
			}
		}
	case []any:
		var it *node
		if n != nil {
			it = n.items
		}
		for i, e := range t {
			l := pr.pushIndex(i)
			pr.prune(e, it)
			pr.path = pr.path[:l]
		}
	}
}

// child returns the schema of n's property k: its own, else
// additionalProperties' (nil for additionalProperties without a schema);
// ok is false for a property that neither knows.
func (n *node) child(k string) (c *node, ok bool) {
	if c, ok := n.properties[k]; ok {
		return c, true
	}
	if n.additionalSet {
		return n.additional, true
	}
	return nil, false
}

func (pr *pruner) skipPrune(v any, n *node) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if n.embedded && metaField(k) {
				continue
			}
			if c, ok := n.child(k); ok {
				l := pr.pushKey(k)
				pr.prune(e, c)
				pr.path = pr.path[:l]
			}
		}
	case []any:
		if n.items == nil {
			return
		}
		for i, e := range t {
			l := pr.pushIndex(i)
			pr.skipPrune(e, n.items)
			pr.path = pr.path[:l]
		}
	}
}
