package rest

import (
	"errors"
	"fmt"
	"mime"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ContentTypeProtobuf is the media type of Kubernetes' protobuf encoding,
// which the API server answers built-in kinds in when asked.
const ContentTypeProtobuf = "application/vnd.kubernetes.protobuf"

// IsProtobuf reports whether a Content-Type is Kubernetes' protobuf
// encoding (its stream form, stream=watch, included).
func IsProtobuf(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == ContentTypeProtobuf
}

// protobufMagic starts every Kubernetes protobuf envelope.
const protobufMagic = "k8s\x00"

// Unenvelope reads a Kubernetes protobuf envelope — the magic "k8s\x00",
// then a runtime.Unknown — and returns the apiVersion and kind it names
// and the message it holds (a sub-slice of b). An envelope whose content
// is encoded (contentEncoding) or is not protobuf (contentType) is an
// error, as apimachinery's serializer refuses them.
func Unenvelope(b []byte) (apiVersion, kind string, msg []byte, err error) {
	if len(b) < len(protobufMagic) || string(b[:len(protobufMagic)]) != protobufMagic {
		return "", "", nil, errors.New("not a Kubernetes protobuf envelope (no magic prefix)")
	}
	err = ForEachField(b[len(protobufMagic):], func(num protowire.Number, v []byte) error {
		switch num {
		case 1: // typeMeta
			return ForEachField(v, func(num protowire.Number, v []byte) error {
				switch num {
				case 1:
					apiVersion = string(v)
				case 2:
					kind = string(v)
				}
				return nil
			})
		case 2: // raw
			msg = v
		case 3, 4: // contentEncoding, contentType
			if len(v) > 0 {
				return fmt.Errorf("an envelope of content %q, encoded %q", v, v)
			}
		}
		return nil
	})
	if err != nil {
		return "", "", nil, fmt.Errorf("reading a protobuf envelope: %w", err)
	}
	return apiVersion, kind, msg, nil
}

// ForEachField calls fn with the number and the value of each
// length-delimited field of a protobuf message, in order (fields of other
// wire types are skipped); fn's error stops the walk and is returned, as
// is a malformed message's.
func ForEachField(msg []byte, fn func(num protowire.Number, v []byte) error) error {
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return protowire.ParseError(n)
		}
		msg = msg[n:]
		if typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, msg); n < 0 {
				return protowire.ParseError(n)
			}
			msg = msg[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(msg)
		if n < 0 {
			return protowire.ParseError(n)
		}
		msg = msg[n:]
		if err := fn(num, v); err != nil {
			return err
		}
	}
	return nil
}

// DecodeProtobufStatus decodes a Status in its protobuf envelope.
func DecodeProtobufStatus(b []byte) (*metav1.Status, error) {
	apiVersion, kind, msg, err := Unenvelope(b)
	if err != nil {
		return nil, err
	}
	if kind != "Status" {
		return nil, fmt.Errorf("a %s %s, not a Status", apiVersion, kind)
	}
	st := &metav1.Status{}
	if err := st.Unmarshal(msg); err != nil {
		return nil, fmt.Errorf("decoding a Status: %w", err)
	}
	st.APIVersion, st.Kind = apiVersion, kind
	return st, nil
}
