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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kloop.dev/kloop/apiserver/storage"
)

// serveResource serves a request on a resource path.
func (s *Server) serveResource(w http.ResponseWriter, r *http.Request, ri requestInfo) {
	k := s.reg.get(ri.gv.WithResource(ri.resource))
	if k == nil || (ri.namespace != "" && !k.namespaced) {
		writeStatus(w, notFoundPath(r.URL.Path))
		return
	}
	gr := k.groupResource()
	switch ri.subresource {
	case "":
	case "status":
		if !k.status {
			writeStatus(w, notFoundPath(r.URL.Path))
			return
		}
	case "scale":
		if k.scale == nil {
			writeStatus(w, notFoundPath(r.URL.Path))
			return
		}
	default:
		writeStatus(w, notFoundPath(r.URL.Path))
		return
	}
	if ri.name != "" && k.namespaced && ri.namespace == "" {
		writeStatus(w, notFoundPath(r.URL.Path))
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
				err = apierrors.NewMethodNotSupported(gr, "watch")
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
			err = apierrors.NewMethodNotSupported(gr, "create")
			break
		}
		if k.namespaced && ri.namespace == "" {
			writeStatus(w, notFoundPath(r.URL.Path))
			return
		}
		err = s.serveCreate(w, r, k, ri.namespace, q)
	case http.MethodPut:
		if ri.name == "" {
			err = apierrors.NewMethodNotSupported(gr, "update")
			break
		}
		err = s.serveUpdate(w, r, k, ri, q)
	case http.MethodPatch:
		if ri.name == "" {
			err = apierrors.NewMethodNotSupported(gr, "patch")
			break
		}
		err = s.servePatch(w, r, k, ri, q)
	case http.MethodDelete:
		switch {
		case ri.subresource != "":
			err = apierrors.NewMethodNotSupported(gr, "delete")
		case ri.name == "":
			err = s.serveDeleteCollection(w, r, k, ri.namespace, q)
		default:
			err = s.serveDelete(w, r, k, ri.namespace, ri.name, q)
		}
	default:
		err = apierrors.NewMethodNotSupported(gr, r.Method)
	}
	if err != nil {
		writeError(w, err, gr, ri.name)
	}
}

// get serves GET of one object.
func (s *Server) get(w http.ResponseWriter, r *http.Request, k *kind, ns, name string) error {
	o, err := s.store.Get(k.storageResource, ns, name)
	if err != nil {
		return err
	}
	if t, ok := wantsTable(r); ok {
		return s.writeTable(w, k, []*storage.Object{o}, metav1.ListMeta{ResourceVersion: formatRV(o.ResourceVersion)}, t)
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

// continueToken is the state of a paginated list, opaque to clients.
type continueToken struct {
	Revision int64  `json:"rv"`
	Start    string `json:"start"`
}

// list serves a list.
func (s *Server) list(w http.ResponseWriter, r *http.Request, k *kind, ns string, q url.Values) error {
	pred, err := s.predicate(k, q)
	if err != nil {
		return err
	}
	opts := storage.ListOptions{Namespace: ns, Predicate: pred}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.ParseInt(l, 10, 64)
		if err != nil || n < 0 {
			return badRequest("invalid limit %q", l)
		}
		opts.Limit = int(min(n, 1<<30))
	}
	rvParam, match := q.Get("resourceVersion"), q.Get("resourceVersionMatch")
	if c := q.Get("continue"); c != "" {
		if rvParam != "" && rvParam != "0" {
			return badRequest("specifying resource version is not allowed when using continue")
		}
		tok, err := decodeContinue(c)
		if err != nil {
			return err
		}
		opts.Revision, opts.Exact, opts.StartAfter = tok.Revision, true, tok.Start
	} else {
		rv, err := parseRV(rvParam)
		if err != nil {
			return badRequest("%v", err)
		}
		switch match {
		case "":
			opts.Revision = rv // legacy: not older than
		case string(metav1.ResourceVersionMatchNotOlderThan):
			if rvParam == "" {
				return badRequest("resourceVersionMatch is forbidden unless resourceVersion is provided")
			}
			opts.Revision = rv
		case string(metav1.ResourceVersionMatchExact):
			if rvParam == "" {
				return badRequest("resourceVersionMatch is forbidden unless resourceVersion is provided")
			}
			if rv == 0 {
				return badRequest("resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"")
			}
			opts.Revision, opts.Exact = rv, true
		default:
			return badRequest("invalid resourceVersionMatch %q: must be NotOlderThan or Exact", match)
		}
	}
	res, err := s.store.List(k.storageResource, opts)
	if err != nil {
		if errors.Is(err, storage.ErrExpired) && q.Get("continue") != "" {
			return apierrors.NewResourceExpired("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.")
		}
		return err
	}
	lm := metav1.ListMeta{ResourceVersion: formatRV(res.Revision)}
	if res.Next != "" {
		lm.Continue = encodeContinue(continueToken{Revision: res.Revision, Start: res.Next})
		if res.Remaining > 0 {
			lm.RemainingItemCount = &res.Remaining
		}
	}
	if t, ok := wantsTable(r); ok {
		return s.writeTable(w, k, res.Objects, lm, t)
	}
	metaJSON, err := json.Marshal(lm)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	size := 128
	for _, o := range res.Objects {
		size += len(o.Data) + 1
	}
	buf.Grow(size)
	fmt.Fprintf(&buf, `{"kind":%q,"apiVersion":%q,"metadata":%s,"items":[`, k.listKind, k.apiVersion(), metaJSON)
	for i, o := range res.Objects {
		if i > 0 {
			buf.WriteByte(',')
		}
		b, err := s.output(k, o)
		if err != nil {
			return err
		}
		buf.Write(b)
	}
	buf.WriteString("]}")
	writeJSON(w, http.StatusOK, buf.Bytes())
	return nil
}

func encodeContinue(t continueToken) string {
	b, _ := json.Marshal(t) // two plain fields: cannot fail
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeContinue(s string) (continueToken, error) {
	var t continueToken
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &t)
	}
	if err != nil || t.Revision <= 0 {
		return t, badRequest("invalid continue token %q", s)
	}
	return t, nil
}

// readBody reads a request body; too large bodies get 413.
func readBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", tooLarge.Limit))
		}
		return nil, badRequest("reading the request body: %v", err)
	}
	return b, nil
}

func boolParam(q url.Values, name string) bool {
	v := q.Get(name)
	b, err := strconv.ParseBool(v)
	return err == nil && b
}

func joinSelector(a, b string) string {
	if a == "" {
		return b
	}
	return a + "," + b
}
