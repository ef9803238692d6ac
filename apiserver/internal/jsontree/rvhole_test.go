package jsontree

import (
	"encoding/json"
	"strconv"
	"testing"
)

// FuzzEncodeRVHole: an object encoded with a hole for its resourceVersion,
// the revision filled in (FillRVHole), is byte for byte what json.Marshal makes of it.
func FuzzEncodeRVHole(f *testing.F) {
	for _, s := range []string{
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"n","labels":{"resourceVersion":"x"}},"data":{"<&>":"\u2028"}}`,
		`{"metadata":{}}`,
		`{"metadata":{"uid":"u","selfLink":"s","annotations":{"a":"1"}},"spec":{"metadata":{"resourceVersion":"9"}},"aaa":[1,2.5,null,true]}`,
		`{"metadata":{"resourceVersion":"7","zzz":{"k":1e300}},"Metadata":1}`,
	} {
		f.Add(s, int64(12345))
	}
	f.Fuzz(func(t *testing.T, data string, rev int64) {
		obj, err := fullDecode([]byte(data))
		if err != nil {
			return
		}
		m, ok := obj["metadata"].(map[string]any)
		if !ok {
			return
		}
		rv := strconv.FormatInt(rev, 10)
		m["resourceVersion"] = rv
		want, wantErr := json.Marshal(obj)
		delete(m, "resourceVersion")
		pre, hole, err := EncodeRVHole(obj)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%s: EncodeRVHole error %v, json.Marshal error %v", data, err, wantErr)
		}
		if err != nil {
			return
		}
		got := string(FillRVHole(pre, hole, rv))
		if got != string(want) {
			t.Fatalf("%s:\n got %s\nwant %s", data, got, want)
		}
	})
}
