package apiserver

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kloop.dev/kloop/apiserver/internal/jsontree"
	"kloop.dev/kloop/apiserver/storage"
)

// serveResource serves a request on a resource path.
func (s *Server) serveResource(w http.ResponseWriter, r *http.Request, ri requestInfo) {
	k := s.reg.get(ri.gv.WithResource(ri.resource))
	if k == nil || (ri.namespace != "" && !k.namespaced) {
		s.notFound(w, r)
		return
	}
	gr := k.groupResource()
	if k.deprecated != "" {
		// kube-apiserver warns on every request of a deprecated kind.
		for _, h := range warningHeaders([]string{k.deprecated}) {
			w.Header().Add("Warning", h)
		}
	}
	switch ri.subresource {
	case "":
	case "status":
		if !k.status {
			s.notFound(w, r)
			return
		}
	case "scale":
		if k.scale == nil {
			s.notFound(w, r)
			return
		}
	case "approval":
		if !k.approval {
			s.notFound(w, r)
			return
		}
	case "token":
		if k.gvr.Resource != "serviceaccounts" || k.gvr.Group != "" || ri.name == "" || ri.namespace == "" || ri.watchPath {
			s.notFound(w, r)
			return
		}
		if !s.negotiateAnswer(w, r, k, ri) {
			return
		}
		if err := s.serveTokenRequest(w, r, ri); err != nil {
			writeError(w, err, gr, ri.name)
		}
		return
	case "eviction", "binding":
		if k.gvr != podGVR || ri.name == "" || ri.namespace == "" || ri.watchPath {
			s.notFound(w, r)
			return
		}
		if !s.negotiateAnswer(w, r, k, ri) {
			return
		}
		if err := s.servePodSubresourceWrite(w, r, k, ri); err != nil {
			writeError(w, err, gr, ri.name)
		}
		return
	case "log", "exec", "attach", "portforward":
		if k.gvr != podGVR || ri.name == "" || ri.namespace == "" || ri.watchPath {
			s.notFound(w, r)
			return
		}
		if err := s.servePodConnect(w, r, k, ri); err != nil {
			writeError(w, err, gr, ri.name)
		}
		return
	default:
		s.notFound(w, r)
		return
	}
	if k.namespaced && ri.namespace == "" {
		// The all-namespaces path of a namespaced kind only reads its
		// collection (list, watch), as in kube-apiserver: a write there is
		// a 405 (a DELETE would empty the kind in every namespace), and a
		// name a 404 — which, for custom resources, kube-apiserver's
		// resource handler leaves to its mux (a plain-text 404).
		switch {
		case k.crd != nil && (ri.name != "" || r.Method != http.MethodGet):
			http.NotFound(w, r)
			return
		case ri.name != "":
			s.notFound(w, r)
			return
		case r.Method != http.MethodGet:
			writeError(w, methodNotAllowed(), gr, "")
			return
		}
	}
	if k.review != nil && (r.Method != http.MethodPost || ri.name != "" || ri.subresource != "" || ri.watchPath) {
		writeError(w, methodNotAllowed(), gr, ri.name)
		return
	}
	if !s.negotiateAnswer(w, r, k, ri) {
		return
	}
	q := r.URL.Query()
	watch := ri.watchPath || boolParam(q, "watch")
	var err error
	switch r.Method {
	case http.MethodGet:
		switch {
		case watch:
			if ri.subresource != "" {
				err = methodNotAllowed()
				break
			}
			if ri.name != "" { // legacy watch of one object
				q.Set("fieldSelector", joinSelector(q.Get("fieldSelector"), "metadata.name="+ri.name))
			}
			err = s.watch(w, r, k, ri.namespace, q)
		case ri.name == "":
			err = s.list(w, r, k, ri.namespace, q)
		case ri.subresource == "scale":
			err = s.getScale(w, k, ri.namespace, ri.name)
		default:
			err = s.get(w, r, k, ri.namespace, ri.name)
		}
	case http.MethodPost:
		if ri.name != "" {
			err = methodNotAllowed()
			break
		}
		err = s.serveCreate(w, r, k, ri.namespace, q)
	case http.MethodPut:
		if ri.name == "" {
			err = methodNotAllowed()
			break
		}
		err = s.serveUpdate(w, r, k, ri, q)
	case http.MethodPatch:
		if ri.name == "" {
			err = methodNotAllowed()
			break
		}
		err = s.servePatch(w, r, k, ri, q)
	case http.MethodDelete:
		switch {
		case ri.subresource != "":
			err = methodNotAllowed()
		case ri.name == "":
			err = s.serveDeleteCollection(w, r, k, ri.namespace, q)
		default:
			err = s.serveDelete(w, r, k, ri.namespace, ri.name, q)
		}
	default:
		err = methodNotAllowed()
	}
	if err != nil {
		writeError(w, err, gr, ri.name)
	}
	if r.Method != http.MethodGet {
		s.decoded.check() // after every write: nothing unless tests ask
	}
}

