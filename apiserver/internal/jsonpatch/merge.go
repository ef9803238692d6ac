package jsonpatch

import (
	"bytes"
	"encoding/json"
	"errors"
)

// The errors of MergePatch, with v4's texts.
var (
	ErrBadJSONDoc   = errors.New("Invalid JSON Document") //nolint:staticcheck // v4's text, which kube-apiserver answers
	ErrBadJSONPatch = errors.New("Invalid JSON Patch")    //nolint:staticcheck // v4's text, which kube-apiserver answers
)

// MergePatch applies the JSON merge patch patch (RFC 7386) to the JSON
// document doc as gopkg.in/evanphx/json-patch.v4's MergePatch does, and
// returns what it returns, byte for byte: the keys of the objects the patch
// reached into sorted, the rest of the texts as they were (compacted);
// nulls are pruned from the objects the patch adds, but not from a value
// that replaces an object. A document or patch that is not an object gives
// v4's answers too. Unlike v4's, the work is linear in the sizes of doc and
// patch (v4's grows with the patch's depth times the sizes).
func MergePatch(doc, patch []byte) ([]byte, error) {
	docKind, docOK := rootKind(doc)
	patchKind, patchOK := rootKind(patch)
	switch {
	case !docOK:
		return nil, ErrBadJSONDoc
	case !patchOK:
		return nil, ErrBadJSONPatch
	case docKind == 'n':
		return nil, ErrBadJSONDoc
	case patchKind == 'n':
		return nil, ErrBadJSONPatch
	}
	p := &node{raw: bytes.Trim(patch, " \t\r\n")}
	switch {
	case patchKind == '[':
		// Not an object: the patch is the result, with the nulls of its
		// objects pruned.
		p.toAry()
		pruneNulls(p)
		return appendJSON(nil, p), nil
	case patchKind != '{':
		return nil, ErrBadJSONPatch
	case docKind != '{':
		p.toObj()
		pruneNulls(p)
		return appendJSON(nil, p), nil
	}
	d := &node{raw: bytes.Trim(doc, " \t\r\n")}
	d.toObj()
	p.toObj()
	mergeObjects(d, p)
	return appendJSON(nil, d), nil
}

// rootKind returns the first byte of a JSON text's value ('n' for null),
// and whether the text is valid JSON, as encoding/json decodes it (which
// also refuses nesting deeper than 10,000).
func rootKind(b []byte) (byte, bool) {
	if !json.Valid(b) {
		return 0, false
	}
	return bytes.TrimLeft(b, " \t\r\n")[0], true
}

// mergeObjects merges the parsed object patch into the parsed object doc.
func mergeObjects(doc, patch *node) {
	for k, v := range patch.obj {
		if v == nil {
			delete(doc.obj, k)
			continue
		}
		if cur := doc.obj[k]; cur != nil {
			doc.obj[k] = merge(cur, v)
		} else {
			pruneNulls(v)
			doc.obj[k] = v
		}
	}
}

// merge returns the merge of patch into cur (neither null).
func merge(cur, patch *node) *node {
	if !cur.toObj() {
		pruneNulls(patch)
		return patch
	}
	if !patch.toObj() {
		return patch // as v4: not pruned
	}
	mergeObjects(cur, patch)
	return cur
}

// pruneNulls drops the null members of the objects in n, parsing every
// object and array in it.
func pruneNulls(n *node) {
	switch {
	case n.toObj():
		for k, v := range n.obj {
			if v == nil {
				delete(n.obj, k)
			} else {
				pruneNulls(v)
			}
		}
	case n.toAry():
		for _, v := range n.ary {
			if v != nil {
				pruneNulls(v)
			}
		}
		if n.ary == nil {
			n.ary = []*node{} // as v4, which makes a new slice
		}
	}
}
