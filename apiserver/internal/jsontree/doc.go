// Package jsontree reads, writes, compares, decodes and encodes JSON trees:
// the map[string]any, []any, string, int64, float64, bool and nil values
// that apimachinery's unstructured objects are made of, numbers decoded as
// int64 when they are integers that fit and float64 otherwise. The embedded
// API server keeps its objects in this form.
//
// Everything here does what the standard packages (and sigs.k8s.io/json,
// which apimachinery decodes with) do, faster, and says so precisely:
//
//   - [Decode] decodes the common JSON documents exactly as the full
//     decoder does and answers not ok, deciding nothing, for the rest
//     (invalid JSON, invalid UTF-8, surrogate escapes, deep nesting);
//     [DecodeStrict] also refuses an object that repeats a key.
//   - [Append] is json.Marshal of a tree, byte for byte; [EncodeRVHole]
//     encodes an object with a hole where its metadata.resourceVersion
//     goes, for [FillRVHole] to fill in later; [StripTypeMeta] drops the
//     top-level apiVersion and kind of an encoded object.
//   - [Get], [Str], [Int], [Len] read a value at a path without panicking
//     on unexpected shapes; [Set] writes one.
//   - [Equal] is reflect.DeepEqual for trees, [Canonical] tells whether a
//     tree decodes back from its encoding as it is, and [MergePatch]
//     applies a JSON merge patch (RFC 7386) to a tree.
//
// The package depends on the standard library only.
package jsontree