// get serves GET of one object.
func (s *Server) get(w http.ResponseWriter, r *http.Request, k *kind, ns, name string) error {
	if err := k.checkKey(ns, name); err != nil {
		return err
	}
	var o *storage.Object
	var err error
	if rev := s.readAt(r); rev > 0 {
		o, err = s.getAt(k, ns, name, rev) // a stale view (intercept.go)
	} else {
		o, err = s.store.Get(k.storageResource, ns, name)
	}
	if err != nil {
		return err
	}
	if t, ok := wantsTable(w, r); ok {
		return s.writeTable(w, k, []*storage.Object{o}, metav1.ListMeta{ResourceVersion: formatRV(o.ResourceVersion)}, t)
	}
	if md, ok := wantsMetadata(w); ok {
		if md.list {
			return md.notAcceptable(k, false)
		}
		m, err := s.served(k, o)
		if err != nil {
			return err
		}
		b, err := json.Marshal(md.of(m))
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, b)
		return nil
	}
	b, err := s.output(k, o)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, b)
	return nil
}

// output returns the served encoding of a stored object.
func (s *Server) output(k *kind, o *storage.Object) ([]byte, error) {
	if k.servesAsIs(o) {
		return o.Data, nil
	}
	m, err := s.served(k, o)
	if err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// served decodes a stored object into its served form.
func (s *Server) served(k *kind, o *storage.Object) (map[string]any, error) {
	m, err := decodeMap(o.Data)
	if err != nil {
		return nil, fmt.Errorf("decoding stored %s %s: %w", k.gvr.Resource, o.Key(), err)
	}
	return s.toServed(k, m)
}

func (s *Server) toServed(k *kind, m map[string]any) (map[string]any, error) {
	if k.convert != nil {
		var err error
		if m, err = k.convert.fromStorage(m); err != nil {
			return nil, fmt.Errorf("converting %s: %w", k.gvr.Resource, err)
		}
	}
	m["apiVersion"], m["kind"] = k.apiVersion(), k.kind
	return m, nil
}

// continueToken is the state of a paginated list, in kube-apiserver's
// encoding (base64 of {"v":"meta.k8s.io/v1","rv":…,"start":…}), so that
// malformed tokens get the same errors.
type continueToken struct {
	APIVersion string `json:"v"`
	// Revision of the list; -1 continues at the current revision (the token
	// a 410 for an expired continue offers).
	Revision int64  `json:"rv"`
	Start    string `json:"start"`
}

// listOptions validates the list and watch parameters as kube-apiserver's
// ValidateListOptions does (422 Invalid ListOptions).
func listOptions(q url.Values, watch bool) error {
	opts := metainternalversion.ListOptions{
		ResourceVersion:      q.Get("resourceVersion"),
		ResourceVersionMatch: metav1.ResourceVersionMatch(q.Get("resourceVersionMatch")),
		Continue:             q.Get("continue"),
		Watch:                watch,
		AllowWatchBookmarks:  boolParam(q, "allowWatchBookmarks"),
	}
	if q.Has("sendInitialEvents") {
		b := boolParam(q, "sendInitialEvents")
		opts.SendInitialEvents = &b
	}
	if errs := metavalidation.ValidateListOptions(&opts, true); len(errs) > 0 {
		return apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "ListOptions"}, "", errs)
	}
	return nil
}

