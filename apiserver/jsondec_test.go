package apiserver

import (
	"reflect"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// checkFastDecode checks fastDecode against the full decoder: when it
// decodes, the result is the full decoder's.
func checkFastDecode(t *testing.T, data []byte) (decoded bool) {
	t.Helper()
	var want map[string]any
	wantErr := utiljson.Unmarshal(data, &want)
	got, ok := fastDecode(data)
	if !ok {
		return false
	}
	if wantErr != nil {
		t.Fatalf("fastDecode(%q) = %v, the full decoder fails: %v", data, got, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("fastDecode(%q) = %#v, the full decoder gives %#v", data, got, want)
	}
	return true
}

func TestFastDecode(t *testing.T) {
	for _, tc := range []struct {
		doc     string
		decoded bool // fastDecode decodes it itself
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
		if got := checkFastDecode(t, []byte(tc.doc)); got != tc.decoded {
			t.Errorf("fastDecode(%s) decoded: %v, want %v", tc.doc, got, tc.decoded)
		}
	}
	deep := []byte{}
	for range fastDecodeMaxDepth + 5 {
		deep = append(deep, `{"a":`...)
	}
	deep = append(deep, '1')
	for range fastDecodeMaxDepth + 5 {
		deep = append(deep, '}')
	}
	if checkFastDecode(t, deep) {
		t.Error("fastDecode decoded a document deeper than its limit")
	}
}

func FuzzFastDecode(f *testing.F) {
	for _, s := range []string{
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"x":"<y>"}},"data":{"k":"v\u2028"}}`,
		`{"a":[1,2.5,-0,1e300,1e-7,"\u0000",true,null,{}],"b":"\"\\"}`,
		`{"n":12345678901234567890,"f":0.000001,"g":123456789012345678901234}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFastDecode(t, data)
	})
}
