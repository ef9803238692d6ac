package apiserver

import (
	"context"
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"kloop.dev/kloop/apiserver/storage"
)

// The hooks fault injection (apiservertest.Faults) is built on: an
// Interceptor that sees every authenticated request with its identity and
// attributes, a read revision a request can be served at (ReadAt), and a
// compaction of one resource's history. With no Interceptor set, a request
// pays one atomic load for all of them.

// Request is what the server knows of an authenticated request when it
// hands it to an [Interceptor]: who sent it and what it asks, as
// authorization sees it (kube-apiserver's RequestInfo).
type Request struct {
	// User is the authenticated user (before any impersonation the request
	// asks for).
	User UserInfo
	// Token is the bearer token the request authenticated with.
	Token string
	// ResourceRequest is true for a request under /api or /apis that names
	// a resource; the fields below it are empty otherwise.
	ResourceRequest bool
	// Verb is kube's: get, list, watch, create, update, patch, delete,
	// deletecollection for resource requests; the method in lower case for
	// the others.
	Verb string
	// APIGroup and APIVersion of a resource request ("" for the core group).
	APIGroup, APIVersion string
	// Resource, Subresource, Namespace and Name of a resource request.
	Resource, Subresource, Namespace, Name string
	// Path is the request's URL path.
	Path string
}

// GroupResource returns the request's group and resource.
func (r *Request) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: r.APIGroup, Resource: r.Resource}
}

// An Interceptor serves every authenticated request in place of the
// server: next serves it as the server would have (authorization, the
// in-flight bounds, routing). It may answer the request itself, call next
// once with a ResponseWriter or a request of its own (ReadAt), or both in
// turn. Requests without valid credentials (401) never reach it.
type Interceptor func(w http.ResponseWriter, r *http.Request, req *Request, next http.Handler)

// SetInterceptor makes f serve every authenticated request from now on
// (nil: the server serves them itself again). Requests already being
// served are not affected.
func (s *Server) SetInterceptor(f Interceptor) {
	if f == nil {
		s.interceptor.Store(nil)
		return
	}
	s.interceptor.Store(&f)
}

// intercept hands r to the Interceptor, if one is set; it reports whether
// it did.
func (s *Server) intercept(w http.ResponseWriter, r *http.Request, id *identity, class requestClass) bool {
	f := s.interceptor.Load()
	if f == nil || id == nil {
		return false
	}
	token, _ := bearerToken(r.Header.Get("Authorization"))
	a := requestAttributes(r)
	req := &Request{
		User: id.UserInfo, Token: token, ResourceRequest: a.ResourceRequest, Verb: a.Verb,
		APIGroup: a.APIGroup, Resource: a.Resource, Subresource: a.Subresource,
		Namespace: a.Namespace, Name: a.Name, Path: r.URL.Path,
	}
	if gv, ok := groupVersionOf(r.URL.Path); ok && a.ResourceRequest {
		req.APIVersion = gv.Version
	}
	(*f)(w, r, req, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.serveAuthenticated(w, r, id, class, http.NewResponseController(w))
	}))
	return true
}

// A WatchEventWriter is a ResponseWriter that wants to know what the
// frames of a watch carry: an Interceptor passes one to next, and the
// server calls WatchEvent before it writes each event's frame (one Write
// per frame).
type WatchEventWriter interface {
	http.ResponseWriter
	WatchEvent(WatchEvent)
}

// WatchEvent describes the frame of a watch the server writes next.
type WatchEvent struct {
	// Type is the event's: ADDED, MODIFIED, DELETED, BOOKMARK or ERROR.
	Type string
	// Revision is the event's resourceVersion (0 for ERROR).
	Revision int64
	// Initial marks the ADDED events of the watch's initial state
	// (sendInitialEvents, or a watch from resourceVersion "" or "0").
	Initial bool
	// InitialEventsEnd marks the bookmark that ends the initial events.
	InitialEventsEnd bool
}

type readAtKey struct{}

// ReadAt returns r marked to be read as of revision rev, as a server whose
// view stopped there: a GET answers the object as it was at rev, a LIST the
// state at rev (a resourceVersion newer than rev asked with NotOlderThan
// gets 504 Too large resource version, as from a server that has not seen
// it), and a watch's initial events (sendInitialEvents, or resourceVersion
// "" or "0") are the state at rev, followed by the events after it. A rev
// older than the history gets 410 Expired. Only an Interceptor's next
// honours the mark; writes ignore it.
func ReadAt(r *http.Request, rev int64) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), readAtKey{}, rev))
}

// readAt returns the revision ReadAt marked r with, or 0.
func (s *Server) readAt(r *http.Request) int64 {
	if s.interceptor.Load() == nil {
		return 0
	}
	rev, _ := r.Context().Value(readAtKey{}).(int64)
	return rev
}

// getAt returns object ns/name of k as it was at revision rev.
func (s *Server) getAt(k *kind, ns, name string, rev int64) (*storage.Object, error) {
	res, err := s.store.List(k.storageResource, storage.ListOptions{
		Namespace: ns, Revision: rev, Exact: true,
		Predicate: func(o *storage.Object) bool { return o.Name == name },
	})
	if err != nil {
		return nil, err
	}
	if len(res.Objects) == 0 {
		return nil, fmt.Errorf("%s %q: %w", k.storageResource, name, storage.ErrNotFound)
	}
	return res.Objects[0], nil
}

// CompactResource discards the history of one resource (every version of
// it; both groups of events share theirs) up to and including revision
// rev: its watches and lists from an older resourceVersion get 410 Gone
// from then on, while other resources keep their history. It fails for a
// resource the server does not serve or a revision beyond the current one.
func (s *Server) CompactResource(gr schema.GroupResource, rev int64) error {
	for _, k := range s.reg.all() {
		if k.groupResource() == gr {
			if err := s.store.CompactResource(k.storageResource, rev); err != nil {
				return fmt.Errorf("apiserver: compact %s: %w", gr, err)
			}
			return nil
		}
	}
	return fmt.Errorf("apiserver: compact %s: the server does not serve this resource", gr)
}

// Revision returns the server's current revision: the resourceVersion of
// its last write.
func (s *Server) Revision() int64 { return s.store.Revision() }
