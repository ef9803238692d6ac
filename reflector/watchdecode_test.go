package reflector

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	kjson "sigs.k8s.io/json"
)

// chunkReader hands out its bytes n at a time, as a network stream does.
type chunkReader struct {
	b []byte
	n int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	k := min(len(p), r.n, len(r.b))
	copy(p, r.b[:k])
	r.b = r.b[k:]
	return k, nil
}

// stdEventDecoder is newEventDecoder with the fast path off.
func stdEventDecoder[T Object](r io.Reader, newObj func() T) *eventDecoder[T] {
	d := newEventDecoder(r, newObj, false)
	if d.fast != nil {
		d.dec, d.fast = newDecoder(d.fast.r, false), nil
	}
	return d
}

type decoded[T Object] struct {
	events []Event[T]
	err    error
}

func decodeAll[T Object](d *eventDecoder[T]) decoded[T] {
	var out decoded[T]
	for range 1000 {
		ev, err := d.next()
		if err != nil {
			out.err = err
			return out
		}
		out.events = append(out.events, ev)
	}
	return out
}

func sameDecoding[T Object](t *testing.T, data []byte, fast, std decoded[T]) {
	t.Helper()
	if len(fast.events) != len(std.events) {
		t.Fatalf("%q: fast path decoded %d events, standard %d (errors %v / %v)", data, len(fast.events), len(std.events), fast.err, std.err)
	}
	for i := range fast.events {
		if !reflect.DeepEqual(fast.events[i], std.events[i]) {
			t.Fatalf("%q: event %d differs:\nfast %+v\n std %+v", data, i, fast.events[i], std.events[i])
		}
	}
	if fmt.Sprint(fast.err) != fmt.Sprint(std.err) || errors.Is(fast.err, io.EOF) != errors.Is(std.err, io.EOF) ||
		errors.Is(fast.err, io.ErrUnexpectedEOF) != errors.Is(std.err, io.ErrUnexpectedEOF) {
		t.Fatalf("%q: errors differ:\nfast %v\n std %v", data, fast.err, std.err)
	}
}

var watchFastSeeds = []string{
	strings.Join(watchStream, "\n"),
	strings.Join(watchStream, ""),
	`{"type":"ADDED","object":null}`,
	`{"type":"ADDED","object":{"metadata":{"name":"a"}},"object":{}}`,
	`{"type":"ADDED","type":"MODIFIED","object":{"metadata":{"name":"a"}}}`,
	`{"type":"BOOKMARK"}`,
	`{"type":"MODIFIED","object":{"metadata":{"name":"a","creationTimestamp":"2026-01-02T03:04:05Z"}},"extra":[1,{"x":"}"}]}` + "\n",
	`{"type":"MODIFIED","object":{"metadata":{"name":"a\"b\\"}}} {"type":"DELETED","object":{"metadata":{"name":"c"}}}`,
	`{"type":"MODIFIED","object":{"metadata":{"name":"a"}}}x`,
	`{"type":"MODIFIED","object":{"metadata":{"name":"a"}}`,
	`{"type":"MODIFIED","object":{"metadata":{"name":"a"}}}}`,
	`{"type":"MODIFIED","object":{"metadata":{"name":"a"},}}`,
	`{"type":"MODIFIED","object":{"metadata":{"name":"\u0041"}}}`,
	`{"type":"MOD\u0049FIED","object":{"metadata":{"name":"a"}}}`,
	`{"t\u0079pe":"MODIFIED","object":{"metadata":{"name":"a"}}}`,
	`{"type":"MODIFIED","object":{"spec":{"containers":[{"resources":{"limits":{"cpu":" 100m ","memory":1e3}}}]}}}`,
	`{"type":"MODIFIED","object":{"spec":{"containers":[{"resources":{"limits":{"cpu":"\t1"}}}]}}}`,
	`{"type":"MODIFIED","object":{"status":{"startTime":"2026-01-02T03:04:05.5+02:00"}}}`,
	`{"type":"MODIFIED","object":{"status":{"startTime":"2026-01-02T03:04:05Z\\"}}}`,
	`{"type":"MODIFIED","object":{"status":{"startTime":12}}}`,
	`{"type":"MODIFIED","object":{"metadata":{"creationTimestamp":null,"deletionTimestamp":null}}}`,
	`{"type":"MODIFIED","object":{"metadata":{"name":"a"}}} ` + "\n\t" + `{"type":"ERROR","object":{"kind":"Status","code":410}}`,
	`[1,2]`,
	`{}`,
	`{"type":"MODIFIED","object":{"metadata":{"name":"a"}}` + strings.Repeat(" ", 100) + `}`,
}

