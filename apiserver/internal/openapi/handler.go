package openapi

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"

	openapi_v3 "github.com/google/gnostic-models/openapiv3"
	"google.golang.org/protobuf/proto"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Media types of the documents. Clients ask for the protobuf forms with the
// Accept* types; kube-apiserver answers with the Content-Type* forms (a dot
// instead of "@", which Go's mime parser rejects).
const (
	ContentTypeJSON    = "application/json"
	AcceptV2Proto      = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
	ContentTypeV2Proto = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
	AcceptV3Proto      = "application/com.github.proto-openapi.spec.v3@v1.0+protobuf"
	ContentTypeV3Proto = "application/com.github.proto-openapi.spec.v3.v1.0+protobuf"
)

// ServeHTTP serves GET /openapi/v2, /openapi/v3 and /openapi/v3/<path key>
// the way kube-apiserver does:
//
//   - /openapi/v2 answers JSON, or gnostic protobuf when the Accept header
//     asks for application/com.github.proto-openapi.spec.v2@v1.0+protobuf
//     (answered as application/com.github.proto-openapi.spec.v2.v1.0+protobuf)
//     (client-go's discovery client always does);
//   - /openapi/v3/<key>?hash=H answers the document with
//     "Cache-Control: public, immutable" when H is current, and redirects
//     (301) to the current hash otherwise; JSON or v3 protobuf;
//   - every answer carries an ETag; If-None-Match gives 304.
//
// Other paths get a 404 Status; other methods a 405 Status.
func (b *Builder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeStatus(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, fmt.Sprintf("%s is not supported on %s", r.Method, r.URL.Path))
		return
	}
	p := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case p == "/openapi/v2":
		d, err := b.V2()
		if err != nil {
			writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, err.Error())
			return
		}
		if accepts(r, AcceptV2Proto) || accepts(r, ContentTypeV2Proto) {
			pb, d, err := b.V2Proto()
			if err != nil {
				writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, err.Error())
				return
			}
			serve(w, r, d, ContentTypeV2Proto, pb, "no-cache, private")
			return
		}
		serve(w, r, d, ContentTypeJSON, d.JSON, "no-cache, private")
	case p == "/openapi/v3":
		d := b.V3Discovery()
		serve(w, r, d, ContentTypeJSON, d.JSON, "no-cache, private")
	case strings.HasPrefix(p, "/openapi/v3/"):
		key := strings.TrimPrefix(p, "/openapi/v3/")
		d, ok := b.V3(key)
		if !ok || !(strings.HasPrefix(key, "api/") || strings.HasPrefix(key, "apis/")) {
			writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, fmt.Sprintf("the OpenAPI document for %q is not found", key))
			return
		}
		cache := "no-cache, private"
		if h := r.URL.Query().Get("hash"); h != "" {
			if h != d.Hash {
				http.Redirect(w, r, "/openapi/v3/"+key+"?hash="+d.Hash, http.StatusMovedPermanently)
				return
			}
			cache = "public, immutable"
		}
		if accepts(r, AcceptV3Proto) || accepts(r, ContentTypeV3Proto) {
			pb, err := v3Proto(d)
			if err != nil {
				writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, err.Error())
				return
			}
			serve(w, r, d, ContentTypeV3Proto, pb, cache)
			return
		}
		serve(w, r, d, ContentTypeJSON, d.JSON, cache)
	default:
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource")
	}
}

func v3Proto(d *Document) ([]byte, error) {
	d.protoOnce.Do(func() {
		doc, err := openapi_v3.ParseDocument(d.JSON)
		if err != nil {
			d.protoErr = fmt.Errorf("openapi: v3 to protobuf: %w", err)
			return
		}
		d.proto, d.protoErr = proto.Marshal(doc)
	})
	return d.proto, d.protoErr
}

// accepts reports whether the Accept header lists mediaType (parameters and
// q-values are ignored; kube-apiserver prefers the first match too).
func accepts(r *http.Request, mediaType string) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			mt = strings.TrimSpace(strings.SplitN(part, ";", 2)[0])
		}
		if strings.EqualFold(mt, mediaType) {
			return true
		}
		if strings.EqualFold(mt, ContentTypeJSON) {
			// JSON listed first wins.
			return false
		}
	}
	return false
}

func serve(w http.ResponseWriter, r *http.Request, d *Document, contentType string, body []byte, cache string) {
	h := w.Header()
	h.Set("ETag", d.ETag())
	h.Set("Vary", "Accept")
	h.Set("Cache-Control", cache)
	if match := r.Header.Get("If-None-Match"); match != "" && match == d.ETag() {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", contentType)
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
	st := metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Message:  msg,
		Reason:   reason,
		Code:     int32(code),
	}
	body, _ := json.Marshal(st)
	w.Header().Set("Content-Type", ContentTypeJSON)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}
