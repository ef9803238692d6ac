// Package typed describes Go API types (a [Schema] per type, made by [New]
// by reflection over their json tags) well enough to tell, from a JSON tree
// alone, that decoding it into the type and encoding it back would give
// the same tree ([Schema.Check]): every field known, every value of its
// field's Go type and in the form that type encodes it (no null, no empty
// value omitempty would drop, canonical timestamps and base64), fields the
// encoding would add filled in. Types and values it does not know (floats,
// interfaces, types that encode themselves but for metav1.Time and
// MicroTime) make it answer no, leaving the decision to the full round
// trip.
//
// The embedded API server uses it to take the usual body of a built-in
// kind as it was decoded, skipping the round trip through the Go type.
package typed
