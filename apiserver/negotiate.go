package apiserver

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/munnerz/goautoneg"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// mediaFormat is an encoding the server answers in.
type mediaFormat uint8

const (
	formatJSON mediaFormat = iota
	formatYAML
	formatProtobuf
)

// servedMediaType is one media type of answers.
type servedMediaType struct {
	typ, subtype string
	format       mediaFormat
	// stream: the type has a watch stream form (YAML has none).
	stream bool
}

// servedMediaTypes are the media types of answers, in kube-apiserver's order
// (its codec factory's, CBOR being off by default): the first is the answer
// to a request without Accept, or with */*.
var servedMediaTypes = [...]servedMediaType{
	{"application", "json", formatJSON, true},
	{"application", "yaml", formatYAML, false},
	{"application", "vnd.kubernetes.protobuf", formatProtobuf, true},
}

// contentType is the Content-Type of an answer in f.
func (f mediaFormat) contentType() string {
	switch f {
	case formatYAML:
		return "application/yaml"
	case formatProtobuf:
		return protobufContentType
	}
	return "application/json"
}

// answer is the representation of its answer a request negotiated with
// its Accept header.
type answer struct {
	format mediaFormat
	// as is the meta.k8s.io kind asked for instead of the object ("Table",
	// "PartialObjectMetadata", "PartialObjectMetadataList"), "" for the
	// object itself; asVersion is its version (v1 or v1beta1).
	as, asVersion string
}

// endpoint is what an endpoint can answer: kube-apiserver's
// EndpointRestrictions of a request scope.
type endpoint struct {
	// transforms: the endpoint answers in the meta.k8s.io kinds of as=
	// (resource endpoints; not errors, which kube-apiserver negotiates
	// with its default restrictions).
	transforms bool
	// noProtobuf: the endpoint's objects have no protobuf form (custom
	// resources, their status and scale: kube-apiserver's
	// StandardSerializers leave protobuf out); their metadata-only forms
	// have one.
	noProtobuf bool
}

// errorEndpoint is what errors (Status) are negotiated against.
var errorEndpoint = endpoint{}

// negotiate picks the representation of an answer as kube-apiserver's
// NegotiateMediaTypeOptions does: the Accept header's clauses sorted by
// quality and specificity (goautoneg, which kube-apiserver uses), the first
// clause that names a served media type (or application/*, or */*) and
// whose parameters the endpoint accepts; no Accept header is JSON. ok is
// false when no clause fits (a 406, see notAcceptable).
func negotiate(accept string, ep endpoint) (a answer, ok bool) {
	if accept == "" {
		return answer{format: formatJSON}, true
	}
	for _, c := range goautoneg.ParseAccept(accept) {
		for _, mt := range servedMediaTypes {
			if c.Type == mt.typ && (c.SubType == mt.subtype || c.SubType == "*") || c.Type == "*" && c.SubType == "*" {
				if a, ok := acceptParams(c.Params, mt, ep); ok {
					return a, true
				}
			}
		}
	}
	return answer{}, false
}

// acceptParams checks a clause's parameters as kube-apiserver's
// acceptMediaTypeOptions and its request scope's restrictions do: as, g
// and v ask for a transformation, which must be a meta.k8s.io Table (JSON
// and YAML only), PartialObjectMetadata or PartialObjectMetadataList at v1
// or v1beta1; stream must be watch, of a type that streams; sv must be the
// meta.k8s.io version, v1. Other parameters (pretty, export, profile, q)
// are left alone.
func acceptParams(params map[string]string, mt servedMediaType, ep endpoint) (answer, bool) {
	a := answer{format: mt.format}
	convert := false
	var group string
	for k, v := range params {
		switch k {
		case "as":
			convert, a.as = true, v
		case "g":
			convert, group = true, v
		case "v":
			convert, a.asVersion = true, v
		case "stream":
			if v != "" && (!mt.stream || v != "watch") {
				return answer{}, false
			}
		case "sv":
			if v != "" && (!ep.transforms || v != "v1") {
				return answer{}, false
			}
		}
	}
	if !convert {
		return a, !ep.noProtobuf || mt.format != formatProtobuf
	}
	if !ep.transforms || group != "meta.k8s.io" || a.asVersion != "v1" && a.asVersion != "v1beta1" {
		return answer{}, false
	}
	switch a.as {
	case "Table":
		return a, mt.format == formatJSON || mt.format == formatYAML
	case "PartialObjectMetadata", "PartialObjectMetadataList":
		return a, true
	}
	return answer{}, false
}

