package apiext

import "testing"

// TestSchemaEqual: numbers compare by value and nil maps and lists equal
// empty ones (as JSON Schema sees instances), unlike reflect.DeepEqual.
func TestSchemaEqual(t *testing.T) {
	for _, tc := range []struct {
		a, b any
		want bool
	}{
		{int64(1), 1.0, true},
		{int64(1), 1.5, false},
		{map[string]any{"a": []any{int64(2)}}, map[string]any{"a": []any{2.0}}, true},
		{map[string]any(nil), map[string]any{}, true},
		{[]any(nil), []any{}, true},
		{"1", int64(1), false},
		{nil, nil, true},
		{nil, map[string]any{}, false},
		{map[string]any{"a": nil}, map[string]any{"b": nil}, false},
	} {
		if got := schemaEqual(tc.a, tc.b); got != tc.want {
			t.Errorf("schemaEqual(%#v, %#v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
