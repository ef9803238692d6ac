package openapi

import (
	"bytes"
	"crypto/sha512"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Resource describes one served resource (one group/version/kind).
type Resource struct {
	// GVK is the group, version and kind served. Required.
	GVK schema.GroupVersionKind
	// ListKind is the kind of lists. Default: Kind + "List".
	ListKind string
	// Plural is the resource name in URLs, e.g. "pods". Required.
	Plural string
	// Namespaced selects /namespaces/{namespace}/ paths.
	Namespaced bool
	// Verbs are the supported verbs among get, list, watch, create, update,
	// patch, delete, deletecollection. Default: all of them.
	Verbs []string
	// Subresources lists the served subresources: "status" and/or "scale".
	Subresources []string
	// Schema is the openAPIV3Schema of a custom resource version (nil means
	// an object with any fields). Mutually exclusive with Type.
	Schema *apiextensionsv1.JSONSchemaProps
	// Type is the Go struct of a built-in kind (e.g.
	// reflect.TypeFor[corev1.Pod]()); its schema is derived by reflection.
	Type reflect.Type
	// ListType is the Go list type of a built-in kind (e.g.
	// reflect.TypeFor[corev1.PodList]()). Default: a list schema is
	// synthesized as for custom resources.
	ListType reflect.Type
	// StrategicMergePatch advertises application/strategic-merge-patch+json
	// on PATCH (built-in kinds). Default false (custom resources).
	StrategicMergePatch bool
}

var allVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}

func (r *Resource) validate() error {
	switch {
	case r.GVK.Version == "" || r.GVK.Kind == "":
		return fmt.Errorf("resource %q: GVK needs a version and a kind", r.Plural)
	case r.Plural == "":
		return fmt.Errorf("resource %s: Plural is required", r.GVK)
	case r.Schema != nil && r.Type != nil:
		return fmt.Errorf("resource %s: Schema and Type are mutually exclusive", r.GVK)
	}
	if r.Type != nil {
		t := r.Type
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return fmt.Errorf("resource %s: Type %v is not a struct", r.GVK, r.Type)
		}
	}
	for _, v := range r.Verbs {
		if !slices.Contains(allVerbs, v) {
			return fmt.Errorf("resource %s: unknown verb %q", r.GVK, v)
		}
	}
	for _, s := range r.Subresources {
		if s != "status" && s != "scale" {
			return fmt.Errorf("resource %s: unknown subresource %q", r.GVK, s)
		}
	}
	return nil
}

func (r *Resource) has(verb string) bool {
	return len(r.Verbs) == 0 || slices.Contains(r.Verbs, verb)
}

func (r *Resource) listKind() string {
	if r.ListKind != "" {
		return r.ListKind
	}
	return r.GVK.Kind + "List"
}

// Options configure a Builder. The zero value works.
type Options struct {
	// Title is info.title of every document. Default "Kubernetes".
	Title string
	// Version is info.version of every document. Default "unversioned".
	Version string
	// Logger receives build diagnostics. Default: discards.
	Logger *slog.Logger
}

