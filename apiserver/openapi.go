package apiserver

import (
	"net/http"
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"kloop.dev/kloop/apiserver/internal/openapi"
)

// openAPI serves /openapi/v2 and /openapi/v3 from documents describing the
// served kinds, rebuilt when the kinds change (a CRD is created, updated or
// deleted). Documents are built on first request, not at startup.
type openAPI struct {
	builder *openapi.Builder

	mu  sync.Mutex // guards gen and the call to builder.Set
	gen uint64     // registry generation the builder describes; 0: none yet
}

func newOpenAPI() (*openAPI, error) {
	b, err := openapi.New(openapi.Options{Title: "Kubernetes", Version: serverVersion.GitVersion})
	if err != nil {
		return nil, err
	}
	return &openAPI{builder: b}, nil
}

// serveOpenAPI serves the OpenAPI documents.
func (s *Server) serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	o := s.openapi
	o.mu.Lock()
	if gen := s.reg.generation(); gen != o.gen {
		if err := o.builder.Set(s.openAPIResources()); err != nil {
			o.mu.Unlock()
			writeError(w, err, schema.GroupResource{}, "")
			return
		}
		o.gen = gen
	}
	o.mu.Unlock()
	o.builder.ServeHTTP(w, r)
}

// openAPIResources describes the served kinds for the OpenAPI builder.
func (s *Server) openAPIResources() []openapi.Resource {
	var out []openapi.Resource
	for _, k := range s.reg.all() {
		r := openapi.Resource{
			GVK:        k.gvr.GroupVersion().WithKind(k.kind),
			ListKind:   k.listKind,
			Plural:     k.gvr.Resource,
			Namespaced: k.namespaced,
			Verbs:      k.verbs,
		}
		if k.status {
			r.Subresources = append(r.Subresources, "status")
		}
		if k.scale != nil {
			r.Subresources = append(r.Subresources, "scale")
		}
		switch {
		case k.crd != nil:
			r.Schema = k.crd.schemaProps
		case k.newTyped != nil:
			r.Type = reflect.TypeOf(k.newTyped()).Elem()
			r.StrategicMergePatch = true
		}
		out = append(out, r)
	}
	return out
}
