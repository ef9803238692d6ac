package conformance

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// Answers in protobuf and YAML (a transcript asks with GetAs, WatchAs or
// Accepting) are recorded as JSON, with their Content-Type: decoded into
// their Go type by apimachinery's protobuf serializer and encoded in JSON,
// or converted from YAML, so that they normalize and compare as JSON
// answers do. A protobuf watch stream is read frame by frame
// (length-prefixed metav1.WatchEvent messages).

const protobufType = "application/vnd.kubernetes.protobuf"

var protobufCodec = sync.OnceValues(func() (*protobuf.Serializer, error) {
	sc := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, metav1.AddMetaToScheme, metav1beta1.AddMetaToScheme} {
		if err := add(sc); err != nil {
			return nil, err
		}
	}
	metav1.AddToGroupVersion(sc, schema.GroupVersion{Group: "meta.k8s.io", Version: "v1"})
	return protobuf.NewSerializer(sc, sc), nil
})

// mediaType is the media type of a Content-Type, without parameters.
func mediaType(contentType string) string {
	mt, _, _ := mime.ParseMediaType(contentType)
	return mt
}

// asJSON returns a body of the given Content-Type as JSON: protobuf and
// YAML converted, anything else as it is.
func asJSON(contentType string, raw []byte) ([]byte, error) {
	switch mediaType(contentType) {
	case protobufType:
		return protobufToJSON(raw)
	case "application/yaml":
		return yaml.YAMLToJSON(raw)
	}
	return raw, nil
}

// protobufToJSON decodes an enveloped protobuf object and encodes it in
// JSON, with its apiVersion and kind.
func protobufToJSON(raw []byte) ([]byte, error) {
	ser, err := protobufCodec()
	if err != nil {
		return nil, err
	}
	obj, gvk, err := ser.Decode(raw, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("decoding protobuf: %w", err)
	}
	obj.GetObjectKind().SetGroupVersionKind(*gvk)
	return json.Marshal(obj)
}

// protobufEvents reads a protobuf watch stream's events as JSON objects
// ({"type": ..., "object": ...}).
type protobufEvents struct {
	r *bufio.Reader
}

// next returns the next event; io.EOF at the end of the stream.
func (p *protobufEvents) next() (map[string]any, error) {
	var n [4]byte
	if _, err := io.ReadFull(p.r, n[:]); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > 16<<20 {
		return nil, fmt.Errorf("a watch frame of %d bytes", size)
	}
	frame := make([]byte, size)
	if _, err := io.ReadFull(p.r, frame); err != nil {
		return nil, err
	}
	var ev metav1.WatchEvent
	if err := ev.Unmarshal(frame); err != nil {
		return nil, fmt.Errorf("decoding a watch event: %w", err)
	}
	obj, err := protobufToJSON(ev.Object.Raw)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(fmt.Appendf(nil, `{"type":%q,"object":%s}`, ev.Type, obj)))
	dec.UseNumber()
	var m map[string]any
	return m, dec.Decode(&m)
}
