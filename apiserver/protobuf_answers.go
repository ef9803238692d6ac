package apiserver

import (
	"bytes"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kloop.dev/kloop/apiserver/storage"
)

// The answers in protobuf whose encoding is on a hot path: lists and watch
// events. Everything else is answered in JSON by its handler and
// re-encoded by writeJSON (negotiatedWriter.encode).

// writeProtobufList answers a list in protobuf: objs with list metadata
// lm, as k's list or, md.version set, as a PartialObjectMetadataList. ok
// is false when the list's Go type is not of the shape protobufList
// assembles (meta.k8s.io/v1beta1's PartialObjectMetadataList); nothing is
// written then.
func (s *Server) writeProtobufList(w http.ResponseWriter, k *kind, objs []*storage.Object, lm metav1.ListMeta, md metadataOnly) (ok bool, err error) {
	apiVersion, listKind := k.apiVersion(), k.listKind
	if md.version != "" {
		apiVersion, listKind = md.apiVersion(), "PartialObjectMetadataList"
	}
	hint := 0
	for _, o := range objs {
		hint += len(o.Data)
	}
	b, ok, err := s.protobuf.protobufList(apiVersion, listKind, &lm, len(objs), hint, func(b []byte, i int) ([]byte, error) {
		return s.protobufMessage(b, k, objs[i], md)
	})
	if !ok || err != nil {
		return false, err
	}
	writeBody(w, http.StatusOK, protobufContentType, b)
	return true, nil
}

// protobufFrameKey keys the protobuf frames of a watch event
// (storage.Event.Encoded) by what they encode: the object served as
// apiVersion/kind (kinds that share a storage serve its events each in its
// own version), or its metadata only (metadata, the meta.k8s.io version).
type protobufFrameKey struct {
	apiVersion, kind, metadata string
}

// protobufFrame returns the frame of one event of a protobuf watch stream:
// the event's own, encoded once for every watcher, when the event is the
// store's; else (bookmarks, an object leaving this watcher's selection)
// an encoding into buf.
func (s *Server) protobufFrame(buf *bytes.Buffer, k *kind, ev *storage.Event, md metadataOnly) ([]byte, error) {
	if ev.Type != storage.Bookmark && !ev.LeftSelection {
		key := protobufFrameKey{apiVersion: k.apiVersion(), kind: k.kind, metadata: md.version}
		return ev.Encoded(key, func(ev *storage.Event) ([]byte, error) {
			obj, err := s.protobufObject(k, ev.Object, md)
			if err != nil {
				return nil, err
			}
			return appendWatchEvent(nil, string(ev.Type), obj), nil
		})
	}
	buf.Reset()
	if err := s.writeEventObject(buf, k, ev, tableOptions{}, false, md); err != nil {
		return nil, err
	}
	obj, err := s.protobuf.fromJSON(buf.Bytes())
	if err != nil {
		return nil, err
	}
	return appendWatchEvent(buf.Bytes()[:0], string(ev.Type), obj), nil
}

// protobufObject returns o, an object of k, served in protobuf (in its
// envelope), or its metadata only when md.version is set.
func (s *Server) protobufObject(k *kind, o *storage.Object, md metadataOnly) ([]byte, error) {
	msg, err := s.protobufMessage(make([]byte, 0, len(o.Data)), k, o, md)
	if err != nil {
		return nil, err
	}
	if md.version != "" {
		return envelope(md.apiVersion(), "PartialObjectMetadata", msg), nil
	}
	return envelope(k.apiVersion(), k.kind, msg), nil
}

// protobufMessage appends the protobuf message of o, an object of k, as
// served (no envelope), or of its metadata only when md.version is set.
func (s *Server) protobufMessage(b []byte, k *kind, o *storage.Object, md metadataOnly) ([]byte, error) {
	data, err := s.output(k, o)
	if err != nil {
		return nil, err
	}
	if md.version != "" {
		// A PartialObjectMetadata: its ObjectMeta as field 1.
		if meta := s.protobuf.objectMeta(); meta != nil {
			if msg, ok := meta.AppendMember(nil, data, "metadata"); ok {
				return appendBytesField(b, 0x0a, msg), nil
			}
		}
		m := &metav1.PartialObjectMetadata{}
		if err := decodeInto(m, data); err != nil {
			return nil, err
		}
		return appendMessage(b, m, m.Size())
	}
	return s.protobuf.appendObject(b, k.gvr.GroupVersion().WithKind(k.kind), data)
}