// list serves a list.
func (s *Server) list(w http.ResponseWriter, r *http.Request, k *kind, ns string, q url.Values) error {
	if err := listOptions(q, false); err != nil {
		return err
	}
	pred, err := s.predicate(k, q)
	if err != nil {
		return err
	}
	opts := storage.ListOptions{Namespace: ns, Predicate: pred}
	rvParam, match := q.Get("resourceVersion"), q.Get("resourceVersionMatch")
	if l := q.Get("limit"); l != "" {
		n, err := strconv.ParseInt(l, 10, 64)
		if err != nil {
			return badRequest("%v", err)
		}
		// kube-apiserver serves resourceVersion "0" from its watch cache,
		// which ignores the limit: one page with everything (events have
		// no watch cache: paged from etcd).
		if n > 0 && (rvParam != "0" || !k.watchCached()) {
			opts.Limit = int(min(n, 1<<30))
		}
	}
	var tok continueToken
	if c := q.Get("continue"); c != "" {
		if tok, err = decodeContinue(c); err != nil {
			return err
		}
		if rvParam != "" && rvParam != "0" {
			return badRequest("specifying resource version is not allowed when using continue")
		}
		opts.StartAfter = tok.Start
		if tok.Revision > 0 {
			opts.Revision, opts.Exact = tok.Revision, true
		}
	} else {
		rv, err := parseRV(rvParam)
		if err != nil {
			return badRequest("invalid resource version: %v", err)
		}
		opts.Revision = rv // not older than, unless Exact
		opts.Exact = match == string(metav1.ResourceVersionMatchExact)
		if stale := s.readAt(r); stale > 0 { // a stale view (intercept.go)
			if rv > stale {
				return &storage.TooLargeError{Requested: rv, Current: stale}
			}
			if !opts.Exact || rv == 0 {
				opts.Revision, opts.Exact = stale, true
			}
		}
	}
	if err := k.checkKey(ns, ""); err != nil {
		return err
	}
	res, err := s.store.List(k.storageResource, opts)
	if err != nil {
		if errors.Is(err, storage.ErrExpired) {
			if q.Get("continue") != "" {
				// As etcd: the list may go on at the current revision,
				// with the token of the Status.
				st := apierrors.NewResourceExpired(inconsistentContinue)
				st.ErrStatus.ListMeta.Continue = encodeContinue(continueToken{Revision: -1, Start: tok.Start})
				return st
			}
			return apierrors.NewResourceExpired("The resourceVersion for the provided list is too old.")
		}
		return err
	}
	lm := metav1.ListMeta{ResourceVersion: formatRV(res.Revision)}
	if res.Next != "" {
		lm.Continue = encodeContinue(continueToken{Revision: res.Revision, Start: res.Next})
		// The count is known only when nothing filters the objects.
		if res.Remaining > 0 && pred == nil {
			lm.RemainingItemCount = &res.Remaining
		}
	}
	if t, ok := wantsTable(w, r); ok {
		return s.writeTable(w, k, res.Objects, lm, t)
	}
	md, isMeta := wantsMetadata(w)
	if isMeta && !md.list {
		return md.notAcceptable(k, true)
	}
	if answerOf(w).format == formatProtobuf {
		if ok, err := s.writeProtobufList(w, k, res.Objects, lm, md); ok || err != nil {
			return err
		}
	}
	if isMeta {
		items := make([]any, len(res.Objects))
		for i, o := range res.Objects {
			m, err := s.served(k, o)
			if err != nil {
				return err
			}
			items[i] = md.of(m)
		}
		b, err := json.Marshal(map[string]any{"apiVersion": md.apiVersion(), "kind": "PartialObjectMetadataList", "metadata": lm, "items": items})
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, b)
		return nil
	}
	metaJSON, err := json.Marshal(lm)
	if err != nil {
		return err
	}
	if k.crd != nil && lm.Continue == "" {
		// Lists of custom resources (unstructured) always carry continue.
		metaJSON = append([]byte(`{"continue":"",`), metaJSON[1:]...)
	}
	var buf bytes.Buffer
	size := 128
	for _, o := range res.Objects {
		size += len(o.Data) + 1
	}
	buf.Grow(size)
	fmt.Fprintf(&buf, `{"kind":%q,"apiVersion":%q,"metadata":%s,"items":[`, k.listKind, k.apiVersion(), metaJSON)
	var corrupt []*corruptObjectError // objects a conversion webhook did not convert
	for i, o := range res.Objects {
		if i > 0 {
			buf.WriteByte(',')
		}
		b, err := s.output(k, o)
		var ce *corruptObjectError
		if errors.As(err, &ce) {
			corrupt = append(corrupt, ce)
			continue
		}
		if err != nil {
			return err
		}
		if k.crd == nil {
			// Items of built-in lists carry no apiVersion and kind.
			b = jsontree.StripTypeMeta(b)
		}
		buf.Write(b)
	}
	if len(corrupt) > 0 {
		return storageReadError(k, corrupt)
	}
	buf.WriteString("]}")
	writeJSON(w, http.StatusOK, buf.Bytes())
	return nil
}

