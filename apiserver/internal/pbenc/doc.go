// Package pbenc encodes JSON objects of Kubernetes' Go types (k8s.io/api,
// apimachinery's meta types) in their protobuf form straight from the
// JSON, without decoding them into Go values: the embedded API server
// keeps objects as JSON and answers protobuf clients from it. A [Message],
// made by [For] from a Go type's json and protobuf struct tags, reads the
// JSON in one pass and writes the fields the type's generated code would
// marshal, in the order of the JSON's keys, so that the result decodes to
// the value encoding/json decodes from the JSON (FuzzMatchesGoTypes
// checks it on random objects of every kind of client-go's scheme that
// For describes). What it does not read for certain, it refuses: the
// caller decodes the JSON into the Go type and marshals that instead.
// [Message.AppendMember] encodes one member of any JSON object (a custom
// resource's metadata, for its metadata-only form).
//
// It knows the few types whose JSON is their own (metav1.Time, MicroTime
// and Duration, resource.Quantity, intstr.IntOrString, runtime
// RawExtension, metav1.FieldsV1); For refuses a type holding any other
// type with JSON methods of its own.
package pbenc