// notAcceptable is kube-apiserver's 406 for an Accept header the endpoint
// has no answer for; stream: for a watch, whose answer must stream.
func notAcceptable(stream bool) error {
	types := make([]string, 0, len(servedMediaTypes))
	for _, mt := range servedMediaTypes {
		switch {
		case !stream:
			types = append(types, mt.typ+"/"+mt.subtype)
		case mt.stream:
			types = append(types, mt.typ+"/"+mt.subtype+";stream=watch")
		}
	}
	return notAcceptableError("only the following media types are accepted: " + strings.Join(types, ", "))
}

// routeAccepts reports whether kube-apiserver's router (go-restful, which
// serves the built-in kinds; not custom resources) lets a request with
// this Accept header reach its handler: one of its media types, without
// parameters, is one the route produces (JSON, YAML, protobuf) or */*
// (application/* is none). Its handler negotiates next.
func routeAccepts(accept string) bool {
	if accept == "" {
		return true
	}
	for c := range strings.SplitSeq(accept, ",") {
		c, _, _ = strings.Cut(c, ";")
		c = strings.Trim(c, " ")
		if c == "*/*" {
			return true
		}
		for _, mt := range servedMediaTypes {
			if c == mt.typ+"/"+mt.subtype {
				return true
			}
		}
	}
	return false
}

// routeNotAcceptable is the 406 of kube-apiserver's router (go-restful's
// text in a Status), naming the media types its route produces: a
// collection's GET (list and watch) produces the stream types too.
func routeNotAcceptable(collection bool) error {
	types := make([]string, 0, 2*len(servedMediaTypes))
	for _, mt := range servedMediaTypes {
		types = append(types, mt.typ+"/"+mt.subtype)
	}
	if collection {
		for _, mt := range servedMediaTypes {
			if mt.stream {
				types = append(types, mt.typ+"/"+mt.subtype+";stream=watch")
			}
		}
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotAcceptable, Reason: metav1.StatusReasonNotAcceptable,
		Message: "406: Not Acceptable\n\nAvailable representations: " + strings.Join(types, ", "), Details: &metav1.StatusDetails{},
	}}
}

// negotiatedWriter carries a request's Accept header, and the answer its
// resource endpoint negotiated, to the functions that write its answers
// (writeJSON, writeObject, writeStatus), which find it under any other
// writer wrapping it (negotiatedOf).
type negotiatedWriter struct {
	http.ResponseWriter
	accept string
	// answer is the representation negotiated for the request's answer,
	// set by the resource endpoint; the zero value, JSON, answers
	// everything else (discovery, OpenAPI).
	answer answer
	// write: the request writes (not a GET), and its answer, an object,
	// is transformed by encode (get, list and watch write the forms
	// answer asks for themselves).
	write bool
	// codec encodes answers in protobuf.
	codec *protobufDecoder
}

