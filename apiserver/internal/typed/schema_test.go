package typed

import (
	"encoding/json"
	"reflect"
	"testing"

	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	sigsjson "sigs.k8s.io/json"

	"kloop.dev/kloop/apiserver/internal/jsontree"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// sample has a field of every shape a Schema knows, and some it does not.
type sample struct {
	S      string                      `json:"s"`
	SO     string                      `json:"so,omitempty"`
	B      bool                        `json:"b,omitempty"`
	I8     int8                        `json:"i8,omitempty"`
	I      int64                       `json:"i"`
	U16    uint16                      `json:"u16,omitempty"`
	Data   []byte                      `json:"data,omitempty"`
	T      metav1.Time                 `json:"t,omitempty"`
	MT     *metav1.MicroTime           `json:"mt,omitempty"`
	P      *int32                      `json:"p,omitempty"`
	M      map[string]string           `json:"m,omitempty"`
	L      []inner                     `json:"l,omitempty"`
	In     inner                       `json:"in"`
	Z      inner                       `json:"z,omitzero"`
	Q      resource.Quantity           `json:"q,omitempty"` // encodes itself: not known
	F      float64                     `json:"f,omitempty"` // not known
	FV     *metav1.FieldsV1            `json:"fv,omitempty"`
	MF     []metav1.ManagedFieldsEntry `json:"mf,omitempty"`
	Skip   string                      `json:"-"`
	hidden string
	embedded
}

type inner struct {
	Name string `json:"name,omitempty"`
	Next *inner `json:"next,omitempty"`
}

type embedded struct {
	E string `json:"e,omitempty"`
}

// roundTrip is what Check stands for: body strictly decoded into a new
// value of t's type, encoded and decoded into a JSON tree again; ok is
// false when the strict decoding fails or finds unknown or repeated
// fields.
func roundTrip(t *testing.T, typ reflect.Type, body []byte) (map[string]any, bool) {
	t.Helper()
	v := reflect.New(typ).Interface()
	strict, err := sigsjson.UnmarshalStrict(body, v, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil || len(strict) > 0 {
		return nil, false
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := utiljson.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out, true
}

// checkSchema checks s.Check on body (as jsontree.DecodeStrict decodes it)
// against the round trip through typ: when Check takes it, the round trip
// gives the tree Check completed.
func checkSchema(t *testing.T, s *Schema, typ reflect.Type, body []byte) bool {
	t.Helper()
	obj, ok := jsontree.DecodeStrict(body)
	if !ok || !s.Check(obj) {
		return false
	}
	want, ok := roundTrip(t, typ, body)
	if !ok {
		t.Fatalf("Check took %s, the strict decoding refuses it", body)
	}
	if !reflect.DeepEqual(obj, want) {
		t.Fatalf("Check took %s as\n%#v\nthe round trip gives\n%#v", body, obj, want)
	}
	return true
}

var sampleCases = []struct {
	body string
	ok   bool // Check takes it
}{
	{`{}`, true},
	{`{"s":"a","i":1,"in":{}}`, true},
	{`{"s":"","i":0}`, true},
	{`{"so":"x","b":true,"i8":-128,"u16":65535}`, true},
	{`{"so":""}`, false},
	{`{"b":false}`, false},
	{`{"i8":128}`, false},
	{`{"i8":0}`, false},
	{`{"i":1.0}`, false},
	{`{"i":"1"}`, false},
	{`{"u16":65536}`, false},
	{`{"u16":-1}`, false},
	{`{"data":"aGVsbG8="}`, true},
	{`{"data":"aGVsbG8"}`, false},
	{`{"data":""}`, false},
	{`{"t":"2026-01-02T03:04:05Z"}`, true},
	{`{"t":"2026-01-02T04:04:05+01:00"}`, false},
	{`{"t":"0001-01-01T00:00:00Z"}`, false},
	{`{"t":null}`, false},
	{`{"mt":"2026-01-02T03:04:05.000000Z"}`, true},
	{`{"mt":"2026-01-02T03:04:05Z"}`, false},
	{`{"p":5}`, true},
	{`{"p":0}`, true},
	{`{"p":null}`, false},
	{`{"m":{"a":"b"}}`, true},
	{`{"m":{}}`, false},
	{`{"m":{"a":1}}`, false},
	{`{"l":[{"name":"x","next":{"name":"y","next":{}}}]}`, true},
	{`{"l":[]}`, false},
	{`{"l":[null]}`, false},
	{`{"in":{"next":{"name":""}}}`, false},
	{`{"z":{}}`, false},
	{`{"q":"1"}`, false},
	{`{"f":1.5}`, false},
	{`{"Skip":"x"}`, false},
	{`{"-":"x"}`, false},
	{`{"hidden":"x"}`, false},
	{`{"S":"a"}`, false},
	{`{"e":"x"}`, true},
	{`{"embedded":{"e":"x"}}`, false},
	{`{"s":"a","s":"b"}`, false},
	{`{"fv":{"f:a":{".":{},"f:b":{}}}}`, true},
	{`{"fv":"x"}`, true},
	{`{"fv":[1,2.5,{"k":null}]}`, true},
	{`{"fv":null}`, false},
	{`{"mf":[{"manager":"m","operation":"Update","apiVersion":"v1","time":"2026-01-02T03:04:05Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:k":{}}}}]}`, true},
	{`{"mf":[{"manager":"m","subresource":"status","fieldsV1":{}}]}`, true},
	{`{"mf":[{"manager":"m","fieldsV1":null}]}`, false},
}

func TestCheck(t *testing.T) {
	typ := reflect.TypeFor[sample]()
	s, err := New(typ)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range sampleCases {
		if got := checkSchema(t, s, typ, []byte(tc.body)); got != tc.ok {
			t.Errorf("Check(%s) = %v, want %v", tc.body, got, tc.ok)
		}
	}
}

func FuzzCheck(f *testing.F) {
	for _, tc := range sampleCases {
		f.Add([]byte(tc.body))
	}
	typ := reflect.TypeFor[sample]()
	s, err := New(typ)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkSchema(t, s, typ, body)
	})
}

type name string

func TestNewRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		typ  reflect.Type
	}{
		{"a JSON name twice", reflect.TypeFor[struct {
			embedded
			X string `json:"e"`
		}]()},
		{"an embedded non-struct", reflect.TypeFor[struct{ name }]()},
		{"the string option", reflect.TypeFor[struct {
			N int `json:"n,string"`
		}]()},
	} {
		if _, err := New(tc.typ); err == nil {
			t.Errorf("%s: New took %s", tc.name, tc.typ)
		}
	}
}
