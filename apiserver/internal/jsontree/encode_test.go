package jsontree

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

// TestAppend checks that Append writes what json.Marshal writes.
func TestAppend(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
	}{
		{"nil", nil},
		{"string", "plain"},
		{"escapes", "q\"b\\s/ \b\f\n\r\t \x00\x01\x1f <a&b> \u2028\u2029 é 日本"},
		{"invalid utf-8", "a\xffb\xc3"},
		{"bool", true},
		{"int64", int64(-9223372036854775808)},
		{"float", 1.5},
		{"float integral", float64(3)},
		{"float tiny", 1e-7},
		{"float small", 1.25e-6},
		{"float large", 1e21},
		{"float huge", -1.7976931348623157e308},
		{"negative zero", math.Copysign(0, -1)},
		{"nil map", map[string]any(nil)},
		{"nil list", []any(nil)},
		{"empty", map[string]any{}},
		{"nested", map[string]any{"b": []any{int64(1), "x", nil, map[string]any{"z": false, "a": 2.5}}, "a": map[string]any{}, "<k>": "v", "": []any{}}},
		{"many keys", map[string]any{"q": 1.0, "w": 2.0, "e": 3.0, "r": 4.0, "t": 5.0, "y": 6.0, "u": 7.0, "i": 8.0, "o": 9.0, "p": 10.0, "a": 11.0, "s": 12.0, "d": 13.0, "f": 14.0, "g": 15.0, "h": 16.0, "j": 17.0, "k": 18.0}},
		{"other type", map[string]any{"n": json.Number("12"), "s": []string{"a"}, "i": 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, wantErr := json.Marshal(tc.v)
			got, err := Append([]byte("prefix"), tc.v)
			if (err != nil) != (wantErr != nil) {
				t.Fatalf("error %v, json.Marshal's %v", err, wantErr)
			}
			if err == nil && !bytes.Equal(got, append([]byte("prefix"), want...)) {
				t.Errorf("got %s, json.Marshal gives %s", got[len("prefix"):], want)
			}
		})
	}
	for _, f := range []float64{math.NaN(), math.Inf(1)} {
		if _, err := Append(nil, map[string]any{"f": f}); err == nil {
			t.Errorf("%v encoded without error", f)
		}
	}
}

// FuzzAppend checks Append against json.Marshal on decoded JSON
// documents.
func FuzzAppend(f *testing.F) {
	for _, s := range []string{
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"x":"<y>"}},"data":{"k":"v\u2028"}}`,
		`{"a":[1,2.5,-0,1e300,1e-7,"\u0000\ud800",true,null,{}]}`,
		`{"n":12345678901234567890,"f":0.000001,"g":123456789012345678901234}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := fullDecode(data)
		if err != nil {
			return
		}
		want, wantErr := json.Marshal(m)
		got, err := Append(nil, m)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("error %v, json.Marshal's %v", err, wantErr)
		}
		if err == nil && !bytes.Equal(got, want) {
			t.Fatalf("got %s, json.Marshal gives %s", got, want)
		}
	})
}
