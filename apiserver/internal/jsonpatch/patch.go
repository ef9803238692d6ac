package jsonpatch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Operation is one operation of a JSON patch as
// gopkg.in/evanphx/json-patch.v4's DecodePatch decodes it (its Operation
// type): the text of each member by name, nil for a null.
type Operation = map[string]*json.RawMessage

// ErrCopyLimit is the error (wrapped) of a patch whose copy operations
// would add more bytes to the document than the limit allows.
var ErrCopyLimit = errors.New("the accumulated size increase of copy operations exceeds the limit")

var errMissing = errors.New("missing value")

// Apply applies the JSON patch ops (RFC 6902) to the JSON document doc
// as gopkg.in/evanphx/json-patch.v4's Patch.Apply does with its default
// settings (negative array indices count from the end), and returns what
// it returns, byte for byte: the top-level keys sorted, and so the keys of
// every object an operation reached into, the rest of the document's text
// as it was (compacted). Where v4 panics (a "test" of an array holding
// null, a "replace" or "test" of the whole document without a value, an
// "add" into a null that a "copy" made) Apply returns an error, or for the
// test compares null with null as equal.
//
// copyLimit bounds the bytes that the patch's copy operations add in all,
// as v4's AccumulatedCopySizeLimit (which kube-apiserver sets to 3 MiB);
// past it Apply fails with an error wrapping ErrCopyLimit. Zero means no
// bound. The work is linear in the size of doc, ops and what copies add.
func Apply(doc []byte, ops []Operation, copyLimit int64) ([]byte, error) {
	if len(doc) == 0 {
		return doc, nil
	}
	if !json.Valid(doc) {
		return nil, errors.New("invalid JSON document")
	}
	root := &node{raw: bytes.Trim(doc, " \t\r\n")}
	if doc[0] == '[' {
		if !root.toAry() {
			return nil, errors.New("the document is not an array")
		}
	} else if !root.toObj() {
		return nil, errors.New("the document is not an object")
	}
	p := &patcher{root: root, copyLimit: copyLimit}
	for i, op := range ops {
		if err := p.apply(op); err != nil {
			return nil, fmt.Errorf("operation %d: %w", i, err)
		}
	}
	return appendJSON(nil, p.root), nil
}

// patcher applies the operations of one patch.
type patcher struct {
	root      *node // a parsed object or array
	copyLimit int64
	copied    int64 // bytes the copy operations added so far
}

func (p *patcher) apply(op Operation) error {
	switch kindOf(op) {
	case "add":
		return p.add(op)
	case "remove":
		return p.remove(op)
	case "replace":
		return p.replace(op)
	case "move":
		return p.move(op)
	case "test":
		return p.test(op)
	case "copy":
		return p.copy(op)
	}
	return fmt.Errorf("unexpected kind: %s", kindOf(op))
}

// kindOf is the operation's "op", or "unknown".
func kindOf(op Operation) string {
	s, err := member(op, "op")
	if err != nil {
		return "unknown"
	}
	return s
}

// member decodes the string member name of op.
func member(op Operation, name string) (string, error) {
	raw := op[name]
	if raw == nil {
		return "", fmt.Errorf("operation missing %s field: %w", name, errMissing)
	}
	var s string
	if err := json.Unmarshal(*raw, &s); err != nil {
		return "", err
	}
	return s, nil
}

// value is the operation's "value" as a new node: nil when absent, a node
// with a nil raw for null.
func value(op Operation) *node {
	raw, ok := op["value"]
	if !ok {
		return nil
	}
	if raw == nil {
		return &node{}
	}
	return &node{raw: *raw}
}

func (p *patcher) add(op Operation) error {
	path, err := member(op, "path")
	if err != nil {
		return err
	}
	con, key := p.find(path)
	if con == nil {
		return fmt.Errorf("add: missing path %q: %w", path, errMissing)
	}
	return con.add(key, value(op))
}

