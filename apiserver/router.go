package apiserver

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kloop.dev/kloop/apiserver/internal/jsontree"
)

// requestInfo is what a resource path names, after kube-apiserver's
// RequestInfoFactory: /api/v1/..., /apis/<group>/<version>/..., optionally
// under namespaces/<ns>/, optionally after a legacy watch/ segment.
type requestInfo struct {
	gv          schema.GroupVersion
	resource    string
	namespace   string
	name        string
	subresource string
	watchPath   bool // the path had the legacy /watch/ segment
}

// namespaceSubresources are the subresources of namespaces that look like
// resources inside a namespace.
var namespaceSubresources = map[string]bool{"status": true, "finalize": true}

// parseResourcePath parses a resource path. ok is false when the path is not
// under /api or /apis or has no resource.
func parseResourcePath(path string) (ri requestInfo, ok bool) {
	return parseResourceParts(splitPath(path))
}

// parseResourceParts is parseResourcePath on the path's segments.
func parseResourceParts(parts []string) (ri requestInfo, ok bool) {
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		ri.gv = schema.GroupVersion{Version: parts[1]}
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		ri.gv = schema.GroupVersion{Group: parts[1], Version: parts[2]}
		parts = parts[3:]
	default:
		return ri, false
	}
	if parts[0] == "watch" {
		ri.watchPath = true
		parts = parts[1:]
	}
	if len(parts) == 0 {
		return ri, false
	}
	if parts[0] == "namespaces" && len(parts) > 1 {
		ri.namespace = parts[1]
		if len(parts) > 2 && !namespaceSubresources[parts[2]] {
			parts = parts[2:]
		} else { // the namespace object itself
			ri.resource, ri.name, ri.namespace = "namespaces", parts[1], ""
			if len(parts) > 2 {
				ri.subresource = parts[2]
			}
			return ri, len(parts) <= 3
		}
	}
	ri.resource = parts[0]
	if len(parts) > 1 {
		ri.name = parts[1]
	}
	if len(parts) > 2 {
		ri.subresource = parts[2]
	}
	return ri, len(parts) <= 3
}

// splitPath splits a URL path into its non-empty segments.
func splitPath(path string) []string {
	path = strings.Trim(path, "/")
	if path == "" {
		return nil
	}
	return strings.Split(path, "/")
}

// routes serves everything behind authentication.
func (s *Server) routes(w http.ResponseWriter, r *http.Request) {
	if err := checkQuery(r.URL.RawQuery); err != nil {
		writeError(w, err, schema.GroupResource{}, "")
		return
	}
	path := r.URL.Path
	parts := splitPath(path)
	if s.getOnly(path, parts) && r.Method != http.MethodGet {
		writeError(w, methodNotAllowed(), schema.GroupResource{}, "")
		return
	}
	switch {
	case path == "/version" || path == "/version/":
		s.serveVersion(w, r)
	case isHealthPath(path):
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		_, _ = w.Write([]byte("ok"))
	case path == "/api" || path == "/api/":
		s.serveAPIVersions(w, r)
	case path == "/apis" || path == "/apis/":
		s.serveAPIGroupList(w, r)
	case strings.HasPrefix(path, "/openapi/"):
		s.serveOpenAPI(w, r)
	default:
		switch {
		case len(parts) == 2 && parts[0] == "api":
			s.serveResourceList(w, r, schema.GroupVersion{Version: parts[1]})
		case len(parts) == 2 && parts[0] == "apis":
			s.serveAPIGroup(w, r, parts[1])
		case len(parts) == 3 && parts[0] == "apis":
			s.serveResourceList(w, r, schema.GroupVersion{Group: parts[1], Version: parts[2]})
		default:
			ri, ok := parseResourceParts(parts)
			if !ok {
				s.notFound(w, r)
				return
			}
			s.serveResource(w, r, ri)
		}
	}
}

// getOnly reports whether path is one that kube-apiserver serves with a
// route for GET alone (its go-restful routes: /version, /api and the
// resource lists of the built-in group versions), which answers any other
// method, HEAD too, with a 405. The others it serves for every method, as
// the server does: /apis and a group (its own handlers), the resource list
// of a CRD's group version (apiextensions' handler), /healthz, /livez and
// /readyz (and their checks).
func (s *Server) getOnly(path string, parts []string) bool {
	switch {
	case path == "/version" || path == "/version/" || path == "/api" || path == "/api/":
		return true
	case len(parts) == 2 && parts[0] == "api":
		return s.reg.servesBuiltin("", parts[1])
	case len(parts) == 3 && parts[0] == "apis":
		return s.reg.servesBuiltin(parts[1], parts[2])
	}
	return false
}

// isHealthPath reports whether path is one of the health endpoints
// (/healthz, /livez, /readyz) or one of their checks (/healthz/ping,
// /readyz/poststarthook/x: the server answers "ok" for every check name);
// as kube-apiserver's, a path with an empty segment (a trailing slash) is
// none of theirs.
func isHealthPath(path string) bool {
	for _, p := range []string{"/healthz", "/livez", "/readyz"} {
		if rest, ok := strings.CutPrefix(path, p); ok && (rest == "" || rest[0] == '/' && !slices.Contains(strings.Split(rest[1:], "/"), "")) {
			return true
		}
	}
	return false
}

