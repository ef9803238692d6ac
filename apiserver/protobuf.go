package apiserver

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
)

const protobufContentType = "application/vnd.kubernetes.protobuf"

// protobufDecoder decodes the Kubernetes protobuf envelope of built-in kinds.
// client-go's generated clients send built-in objects (and DeleteOptions) as
// protobuf unless told otherwise; the server answers in JSON, which they
// accept. It is built on first use.
type protobufDecoder struct {
	once sync.Once
	ser  *protobuf.Serializer
	err  error
}

func (p *protobufDecoder) decoder() (*protobuf.Serializer, error) {
	p.once.Do(func() {
		sc := runtime.NewScheme()
		for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, coordinationv1.AddToScheme, eventsv1.AddToScheme, autoscalingv1.AddToScheme} {
			if err := add(sc); err != nil {
				p.err = err
				return
			}
		}
		metav1.AddToGroupVersion(sc, schema.GroupVersion{Group: "meta.k8s.io", Version: "v1"})
		p.ser = protobuf.NewSerializer(sc, sc)
	})
	return p.ser, p.err
}

// readObjectBody reads a request body and returns it as JSON, decoding the
// protobuf envelope when the Content-Type says so.
func (s *Server) readObjectBody(r *http.Request) ([]byte, error) {
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct != protobufContentType || len(body) == 0 {
		return body, nil
	}
	ser, err := s.protobuf.decoder()
	if err != nil {
		return nil, fmt.Errorf("protobuf scheme: %w", err)
	}
	obj, gvk, err := ser.Decode(body, nil, nil)
	if err != nil {
		return nil, unsupportedMediaType(fmt.Sprintf("the body of the request could not be decoded as %s: %v (custom resources and CRDs take JSON)", protobufContentType, err))
	}
	m, err := toMap(obj)
	if err != nil {
		return nil, err
	}
	if gvk != nil {
		m["apiVersion"], m["kind"] = gvk.GroupVersion().String(), gvk.Kind
	}
	return json.Marshal(m)
}
