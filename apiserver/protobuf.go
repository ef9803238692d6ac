package apiserver

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"kloop.dev/kloop/apiserver/internal/pbenc"
)

const protobufContentType = "application/vnd.kubernetes.protobuf"

// protobufDecoder decodes the Kubernetes protobuf envelope of built-in
// kinds, and encodes answers in it (protobuf_encode.go). client-go's
// generated clients send built-in objects (and DeleteOptions) as protobuf
// unless told otherwise, and kube-controller-manager asks for protobuf
// answers. Its scheme holds every kind of client-go's scheme (all built-in
// groups), the CRD kinds and meta.k8s.io's; it is built on first use.
type protobufDecoder struct {
	once sync.Once
	sc   *runtime.Scheme
	ser  *protobuf.Serializer
	err  error
	// kinds caches serves (schema.GroupVersionKind -> bool), lists
	// listShape (the list's reflect.Type -> bool), messages pbenc
	// (schema.GroupVersionKind -> *pbenc.Message, nil for none).
	kinds, lists, messages sync.Map
	// meta describes metav1.ObjectMeta for pbenc (objectMeta), made once.
	metaOnce sync.Once
	meta     *pbenc.Message
}

func (p *protobufDecoder) decoder() (*protobuf.Serializer, error) {
	p.once.Do(func() {
		// Every built-in group of client-go's scheme, so that the body of
		// any built-in kind decodes.
		sc := runtime.NewScheme()
		for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, metav1.AddMetaToScheme, metav1beta1.AddMetaToScheme} {
			if err := add(sc); err != nil {
				p.err = err
				return
			}
		}
		metav1.AddToGroupVersion(sc, schema.GroupVersion{Group: "meta.k8s.io", Version: "v1"})
		p.sc, p.ser = sc, protobuf.NewSerializer(sc, sc)
	})
	return p.ser, p.err
}

// readObjectBody reads a request body and returns it as JSON, by its
// Content-Type as kube-apiserver reads it: JSON (or no Content-Type) as it
// is, YAML converted to JSON, the protobuf envelope (built-in kinds)
// decoded; any other type is a 415. into names the type the body must be
// (the kind, or DeleteOptions), for the errors. original is the body as
// sent when it was converted from YAML (nil otherwise): kube-apiserver's
// decoding errors summarize that.
func (s *Server) readObjectBody(r *http.Request, into string) (body, original []byte, err error) {
	body, err = readBody(r)
	if err != nil {
		return nil, nil, err
	}
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return body, nil, nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	switch {
	case err != nil:
		return nil, nil, unknownBodyFormat()
	case mt == "application/json":
		return body, nil, nil
	case mt == "application/yaml":
		if len(body) == 0 {
			return body, nil, nil
		}
		j, err := yaml.YAMLToJSON(body)
		if err != nil {
			return nil, nil, badRequest("the object provided is unrecognized (must be of type %s): %v (%s)", into, err, summarizeData(body, 30))
		}
		return j, body, nil
	case mt != protobufContentType:
		return nil, nil, unknownBodyFormat()
	}
	if len(body) == 0 {
		return body, nil, nil
	}
	ser, err := s.protobuf.decoder()
	if err != nil {
		return nil, nil, fmt.Errorf("protobuf scheme: %w", err)
	}
	obj, gvk, err := ser.Decode(body, nil, nil)
	if err != nil {
		return nil, nil, unsupportedMediaType(fmt.Sprintf("the body of the request could not be decoded as %s: %v (custom resources and CRDs take JSON)", protobufContentType, err))
	}
	m, err := toMap(obj)
	if err != nil {
		return nil, nil, err
	}
	if gvk != nil {
		m["apiVersion"], m["kind"] = gvk.GroupVersion().String(), gvk.Kind
	}
	body, err = json.Marshal(m)
	return body, nil, err
}

// unknownBodyFormat is kube-apiserver's 415 for a request body of a type it
// does not decode (custom resources included: it lists protobuf for them
// too).
func unknownBodyFormat() error {
	return unsupportedMediaType("the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, " + protobufContentType)
}