// checkQuery refuses (400) a query that does not parse: a malformed %
// escape or a semicolon. kube-apiserver (Go's url.Values) drops such a
// parameter silently, which turns a collection delete with a mistyped
// labelSelector into the deletion of everything; the embedded server
// refuses it instead.
func checkQuery(raw string) error {
	if _, err := url.ParseQuery(raw); err != nil {
		return badRequest("the query of the request is malformed: %v", err)
	}
	return nil
}

// notFound answers a path the server does not serve as kube-apiserver
// does: under a served group version or a go-restful web service's root,
// a NotFound Status with empty details; elsewhere, the plain-text 404 of
// its HTTP mux.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	if gv, ok := groupVersionOf(r.URL.Path); ok && s.reg.servesGroupVersion(gv) || s.underGoRestful(r.URL.Path) {
		writeStatus(w, &metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
			Message: "the server could not find the requested resource", Details: &metav1.StatusDetails{},
		})
		return
	}
	http.NotFound(w, r)
}

// underGoRestful reports whether path is under the root of one of
// kube-apiserver's go-restful web services (/api, /version, a built-in
// group's /apis/<group>), whose 404 is a Status as well.
func (s *Server) underGoRestful(path string) bool {
	if strings.HasPrefix(path, "/api/") || strings.HasPrefix(path, "/version/") {
		return true
	}
	parts := splitPath(path)
	return len(parts) >= 2 && parts[0] == "apis" && s.reg.servesBuiltin(parts[1], "")
}

// groupVersionOf returns the group version a path is under, if any.
func groupVersionOf(path string) (schema.GroupVersion, bool) {
	parts := splitPath(path)
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		return schema.GroupVersion{Version: parts[1]}, true
	case len(parts) >= 3 && parts[0] == "apis":
		return schema.GroupVersion{Group: parts[1], Version: parts[2]}, true
	}
	return schema.GroupVersion{}, false
}

// checkKey is what kube-apiserver's storage answers for a request on
// object name (or, name "", the collection) in namespace ns of k: a 400
// for a name that cannot be a path segment ("." or "..", or one with "/"
// or "%"; its registry's key function), a 500 for a namespace "." or ".."
// (its storage refuses the key, and quotes it). The server calls it where
// it reaches the store, after a request's own errors, as kube-apiserver.
func (k *kind) checkKey(ns, name string) error {
	if name != "" {
		if msgs := content.IsPathSegmentName(name); len(msgs) > 0 {
			return badRequest("Name parameter invalid: %q: %s", name, strings.Join(msgs, ";"))
		}
	}
	if ns == "." || ns == ".." {
		key := k.etcdPrefix() + "/" + ns
		if name != "" {
			key += "/" + name
		}
		return serverError(fmt.Errorf("invalid key: %q", key))
	}
	return nil
}

// checkURLName is kube-apiserver's check of an update's body against its
// URL, before the object is read: the same name, and the same namespace
// if the body has one.
func checkURLName(k *kind, ri requestInfo, obj map[string]any) error {
	if name := jsontree.Str(obj, "metadata", "name"); name != ri.name {
		return badRequest("the name of the object (%s) does not match the name on the URL (%s)", name, ri.name)
	}
	if ns := jsontree.Str(obj, "metadata", "namespace"); k.namespaced && ns != "" && ns != ri.namespace {
		return badRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return nil
}

// checkCreateNamespace is kube-apiserver's answer to a create in a
// namespace that cannot be a path segment: its admission looks the
// namespace up with client-go, which refuses the name (a 500).
func checkCreateNamespace(ns string) error {
	if msgs := content.IsPathSegmentName(ns); len(msgs) > 0 {
		return apierrors.NewInternalError(fmt.Errorf("invalid resource name %q: %v", ns, msgs))
	}
	return nil
}

// etcdPrefix is where kube-apiserver keeps the objects of k in etcd, which
// its "invalid key" errors quote: the resource (a few core ones elsewhere),
// or group/resource for custom resources.
func (k *kind) etcdPrefix() string {
	if k.crd != nil {
		return "/" + k.gvr.Group + "/" + k.gvr.Resource
	}
	if k.gvr.Group == "" {
		switch k.gvr.Resource {
		case "services":
			return "/services/specs"
		case "endpoints":
			return "/services/endpoints"
		case "nodes":
			return "/minions"
		case "replicationcontrollers":
			return "/controllers"
		}
	}
	return "/" + k.gvr.Resource
}

// methodNotAllowed is kube-apiserver's answer to a method a path does not
// take.
func methodNotAllowed() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusMethodNotAllowed, Reason: metav1.StatusReasonMethodNotAllowed,
		Message: "the server does not allow this method on the requested resource", Details: &metav1.StatusDetails{},
	}}
}
