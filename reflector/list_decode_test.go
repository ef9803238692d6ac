package reflector

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func newConfigMap() *corev1.ConfigMap { return &corev1.ConfigMap{} }

// sameAsStd decodes doc with the typed list decoder tuned by ld and with
// decodeStdList (apimachinery's decoding) and reports how they differ, or "".
func sameAsStd(doc []byte, ld listDecoding) string {
	got, err := decodeTypedList(bytes.NewReader(doc), newConfigMap, ld)
	want, wantErr := decodeStdList(bytes.NewReader(doc), newConfigMap, false, schema.GroupVersion{})
	switch {
	case (err == nil) != (wantErr == nil):
		return fmt.Sprintf("error %v, apimachinery's %v", err, wantErr)
	case err != nil:
		return ""
	case !reflect.DeepEqual(got, want):
		return fmt.Sprintf("got %+v\nwant %+v", got, want)
	}
	return ""
}

func cmItems(n int, item func(i int) string) string {
	items := make([]string, n)
	for i := range items {
		items[i] = item(i)
	}
	return strings.Join(items, ",")
}

// smallChunks reads the page in chunks of n bytes (doubling up to 4n), so
// that tokens and items are cut by chunk boundaries everywhere, completes the
// carried token from windows of n bytes, and makes every item its own batch,
// so that even short lists are decoded on several goroutines.
func smallChunks(n int) listDecoding {
	return listDecoding{firstChunk: n, maxChunk: 4 * n, carryWindow: n, itemsPerBatch: 1}
}

func TestTypedListMatchesAPIMachinery(t *testing.T) {
	for _, chunk := range []int{1, 2, 3, 7, 100, 32 << 10} {
		t.Run(fmt.Sprintf("chunks=%d", chunk), func(t *testing.T) {
			testTypedListMatchesAPIMachinery(t, smallChunks(chunk))
		})
	}
}

func testTypedListMatchesAPIMachinery(t *testing.T, ld listDecoding) {
	plain := func(i int) string {
		return fmt.Sprintf(`{"metadata":{"name":"cm-%d","namespace":"ns","resourceVersion":"%d"},"data":{"k":"v %d"}}`, i, 100+i, i)
	}
	tricky := func(i int) string {
		// Strings holding brackets, quotes and backslashes, at the ends too.
		return fmt.Sprintf(`{"metadata":{"name":"t-%d","annotations":{"a":"}]\"[{","b":"\\","c":"x\\\\\"}"}},"data":{"k":"]"}}`, i)
	}
	for _, tt := range []struct {
		name, doc string
		wantN     int // items decoded; -1: an error
	}{
		{"plain", `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"7","continue":"c"},"items":[` + cmItems(200, plain) + `]}`, 200},
		{"spaced", " \n{ \"kind\" : \"ConfigMapList\" ,\t\"items\" : [ " + cmItems(9, plain) + " ] , \"metadata\" : { \"resourceVersion\" : \"7\" } }\n", 9},
		{"tricky strings", `{"items":[` + cmItems(50, tricky) + `]}`, 50},
		{"null items", `{"kind":"ConfigMapList","items":null}`, 0},
		{"no items", `{"kind":"ConfigMapList","metadata":{}}`, 0},
		{"empty items", `{"items":[]}`, 0},
		{"empty object", `{}`, 0},
		{"null item", `{"items":[` + plain(0) + `,null,` + plain(2) + `]}`, 3},
		{"unknown fields", `{"x":{"y":[1,2,{"z":"]"}]},"items":[` + plain(0) + `],"n":-1.5e3,"t":true}`, 1},
		{"repeated items", `{"items":[` + plain(0) + `],"items":[` + plain(1) + `,` + plain(2) + `]}`, 2},
		{"escaped key", `{"it\u0065ms":[` + plain(0) + `]}`, 1},
		{"wrong kinds of fields", `{"items":[{"metadata":{"name":5}}]}`, -1},
		{"a wrong field in item 170 of 200", `{"items":[` + cmItems(200, func(i int) string {
			if i == 170 {
				return `{"data":{"k":1}}`
			}
			return plain(i)
		}) + `]}`, -1},
		{"an escape in item 150 of 200", `{"items":[` + cmItems(200, func(i int) string {
			if i == 150 {
				return `{"metadata":{"name":"caf\u00e9"}}`
			}
			return plain(i)
		}) + `]}`, 200},
		{"invalid UTF-8 in one item", `{"items":[` + plain(0) + `,{"metadata":{"name":"` + "\xff" + `"}}]}`, 2},
		// stringMapDecoder: json-iterator reads a key after a comma with
		// ReadString, which takes null for "".
		{"null key in a map", `{"items":[` + plain(0) + `,{"data":{"a":"1",null:"2"}}]}`, -1},
		{"null key in labels", `{"items":[{"metadata":{"labels":{"a":"1",null:"2"}}}]}`, -1},
		{"empty keys in a map", `{"items":[{"data":{"":"0","a":"1","":"2"}},{"metadata":{"labels":{"a":"1","":"2"}}}]}`, 2},
		{"a Status", `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"no"}`, -1},
		{"items not an array", `{"items":5}`, -1},
		{"missing comma", `{"items":[` + plain(0) + plain(1) + `]}`, -1},
		{"trailing bytes", `{"items":[]}x`, 0}, // a stream decoder stops after the value
		{"unterminated", `{"items":[` + plain(0), -1},
		{"bad literal", `{"items":[],"x":tru}`, -1},
		{"not an object", `[1,2]`, -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if diff := sameAsStd([]byte(tt.doc), ld); diff != "" {
				t.Fatal(diff)
			}
			got, err := decodeTypedList(strings.NewReader(tt.doc), newConfigMap, ld)
			if tt.wantN < 0 {
				if err == nil {
					t.Fatalf("no error, want one")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Items) != tt.wantN {
				t.Fatalf("%d items, want %d", len(got.Items), tt.wantN)
			}
		})
	}
}

