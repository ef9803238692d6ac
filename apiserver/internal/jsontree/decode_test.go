package jsontree

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// fullDecode is the full decoder Decode stands for, for tests, in the
// standard library's terms: sigs.k8s.io/json's
// UnmarshalCaseSensitivePreserveInts into a map is encoding/json's
// decoding (the fork changes struct fields only) with integers that fit
// kept as int64, other numbers float64, and numbers out of float64's
// range an error. (The apiserver package checks Decode against
// apimachinery's util/json itself.)
func fullDecode(data []byte) (map[string]any, error) {
	if !json.Valid(data) {
		var v any
		return nil, json.Unmarshal(data, &v) // its syntax error
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if err := convertNumbers(m); err != nil {
		return nil, err
	}
	return m, nil
}

// convertNumbers replaces the json.Numbers in v as util/json does.
func convertNumbers(v any) error {
	var err error
	convert := func(n json.Number) any {
		if i, e := n.Int64(); e == nil {
			return i
		}
		f, e := n.Float64()
		if e != nil {
			err = errors.Join(err, e)
		}
		return f
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if n, ok := e.(json.Number); ok {
				x[k] = convert(n)
			} else if e := convertNumbers(e); e != nil {
				err = errors.Join(err, e)
			}
		}
	case []any:
		for i, e := range x {
			if n, ok := e.(json.Number); ok {
				x[i] = convert(n)
			} else if e := convertNumbers(e); e != nil {
				err = errors.Join(err, e)
			}
		}
	}
	return err
}

// checkDecode checks Decode and DecodeStrict against the full decoder:
// when they decode, the result is the full decoder's, and DecodeStrict
// decodes what Decode does unless a key repeats.
func checkDecode(t *testing.T, data []byte) (decoded bool) {
	t.Helper()
	want, wantErr := fullDecode(data)
	got, ok := Decode(data)
	strict, strictOK := DecodeStrict(data)
	if strictOK && (!ok || !reflect.DeepEqual(strict, got)) {
		t.Fatalf("DecodeStrict(%q) = %#v, Decode: %v %#v", data, strict, ok, got)
	}
	if !ok {
		return false
	}
	if wantErr != nil {
		t.Fatalf("Decode(%q) = %v, the full decoder fails: %v", data, got, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Decode(%q) = %#v, the full decoder gives %#v", data, got, want)
	}
	return true
}

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		doc     string
		decoded bool // Decode decodes it itself
	}{
		{`{}`, true},
		{` {"a" : 1 , "b":[ ] ,"c":{ } } `, true},
		{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"x":"y"}},"data":{"k":"v"}}`, true},
		{`{"i":[0,-0,1,-12,123456789012345678,1234567890123456789,9223372036854775807,-9223372036854775808,9223372036854775808,1e3,1E-3,2.50,-0.0,1.5e+300]}`, true},
		{`{"s":"\"\\\/\b\f\n\r\t\u00e9\u003c\u0000 é 日本","b":[true,false,null]}`, true},
		{`{"a":1,"a":{"b":2},"c":{"d":1},"c":{"e":2}}`, true},
		{`{"a":"\ud83d\ude00"}`, false}, // surrogate pair: the full decoder's
		{`{"a":"\xff"}`, false},         // invalid UTF-8: replaced by the full decoder
		{`{"a":1e400}`, false},          // out of range: the full decoder's error
		{`{"a":01}`, false},
		{`{"a":1.}`, false},
		{`{"a":-}`, false},
		{`{"a":1e}`, false},
		{`{"a":tru}`, false},
		{`{"a":"x\u12"}`, false},
		{`{"a":"x\q"}`, false},
		{"{\"a\":\"x\ny\"}", false},
		{`{"a":1,}`, false},
		{`{"a":[1,]}`, false},
		{`{"a" 1}`, false},
		{`{a:1}`, false},
		{`{"a":1}}`, false},
		{`{"a":1} x`, false},
		{`{"a":[1 2]}`, false},
		{`{"a":"unterminated}`, false},
		{`{"a":`, false},
		{`[1]`, false},
		{`null`, false},
	} {
		if got := checkDecode(t, []byte(tc.doc)); got != tc.decoded {
			t.Errorf("Decode(%s) decoded: %v, want %v", tc.doc, got, tc.decoded)
		}
	}
	deep := []byte{}
	for range maxDepth + 5 {
		deep = append(deep, `{"a":`...)
	}
	deep = append(deep, '1')
	for range maxDepth + 5 {
		deep = append(deep, '}')
	}
	if checkDecode(t, deep) {
		t.Error("Decode decoded a document deeper than its limit")
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"x":"<y>"}},"data":{"k":"v\u2028"}}`,
		`{"a":[1,2.5,-0,1e300,1e-7,"\u0000",true,null,{}],"b":"\"\\"}`,
		`{"n":12345678901234567890,"f":0.000001,"g":123456789012345678901234}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecode(t, data)
	})
}

func TestDecodeStrict(t *testing.T) {
	for _, tc := range []struct {
		doc string
		ok  bool
	}{
		{`{"a":1,"b":{"a":2},"c":[{"a":3},{"a":4}]}`, true},
		{`{"a":1,"a":2}`, false},
		{`{"a":{"b":1,"b":1}}`, false},
		{`{"a":[{"b":1},{"c":1,"c":2}]}`, false},
		{`{"a":"\u0062","\u0061":1}`, false}, // the same key, escaped
		{` {"a":1} `, true},
		{`{"a":1} x`, false},
	} {
		if _, ok := DecodeStrict([]byte(tc.doc)); ok != tc.ok {
			t.Errorf("DecodeStrict(%s) ok %v, want %v", tc.doc, ok, tc.ok)
		}
		checkDecode(t, []byte(tc.doc))
	}
}
