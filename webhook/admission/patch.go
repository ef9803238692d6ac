package admission

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// PatchOperation is one operation of a JSON patch (RFC 6902): "add",
// "remove" or "replace" of the value at Path (a JSON pointer).
type PatchOperation struct {
	Operation string `json:"op"`
	Path      string `json:"path"`
	// Value is the JSON of the value to add or replace with; unused by
	// "remove".
	Value json.RawMessage `json:"value,omitempty"`
}

// MarshalJSON writes the operation, with "value" (null included) for every
// operation but "remove".
func (p PatchOperation) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"op":`)
	op, _ := json.Marshal(p.Operation)
	b.Write(op)
	b.WriteString(`,"path":`)
	path, _ := json.Marshal(p.Path)
	b.Write(path)
	if p.Operation != "remove" {
		b.WriteString(`,"value":`)
		if len(p.Value) == 0 {
			b.WriteString("null")
		} else {
			b.Write(p.Value)
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func (p PatchOperation) String() string {
	if p.Operation == "remove" {
		return p.Operation + " " + p.Path
	}
	return p.Operation + " " + p.Path + " " + string(p.Value)
}

// CreatePatch returns the JSON patch that turns the JSON document original
// into current: objects are compared key by key, arrays element by
// element (elements added or removed at the end), anything else replaced.
// Keys are visited in sorted order, so the patch is deterministic.
func CreatePatch(original, current []byte) ([]PatchOperation, error) {
	a, err := decodeJSON(original)
	if err != nil {
		return nil, fmt.Errorf("original: %w", err)
	}
	b, err := decodeJSON(current)
	if err != nil {
		return nil, fmt.Errorf("current: %w", err)
	}
	var ops []PatchOperation
	if err := diff(&ops, "", a, b); err != nil {
		return nil, err
	}
	return ops, nil
}

func decodeJSON(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber() // numbers compared and written back as they were
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, fmt.Errorf("data after the JSON document")
	}
	return v, nil
}

// escape makes an object key a JSON pointer token.
func escape(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}

func op(kind, path string, v any) (PatchOperation, error) {
	p := PatchOperation{Operation: kind, Path: path}
	if kind != "remove" {
		raw, err := json.Marshal(v)
		if err != nil {
			return p, err
		}
		p.Value = raw
	}
	return p, nil
}

func diff(ops *[]PatchOperation, path string, a, b any) error {
	add := func(kind, path string, v any) error {
		o, err := op(kind, path, v)
		if err != nil {
			return err
		}
		*ops = append(*ops, o)
		return nil
	}
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			return add("replace", path, b)
		}
		keys := make([]string, 0, len(av)+len(bv))
		for k := range av {
			keys = append(keys, k)
		}
		for k := range bv {
			if _, ok := av[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			p := path + "/" + escape(k)
			x, inA := av[k]
			y, inB := bv[k]
			switch {
			case !inB:
				if err := add("remove", p, nil); err != nil {
					return err
				}
			case !inA:
				if err := add("add", p, y); err != nil {
					return err
				}
			default:
				if err := diff(ops, p, x, y); err != nil {
					return err
				}
			}
		}
		return nil
	case []any:
		bv, ok := b.([]any)
		if !ok {
			return add("replace", path, b)
		}
		n := min(len(av), len(bv))
		for i := range n {
			if err := diff(ops, path+"/"+strconv.Itoa(i), av[i], bv[i]); err != nil {
				return err
			}
		}
		for i := n; i < len(bv); i++ {
			if err := add("add", path+"/"+strconv.Itoa(i), bv[i]); err != nil {
				return err
			}
		}
		for i := len(av) - 1; i >= n; i-- {
			if err := add("remove", path+"/"+strconv.Itoa(i), nil); err != nil {
				return err
			}
		}
		return nil
	default:
		if !scalarEqual(a, b) {
			return add("replace", path, b)
		}
		return nil
	}
}

// scalarEqual compares numbers by their text: 1 and 1.0 differ (a Go
// decoder of an integer field takes only the first).
func scalarEqual(a, b any) bool {
	switch a.(type) {
	case json.Number, nil, bool, string:
		return a == b
	}
	return false
}