func (p *patcher) remove(op Operation) error {
	path, err := member(op, "path")
	if err != nil {
		return err
	}
	con, key := p.find(path)
	if con == nil {
		return fmt.Errorf("remove: missing path %q: %w", path, errMissing)
	}
	return con.remove(key)
}

func (p *patcher) replace(op Operation) error {
	path, err := member(op, "path")
	if err != nil {
		return err
	}
	if path == "" {
		val := value(op)
		if val == nil || (!val.toObj() && !val.toAry()) {
			return errors.New("replace: the value of the whole document must be an object or an array")
		}
		p.root = val
		return nil
	}
	con, key := p.find(path)
	if con == nil {
		return fmt.Errorf("replace: missing path %q: %w", path, errMissing)
	}
	// As v4: a missing key of an object is no error (get finds nil).
	if _, err := con.get(key); err != nil {
		return err
	}
	return con.set(key, value(op))
}

func (p *patcher) move(op Operation) error {
	from, err := member(op, "from")
	if err != nil {
		return err
	}
	con, key := p.find(from)
	if con == nil {
		return fmt.Errorf("move: missing from path %q: %w", from, errMissing)
	}
	val, err := con.get(key)
	if err != nil {
		return err
	}
	if err := con.remove(key); err != nil {
		return err
	}
	path, err := member(op, "path")
	if err != nil {
		return err
	}
	if con, key = p.find(path); con == nil {
		return fmt.Errorf("move: missing path %q: %w", path, errMissing)
	}
	return con.add(key, val)
}

func (p *patcher) test(op Operation) error {
	path, err := member(op, "path")
	if err != nil {
		return err
	}
	failed := fmt.Errorf("test of %q failed", path)
	if path == "" {
		if val := value(op); val == nil || !equal(p.root, val) {
			return failed
		}
		return nil
	}
	con, key := p.find(path)
	if con == nil {
		return fmt.Errorf("test: missing path %q: %w", path, errMissing)
	}
	cur, err := con.get(key)
	if err != nil {
		return err
	}
	val := value(op)
	switch {
	case cur == nil && (val == nil || val.raw == nil):
		return nil // null (or missing) tested against null (or nothing)
	case cur == nil || val == nil || !equal(cur, val):
		return failed
	}
	return nil
}

func (p *patcher) copy(op Operation) error {
	from, err := member(op, "from")
	if err != nil {
		return err
	}
	con, key := p.find(from)
	if con == nil {
		return fmt.Errorf("copy: missing from path %q: %w", from, errMissing)
	}
	val, err := con.get(key)
	if err != nil {
		return err
	}
	path, err := member(op, "path")
	if err != nil {
		return err
	}
	if con, key = p.find(path); con == nil {
		return fmt.Errorf("copy: missing path %q: %w", path, errMissing)
	}
	var dup *node
	if val != nil {
		text := appendJSON(nil, val)
		p.copied += int64(len(text))
		dup = &node{raw: text}
	}
	if p.copyLimit > 0 && p.copied > p.copyLimit {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrCopyLimit, p.copied, p.copyLimit)
	}
	return con.add(key, dup)
}

// find returns the container that path (a JSON pointer) names a member of,
// parsed, and that member's key; nil if there is none. As v4: a path
// without a leading slash is read from its first slash on, and no
// container is found for "" or a path without a slash.
func (p *patcher) find(path string) (*node, string) {
	parts := strings.Split(path, "/")
	if len(parts) < 2 {
		return nil, ""
	}
	doc := p.root
	for _, part := range parts[1 : len(parts)-1] {
		next, err := doc.get(unescape(part))
		if next == nil || err != nil || next.raw == nil {
			return nil, ""
		}
		if next.raw[0] == '[' {
			if !next.toAry() {
				return nil, ""
			}
		} else if !next.toObj() {
			return nil, ""
		}
		doc = next
	}
	return doc, unescape(parts[len(parts)-1])
}

