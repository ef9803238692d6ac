package apiserver

import (
	"encoding/json"
	"testing"
)

func TestStripTypeMeta(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"apiVersion":"v1","data":{"kind":"x"},"kind":"ConfigMap","metadata":{"name":"a"}}`, `{"data":{"kind":"x"},"metadata":{"name":"a"}}`},
		{`{"apiVersion":"v1","kind":"ConfigMap"}`, `{}`},
		{`{"a":"\"kind\":","kind":"K"}`, `{"a":"\"kind\":"}`},
		{`{"a":["apiVersion",{"kind":1}],"apiVersion":"apps/v1","z":1}`, `{"a":["apiVersion",{"kind":1}],"z":1}`},
		{`{"a\\":1,"kind":"K","b":"\\"}`, `{"a\\":1,"b":"\\"}`},
		{`{}`, `{}`},
	} {
		got := string(stripTypeMeta([]byte(tc.in)))
		if got != tc.want || !json.Valid([]byte(got)) {
			t.Errorf("stripTypeMeta(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
