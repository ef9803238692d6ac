package apiserver

import (
	"reflect"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"

	"kloop.dev/kloop/apiserver/internal/jsontree"
)

// FuzzDecodeMap checks decodeMap, and the fast decoder it tries first
// (jsontree.Decode), against apimachinery's util/json, which decodes
// unstructured objects: when jsontree.Decode decodes a document, it gives
// util/json's tree, and decodeMap decodes every object util/json does, to
// the same tree.
func FuzzDecodeMap(f *testing.F) {
	for _, s := range []string{
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"x":"<y>"}},"data":{"k":"v\u2028"}}`,
		`{"a":[1,2.5,-0,1e300,1e-7,"\u0000",true,null,{}],"b":"\"\\"}`,
		`{"n":12345678901234567890,"f":0.000001,"g":123456789012345678901234}`,
		`{"a":"\ud83d\ude00","b":"\xff","a":1}`,
		` {"a" : 1 , "b":[ ] ,"c":{ } } `,
		`{"a":1e400}`, `null`, `[1]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var want map[string]any
		wantErr := utiljson.Unmarshal(data, &want)
		if got, ok := jsontree.Decode(data); ok {
			if wantErr != nil {
				t.Fatalf("jsontree.Decode(%q) = %v, util/json fails: %v", data, got, wantErr)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("jsontree.Decode(%q) = %#v, util/json gives %#v", data, got, want)
			}
		}
		if wantErr != nil || want == nil {
			return
		}
		got, err := decodeMap(data)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("decodeMap(%q) = %#v, %v; util/json gives %#v", data, got, err, want)
		}
	})
}