// FuzzTypedWatchMatchesStd: the fast path of a typed watch stream decodes
// exactly what the standard streaming decoder does — the same events, then
// the same error — however the stream is cut into reads.
func FuzzTypedWatchMatchesStd(f *testing.F) {
	for _, s := range watchFastSeeds {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		n := int(chunk)%64 + 1
		if chunk == 0 {
			n = len(data) + 1
		}
		fast := decodeAll(newEventDecoder(&chunkReader{b: data, n: n}, newPod, false))
		std := decodeAll(stdEventDecoder(bytes.NewReader(data), newPod))
		sameDecoding(t, data, fast, std)
	})
}

func TestTypedWatchFastPath(t *testing.T) {
	for _, s := range watchFastSeeds {
		for _, n := range []int{1, 7, 4096} {
			data := []byte(s)
			fast := decodeAll(newEventDecoder(&chunkReader{b: data, n: n}, newPod, false))
			std := decodeAll(stdEventDecoder(bytes.NewReader(data), newPod))
			sameDecoding(t, data, fast, std)
		}
	}
}

// TestTypedWatchFastPathTakesPlainEvents checks that plain events stay on
// the fast path (a regression to the standard decoder would only show as
// lost speed), that the buffer grows for a large event and shrinks after
// it, and that objects do not share the reused read buffer.
func TestTypedWatchFastPathTakesPlainEvents(t *testing.T) {
	big := strings.Repeat("x", 3*watchBufKeep)
	// A large event, and one with a \u escape (kube-apiserver writes <, >
	// and & so): decoded by apimachinery's decoder, without leaving the
	// fast path.
	stream := string(watchEvents(50)) + `{"type":"ADDED","object":{"metadata":{"name":"big","annotations":{"a":"` + big + `"}}}}` + "\n" +
		`{"type":"MODIFIED","object":{"metadata":{"name":"amp","annotations":{"url":"https://x/?a=1\u0026b=\u003c2\u003e"}}}}` + "\n" + string(watchEvents(50))
	d := newEventDecoder(&chunkReader{b: []byte(stream), n: 1000}, newPod, false)
	var got []*corev1.Pod
	for {
		ev, err := d.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if d.fast == nil {
			t.Fatalf("event %d (%s) left the fast path", len(got), ev.Object.Name)
		}
		if len(got) == 50 && len(d.fast.buf) > watchBufKeep {
			t.Fatalf("buffer of %d bytes kept after the large event", len(d.fast.buf))
		}
		got = append(got, ev.Object)
	}
	want := decodeAll(stdEventDecoder(strings.NewReader(stream), newPod))
	if len(got) != 102 || len(want.events) != 102 {
		t.Fatalf("decoded %d events, standard %d, want 102", len(got), len(want.events))
	}
	if got[51].Annotations["url"] != "https://x/?a=1&b=<2>" {
		t.Fatalf("escaped annotation decoded as %q", got[51].Annotations["url"])
	}
	for i := range got {
		if !reflect.DeepEqual(got[i], want.events[i].Object) {
			t.Fatalf("event %d differs from the standard decoding", i)
		}
	}
}

// FuzzDropManagedFields: an object decoded with its managedFields skipped
// equals the object decoded whole with its managedFields then cleared.
func FuzzDropManagedFields(f *testing.F) {
	f.Add(`{"metadata":{"name":"a","managedFields":[{"manager":"m","operation":"Update","time":"2026-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{}}}],"labels":{"a":"b"}},"spec":{"nodeName":"n"}}`)
	f.Add(`{"metadata":{"managedFields":[{"manager":"m"}]},"metadata":{"name":"b"}}`)
	f.Add(`{"metadata":{"managedFields":"not a list"}}`)
	f.Add(realisticPod(1))
	f.Fuzz(func(t *testing.T, data string) {
		if i := skipSpace([]byte(data), 0); i >= len(data) || skipJSON([]byte(data), i) != len(data) {
			return // decodeItem's callers pass one whole value, brackets matched
		}
		want := &corev1.Pod{}
		if err := kjson.UnmarshalCaseSensitivePreserveInts([]byte(data), want); err != nil {
			if _, ok := decodeItem([]byte(data), newPod, true); ok && !json.Valid([]byte(data)) {
				t.Fatalf("%s: not JSON (%v), decoded with managedFields dropped", data, err)
			}
			return
		}
		want.ManagedFields = nil
		got, ok := decodeItem([]byte(data), newPod, true)
		if !ok {
			t.Fatalf("%s: apimachinery decodes it, decodeItem with managedFields dropped does not", data)
		}
		got.ManagedFields = nil
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s:\n got %+v\nwant %+v", data, got, want)
		}
	})
}