// unescape decodes a JSON pointer's reference token: ~1 is /, ~0 is ~.
func unescape(s string) string {
	if !strings.Contains(s, "~") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '~' && i+1 < len(s) && (s[i+1] == '0' || s[i+1] == '1') {
			b.WriteByte("~/"[s[i+1]-'0'])
			i++
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// index parses an array index as v4 does: negative ones count from the
// end of an array of length n.
func arrayIndex(key string, n int) (int, error) {
	i, err := strconv.Atoi(key)
	if err != nil {
		return 0, err
	}
	if i < 0 {
		if i < -n {
			return 0, fmt.Errorf("invalid index %d", i)
		}
		i += n
	}
	if i >= n {
		return 0, fmt.Errorf("invalid index %d", i)
	}
	return i, nil
}

// get returns the member key of c (a parsed container); nil for a null or
// a missing key of an object.
func (c *node) get(key string) (*node, error) {
	if c.kind == objKind {
		return c.obj[key], nil
	}
	i, err := arrayIndex(key, len(c.ary))
	if err != nil {
		return nil, err
	}
	return c.ary[i], nil
}

// set replaces the member key of c, which exists.
func (c *node) set(key string, val *node) error {
	if c.kind == objKind {
		return c.put(key, val)
	}
	i, err := arrayIndex(key, len(c.ary))
	if err != nil {
		return err
	}
	c.ary[i] = val
	return nil
}

// add adds val as the member key of c: in an array, at that index ("-":
// at the end), moving the elements from there on.
func (c *node) add(key string, val *node) error {
	if c.kind == objKind {
		return c.put(key, val)
	}
	if key == "-" {
		c.ary = append(c.ary, val)
		return nil
	}
	i, err := arrayIndex(key, len(c.ary)+1)
	if err != nil {
		return err
	}
	c.ary = slices.Insert(c.ary, i, val)
	return nil
}

// put sets the member key of the object c.
func (c *node) put(key string, val *node) error {
	if c.obj == nil {
		return errors.New("cannot add to null") // v4 panics
	}
	c.obj[key] = val
	return nil
}

// remove removes the member key of c.
func (c *node) remove(key string) error {
	if c.kind == objKind {
		if _, ok := c.obj[key]; !ok {
			return fmt.Errorf("unable to remove nonexistent key %q: %w", key, errMissing)
		}
		delete(c.obj, key)
		return nil
	}
	i, err := arrayIndex(key, len(c.ary))
	if err != nil {
		return err
	}
	c.ary = slices.Delete(c.ary, i, i+1)
	return nil
}

// equal is v4's equality of a document's value n with an operation's
// value o, parsing both as it does. (v4 panics on a null element of an
// array; equal compares nulls as equal.)
func equal(n, o *node) bool {
	if n == nil || o == nil {
		return n == nil && o == nil
	}
	if n.kind == rawKind && !n.toObj() && !n.toAry() {
		// A string, a number, true, false, or a value's null.
		return o.kind == rawKind && bytes.Equal(compact(n.raw), compact(o.raw))
	}
	if n.kind == objKind {
		if o.kind == rawKind && !o.toObj() || o.kind != objKind || len(n.obj) != len(o.obj) {
			return false
		}
		for k, v := range n.obj {
			ov, ok := o.obj[k]
			if !ok || (v == nil) != (ov == nil) {
				return false
			}
			if v != nil && !equal(v, ov) {
				return false
			}
		}
		return true
	}
	if o.kind != aryKind && !o.toAry() || len(n.ary) != len(o.ary) {
		return false
	}
	for i, v := range n.ary {
		if !equal(v, o.ary[i]) {
			return false
		}
	}
	return true
}

// compact is json.Compact of a text (nil stays nil).
func compact(raw []byte) []byte {
	if raw == nil {
		return nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw
	}
	return b.Bytes()
}