// inconsistentContinue is etcd storage's message for a continue token whose
// revision was compacted.
const inconsistentContinue = "The provided continue parameter is too old to display a consistent list result. " +
	"You can start a new list without the continue parameter, or use the continue token in this response to " +
	"retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - " +
	"objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list."

func encodeContinue(t continueToken) string {
	t.APIVersion = "meta.k8s.io/v1"
	b, _ := json.Marshal(t) // plain fields: cannot fail
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeContinue decodes a continue token, with kube-apiserver's errors.
func decodeContinue(s string) (continueToken, error) {
	var t continueToken
	invalid := func(format string, args ...any) error {
		return badRequest("invalid continue token: continue key is not valid"+format, args...)
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return t, invalid(": %v", err)
	}
	if err := json.Unmarshal(b, &t); err != nil {
		return t, invalid(": %v", err)
	}
	switch {
	case t.APIVersion != "meta.k8s.io/v1":
		return t, invalid(": server does not recognize this encoded version %v", t.APIVersion)
	case t.Revision == 0 || t.Revision < -1:
		return t, invalid(": incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
	case t.Start == "":
		return t, invalid(": encoded start key empty (version meta.k8s.io/v1)")
	}
	return t, nil
}

// readBody reads a request body; too large bodies get 413, bodies that do
// not arrive within the request's timeout 504.
func readBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", tooLarge.Limit))
		}
		if _, ok := err.(apierrors.APIStatus); ok { // a timeout (timeoutBody)
			return nil, err
		}
		return nil, badRequest("reading the request body: %v", err)
	}
	return b, nil
}

// boolParam reads a boolean query parameter as kube-apiserver converts
// them: absent, "0" and "false" (any case) are false, anything else — "1",
// "yes", "no", the empty value — is true.
func boolParam(q url.Values, name string) bool {
	vs, ok := q[name]
	if !ok || len(vs) == 0 {
		return false
	}
	return vs[0] != "0" && !strings.EqualFold(vs[0], "false")
}

func joinSelector(a, b string) string {
	if a == "" {
		return b
	}
	return a + "," + b
}
