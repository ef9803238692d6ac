package rest

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
)

// protobufStatus encodes st as apimachinery's serializer does.
func protobufStatus(t *testing.T, st *metav1.Status) []byte {
	t.Helper()
	sc := runtime.NewScheme()
	metav1.AddToGroupVersion(sc, schema.GroupVersion{Version: "v1"})
	var buf bytes.Buffer
	st.APIVersion, st.Kind = "v1", "Status"
	if err := protobuf.NewSerializer(sc, sc).Encode(st, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// An error answered in protobuf is the StatusError its Status says.
func TestDecodeErrorProtobuf(t *testing.T) {
	body := protobufStatus(t, &metav1.Status{Status: metav1.StatusFailure, Code: 404, Reason: metav1.StatusReasonNotFound,
		Message: `pods "a" not found`, Details: &metav1.StatusDetails{Name: "a", Kind: "pods"}})
	h := http.Header{"Content-Type": {ContentTypeProtobuf}}
	err := DecodeError(404, h, body, "get", pods, time.Now())
	se, ok := err.(*apierrors.StatusError)
	if !ok || !apierrors.IsNotFound(err) || se.ErrStatus.Details.Name != "a" || se.ErrStatus.Message != `pods "a" not found` {
		t.Fatalf("%T %v", err, err)
	}
	// A protobuf body that is not a Status: a generic error for the code.
	if err := DecodeError(500, h, []byte("k8s\x00junk"), "get", pods, time.Now()); !apierrors.IsInternalError(err) {
		t.Fatalf("junk: %v", err)
	}
}

func TestUnenvelope(t *testing.T) {
	body := protobufStatus(t, &metav1.Status{Status: metav1.StatusSuccess})
	av, kind, msg, err := Unenvelope(body)
	if err != nil || av != "v1" || kind != "Status" {
		t.Fatalf("%q %q %v", av, kind, err)
	}
	var st metav1.Status
	if err := st.Unmarshal(msg); err != nil || st.Status != metav1.StatusSuccess {
		t.Fatalf("%v %+v", err, st)
	}
	for _, bad := range [][]byte{nil, []byte("k8s"), []byte("json"), append([]byte("k8s\x00"), 0x0a, 0x05), append([]byte("k8s\x00"), 0x1a, 0x04, 'g', 'z', 'i', 'p')} {
		if _, _, _, err := Unenvelope(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if !IsProtobuf(ContentTypeProtobuf+";stream=watch") || IsProtobuf("application/json") {
		t.Fatal("IsProtobuf")
	}
}

// FuzzUnenvelope: any bytes are read without panicking, and a message
// found lies inside them.
func FuzzUnenvelope(f *testing.F) {
	f.Add([]byte("k8s\x00\x0a\x0c\x0a\x02v1\x12\x06Status\x12\x00\x1a\x00\x22\x00"))
	f.Add([]byte("k8s\x00\x12\xff\xff\xff\xff\x0f"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _, msg, err := Unenvelope(b)
		if err == nil && len(msg) > len(b) {
			t.Fatalf("message of %d bytes in %d", len(msg), len(b))
		}
		_, _ = DecodeProtobufStatus(b)
	})
}