// TestTypedListKeepsOrder: items decoded on several goroutines come out in
// the server's order, whatever the number of workers.
func TestTypedListKeepsOrder(t *testing.T) {
	doc := `{"items":[` + cmItems(1000, func(i int) string { return fmt.Sprintf(`{"metadata":{"name":"cm-%04d"}}`, i) }) + `]}`
	for _, per := range []int{1, 7, 64, 1000, 5000} {
		got, err := decodeTypedList(strings.NewReader(doc), newConfigMap, listDecoding{itemsPerBatch: per})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Items) != 1000 {
			t.Fatalf("%d items", len(got.Items))
		}
		for i, cm := range got.Items {
			if want := fmt.Sprintf("cm-%04d", i); cm.Name != want {
				t.Fatalf("%d items per batch: item %d is %s", per, i, cm.Name)
			}
		}
	}
}

// FuzzTypedListMatchesAPIMachinery: whole list documents (valid JSON) decode
// to the same list, or fail, as apimachinery's decoding does — with the
// items decoded on several goroutines.
func FuzzTypedListMatchesAPIMachinery(f *testing.F) {
	for _, seed := range []string{
		`{"kind":"ConfigMapList","metadata":{"resourceVersion":"1"},"items":[{"metadata":{"name":"a"},"data":{"k":"v"}},{"metadata":{"name":"b"}}]}`,
		`{"items":[{"metadata":{"name":"}]\"\\"}},null,{}]}`,
		`{"items":null,"items":[{}]}`,
		`{"metadata":{"continue":"x"},"items":[{"binaryData":{"b":"AAE="}}]}`,
		`{"items":[{"data":{"k":1}}]}`,
		`{"kind":"Status"}`,
		`{"items":[{"metadata":{"name":"\u00e9\ud83d\ude00"}}]}`,
		`{ "items" : [ { } , { "immutable" : true } ] , "x" : [ 1 , { } ] }`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if !json.Valid(doc) {
			return // an API server sends JSON
		}
		if diff := sameAsStd(doc, smallChunks(1+len(doc)%13)); diff != "" {
			t.Fatalf("%s: %s", doc, diff)
		}
	})
}

// The splitter, fed a list in chunks of every size, hands out exactly the
// items' bytes (as encoding/json finds them) and the list's other fields,
// and takes the fast path for every well-formed list.
func TestListSplitterChunks(t *testing.T) {
	docs := []string{
		`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[{"metadata":{"name":"a"}},{"data":{"k":"]}\"{["}},null,{}]}`,
		" \n{ \"items\" : [ 1 , -2.5e3 , true , \"s\\\"]\" , [ ] ] , \"metadata\" : { } }\n",
		`{"items":null,"kind":"X"}`,
		`{"metadata":{"continue":"c"}}`,
		`{}`,
		`{"items":[]}`,
	}
	for _, doc := range docs {
		var want struct {
			Kind     json.RawMessage   `json:"kind"`
			Metadata json.RawMessage   `json:"metadata"`
			Items    []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal([]byte(doc), &want); err != nil {
			t.Fatal(err)
		}
		for chunk := 1; chunk <= len(doc); chunk++ {
			var got [][]byte
			s := listSplitter{item: func(b []byte) { got = append(got, b) }, window: 1 + chunk/2}
			for i := 0; i < len(doc); i += chunk {
				s.feed([]byte(doc[i:min(i+chunk, len(doc))]), false)
			}
			s.feed(nil, true)
			if !s.done() {
				t.Fatalf("%s in chunks of %d: not done (state %d)", doc, chunk, s.state)
			}
			if len(got) != len(want.Items) {
				t.Fatalf("%s in chunks of %d: %d items, want %d", doc, chunk, len(got), len(want.Items))
			}
			for i := range got {
				if !bytes.Equal(got[i], want.Items[i]) {
					t.Fatalf("%s in chunks of %d: item %d is %q, want %q", doc, chunk, i, got[i], want.Items[i])
				}
			}
			if !bytes.Equal(s.parts.kind, want.Kind) || !bytes.Equal(s.parts.metadata, want.Metadata) || !json.Valid(s.parts.rest) {
				t.Fatalf("%s in chunks of %d: kind %q metadata %q rest %q", doc, chunk, s.parts.kind, s.parts.metadata, s.parts.rest)
			}
		}
	}
	for _, bad := range []string{``, `[]`, `{"items":[1 2]}`, `{"items":[1]`, `{"a":1}}`, `{"a" 1}`, `{"a":1,}`, `{"items":5}`, `{"items":[1],"items":[]}`, `{"a":1} x`, `{"items":[{]}`} {
		for chunk := 1; chunk <= max(1, len(bad)); chunk++ {
			s := listSplitter{item: func([]byte) {}}
			for i := 0; i < len(bad); i += chunk {
				s.feed([]byte(bad[i:min(i+chunk, len(bad))]), false)
			}
			s.feed(nil, true)
			if s.done() {
				t.Fatalf("%q in chunks of %d: accepted", bad, chunk)
			}
		}
	}
}