// Unwrap lets http.ResponseController reach the connection.
func (w *negotiatedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// negotiating wraps w to carry r's Accept header to the functions that
// write its answers.
func (s *Server) negotiating(w http.ResponseWriter, r *http.Request) *negotiatedWriter {
	return &negotiatedWriter{ResponseWriter: w, accept: r.Header.Get("Accept"), codec: &s.protobuf}
}

// negotiatedOf returns the negotiatedWriter w is or wraps, nil if none.
func negotiatedOf(w http.ResponseWriter) *negotiatedWriter {
	for {
		switch x := w.(type) {
		case *negotiatedWriter:
			return x
		case interface{ Unwrap() http.ResponseWriter }:
			w = x.Unwrap()
		default:
			return nil
		}
	}
}

// answerOf returns the answer negotiated for the request w answers (JSON
// when none was).
func answerOf(w http.ResponseWriter) answer {
	if nw := negotiatedOf(w); nw != nil {
		return nw.answer
	}
	return answer{}
}

// negotiateAnswer negotiates the answer of a request on k's endpoint (or
// a subresource's, which answers in protobuf as k does: a custom
// resource's /scale neither) and records it for the writers of its
// answer; false when it has none, after answering the 406.
func (s *Server) negotiateAnswer(w http.ResponseWriter, r *http.Request, k *kind, ri requestInfo) bool {
	accept := r.Header.Get("Accept")
	if k.crd == nil && !routeAccepts(accept) {
		writeError(w, routeNotAcceptable(r.Method == http.MethodGet && (ri.name == "" || ri.watchPath) && ri.subresource == ""), k.groupResource(), "")
		return false
	}
	ep := endpoint{transforms: true, noProtobuf: k.crd != nil}
	a, ok := negotiate(accept, ep)
	if ok && a.format == formatProtobuf && a.as == "" && !s.protobuf.serves(k.gvr.GroupVersion().WithKind(k.kind)) {
		// A built-in kind with no Go type in the scheme (the scheme is
		// built only for requests that may be answered in protobuf).
		ep.noProtobuf = true
		a, ok = negotiate(accept, ep)
	}
	if !ok {
		writeError(w, notAcceptable(false), k.groupResource(), "")
		return false
	}
	if nw := negotiatedOf(w); nw != nil {
		nw.answer, nw.write = a, r.Method != http.MethodGet
	}
	return true
}

// encode re-encodes b, an answer in JSON, as a asks; st, when not nil, is
// the Status b encodes. Objects written (create, update, patch, delete:
// w.write) are answered in the metadata-only form when a asks for it, as
// kube-apiserver transforms every answer; get and list answer in the
// forms a asks for themselves.
func (w *negotiatedWriter) encode(a answer, b []byte, st *metav1.Status) ([]byte, error) {
	if a.as == "PartialObjectMetadata" && st == nil && w.write {
		var err error
		if b, err = asPartialObjectMetadata(b, a.asVersion); err != nil {
			return nil, err
		}
	}
	switch a.format {
	case formatYAML:
		return yaml.JSONToYAML(b)
	case formatProtobuf:
		if st != nil {
			return appendEnveloped(nil, "v1", "Status", st)
		}
		return w.codec.fromJSON(b)
	}
	return b, nil
}

// asPartialObjectMetadata returns the JSON object b in its metadata-only
// form (meta.k8s.io/version), unless it is a Status, a list or a form of
// meta.k8s.io already.
func asPartialObjectMetadata(b []byte, version string) ([]byte, error) {
	var obj struct {
		APIVersion string          `json:"apiVersion"`
		Kind       string          `json:"kind"`
		Metadata   json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal(b, &obj); err != nil {
		return nil, err
	}
	if obj.Kind == "Status" || strings.HasSuffix(obj.Kind, "List") || strings.HasPrefix(obj.APIVersion, "meta.k8s.io/") {
		return b, nil
	}
	return json.Marshal(map[string]any{"apiVersion": "meta.k8s.io/" + version, "kind": "PartialObjectMetadata", "metadata": obj.Metadata})
}

// negotiateDiscovery negotiates the answer of a discovery document (/api,
// /apis, a group, a group version's resource list) as kube-apiserver's
// discovery handlers do: JSON, YAML or protobuf, no transformation; false
// when none fits, after answering the 406.
func (s *Server) negotiateDiscovery(w http.ResponseWriter, r *http.Request) bool {
	accept := r.Header.Get("Accept")
	if s.getOnly(r.URL.Path, splitPath(r.URL.Path)) && !routeAccepts(accept) {
		// /api and the built-in group versions are go-restful routes.
		writeError(w, routeNotAcceptable(false), schema.GroupResource{}, "")
		return false
	}
	a, ok := negotiate(accept, errorEndpoint)
	if !ok {
		writeError(w, notAcceptable(false), schema.GroupResource{}, "")
		return false
	}
	if nw := negotiatedOf(w); nw != nil {
		nw.answer = a
	}
	return true
}