func (o *Options) defaults() {
	if o.Title == "" {
		o.Title = "Kubernetes"
	}
	if o.Version == "" {
		o.Version = "unversioned"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

func (o *Options) validate() error {
	if strings.ContainsAny(o.Title+o.Version, "\x00\n") {
		return errors.New("openapi: Title and Version must be single-line strings")
	}
	return nil
}

// Document is one built, immutable document with its hash (upper-case hex
// SHA-512 of JSON, as kube-apiserver computes ETags and v3 hashes).
type Document struct {
	JSON []byte
	Hash string
	// proto caches the protobuf form, built on first use.
	protoOnce sync.Once
	proto     []byte
	protoErr  error
}

func newDocument(js []byte) *Document {
	return &Document{JSON: js, Hash: fmt.Sprintf("%X", sha512.Sum512(js))}
}

// ETag is the quoted hash, for the ETag header.
func (d *Document) ETag() string { return `"` + d.Hash + `"` }

// Builder builds and caches the OpenAPI documents of a set of resources:
// /openapi/v2 (Swagger 2.0, JSON or gnostic protobuf), the /openapi/v3
// discovery document, and one OpenAPI 3.0 document per group version.
// Set rebuilds only the v3 documents of group versions whose resources
// changed (and the small discovery document); the v2 document, which covers
// everything, is rebuilt lazily on its next request.
//
// A Builder is safe for concurrent use.
type Builder struct {
	opts Options

	// mu guards everything below. Documents are immutable once published.
	mu        sync.Mutex
	key       string     // fingerprint of the resources the documents describe
	resources []Resource // sorted; what v2 is built from
	// v2 is built lazily on first use after a change (nil until then): it
	// covers every resource, and most changes (a CRD added) need only the
	// one v3 document of their group version.
	v2        *Document
	discovery *Document
	v3        map[string]*Document // by path key: "api/v1", "apis/<g>/<v>"
	v3Keys    map[string]string    // fingerprint of each group version's resources
	builds    int
}

// New returns a Builder describing no resources until Set is called.
func New(opts Options) (*Builder, error) {
	opts.defaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	b := &Builder{opts: opts}
	if err := b.Set(nil); err != nil {
		return nil, err
	}
	return b, nil
}

// Set replaces the described resources. When they are the same as last time
// (same GVKs, names, verbs, subresources, types and schemas) nothing is
// rebuilt and hashes stay the same. It fails on an invalid Resource or a
// schema that cannot be converted; the previous documents then stay.
func (b *Builder) Set(resources []Resource) error {
	rs := slices.Clone(resources)
	for i := range rs {
		if err := rs[i].validate(); err != nil {
			return fmt.Errorf("openapi: %w", err)
		}
	}
	sort.SliceStable(rs, func(i, j int) bool {
		a, c := rs[i].GVK, rs[j].GVK
		if a.Group != c.Group {
			return a.Group < c.Group
		}
		if a.Version != c.Version {
			return a.Version < c.Version
		}
		return rs[i].Plural < rs[j].Plural
	})
	key, err := fingerprint(rs)
	if err != nil {
		return fmt.Errorf("openapi: %w", err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.discovery != nil && key == b.key {
		return nil
	}
	v3, v3Keys, disc, err := b.buildV3(rs, b.v3, b.v3Keys)
	if err != nil {
		return fmt.Errorf("openapi: building v3: %w", err)
	}
	b.key, b.resources, b.v2, b.v3, b.v3Keys, b.discovery = key, rs, nil, v3, v3Keys, disc
	b.builds++
	b.opts.Logger.Debug("openapi v3 documents built", "resources", len(rs), "groupVersions", len(v3))
	return nil
}

func fingerprint(rs []Resource) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, r := range rs {
		t, lt := "", ""
		if r.Type != nil {
			t = r.Type.PkgPath() + "." + r.Type.String()
		}
		if r.ListType != nil {
			lt = r.ListType.PkgPath() + "." + r.ListType.String()
		}
		if err := enc.Encode([]any{r.GVK, r.listKind(), r.Plural, r.Namespaced, r.Verbs, r.Subresources, r.Schema, t, lt, r.StrategicMergePatch}); err != nil {
			return "", fmt.Errorf("resource %s: %w", r.GVK, err)
		}
	}
	return fmt.Sprintf("%x", sha512.Sum512(buf.Bytes())), nil
}

// Builds reports how many times documents were built (for tests and
// metrics).
func (b *Builder) Builds() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.builds
}

// V2 returns the Swagger 2.0 document served at /openapi/v2, building it
// if the resources changed since it was last built.
func (b *Builder) V2() (*Document, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.v2 == nil {
		d, err := b.buildV2(b.resources)
		if err != nil {
			return nil, fmt.Errorf("openapi: building v2: %w", err)
		}
		b.v2 = d
		b.opts.Logger.Debug("openapi v2 document built", "resources", len(b.resources), "bytes", len(d.JSON))
	}
	return b.v2, nil
}

// V2Proto returns the v2 document in gnostic's protobuf encoding, which
// client-go's discovery client (and so kubectl) asks for with
// Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf.
func (b *Builder) V2Proto() ([]byte, *Document, error) {
	d, err := b.V2()
	if err != nil {
		return nil, nil, err
	}
	d.protoOnce.Do(func() {
		doc, err := openapi_v2.ParseDocument(d.JSON)
		if err != nil {
			d.protoErr = fmt.Errorf("openapi: v2 to protobuf: %w", err)
			return
		}
		d.proto, d.protoErr = proto.Marshal(doc)
	})
	return d.proto, d, d.protoErr
}

// V3Discovery returns the /openapi/v3 discovery document: {"paths": {
// "api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=..."}, ...}}.
func (b *Builder) V3Discovery() *Document {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.discovery
}

// V3 returns the OpenAPI 3.0 document of one group version. groupVersion
// is either a discovery path key ("api/v1", "apis/apps/v1") or a group
// version ("v1", "apps/v1").
func (b *Builder) V3(groupVersion string) (*Document, bool) {
	key := groupVersion
	if !strings.HasPrefix(key, "api/") && !strings.HasPrefix(key, "apis/") {
		gv, err := schema.ParseGroupVersion(groupVersion)
		if err != nil {
			return nil, false
		}
		key = pathKey(gv)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	d, ok := b.v3[key]
	return d, ok
}

func pathKey(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "api/" + gv.Version
	}
	return "apis/" + gv.Group + "/" + gv.Version
}
