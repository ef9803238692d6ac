package apiserver

import (
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"kloop.dev/kloop/apiserver/internal/typed"
	"kloop.dev/kloop/apiserver/storage"
)

// kind describes one served resource at one group version: how it is named,
// stored, validated, selected and printed. Built-in kinds are rows of the
// table in kinds.go; custom resources get theirs from their CRD (crd.go).
// A kind is immutable once ready (ready: its setup done).
type kind struct {
	gvr             schema.GroupVersionResource
	kind, listKind  string
	singular        string
	namespaced      bool
	shortNames      []string
	categories      []string
	verbs           []string
	storageResource string // key of the store resource: "group/resource"
	storageVersion  string // apiVersion of stored objects
	status          bool   // has a /status subresource
	scale           *scaleInfo
	generation      bool // maintains metadata.generation
	nameValidation  func(name string, prefix bool) []string
	newTyped        func() any    // built-ins: Go type for decoding and strategic merge patch
	defaults        func(obj any) // built-ins: the scheme's defaults of a decoded object (newTyped's type)
	approval        bool          // has an /approval subresource (CertificateSigningRequests)
	fields          []selectableField
	fieldAliases    map[string]string // served field label -> stored one (events.k8s.io)
	columns         []column
	tableNoName     bool // Table output without the leading Name column (events: theirs is last)
	// cells, when set, gives a row's cells after Name (one per column,
	// whose value functions are then unused): kinds printed from their Go
	// type (kinds_*.go).
	cells func(obj map[string]any, now time.Time) []any
	// internalMeta, when set, turns an object's metadata into the form
	// kube-apiserver's internal type has, which its Table rows carry
	// (DaemonSets: without the template generation annotation).
	internalMeta func(md map[string]any)
	// nameCell, when set, is a row's Name cell (IngressClasses: the
	// default one says so).
	nameCell       func(obj map[string]any) string
	prepareCreate  func(obj map[string]any) // resets and defaults on create (decoding's work: the field manager sees them)
	strategyCreate func(obj map[string]any) // what kube-apiserver's strategy and admission set on create, after the field manager
	stored         func(obj map[string]any) // what kube-apiserver's storage keeps of a written object, after the field manager
	validate       func(obj map[string]any) field.ErrorList
	validateUpdate func(obj, old map[string]any) field.ErrorList
	validateCreate func(obj map[string]any) field.ErrorList // beside validate, on create only
	// validateSubresource, when set, is the update validation of the
	// strategy of a subresource ("" for the main resource).
	validateSubresource func(sub string, obj, old map[string]any) field.ErrorList
	// declarative, when set, rewrites a write's validation errors as
	// kube-apiserver v1.37 reports them for kinds whose declarative
	// validation (beta) has taken over some rules: those errors, in their
	// declarative form, come after the others.
	declarative      func(errs field.ErrorList, obj map[string]any, update bool) field.ErrorList
	carryOver        func(obj, old map[string]any)                    // fills fields an update may leave out (the strategy's: after the field manager)
	normalize        func(obj map[string]any) (map[string]any, error) // canonical form before validation
	convert          *conversion                                      // when the served form differs from the stored one (not counting apiVersion)
	managed          *kindFields                                      // field managers (managedfields.go); set by the registry
	crd              *crdServing                                      // for custom resources
	deleteCollection bool
	// returnsDeleted: a DELETE that removes the object answers with the
	// object, not a Status (kube-apiserver's ReturnDeletedObject: pods,
	// services, service accounts, namespaces).
	returnsDeleted bool
	// createdBy, when set, records the creating user in a new object
	// (CertificateSigningRequests' requester), after the field manager.
	createdBy func(obj map[string]any, u *identity)
	// subresourceUpdate, when set, applies what the kind's strategy for
	// sub ("" for the main resource) keeps of old in an update, after the
	// generic rules (CertificateSigningRequests: their spec, approval).
	subresourceUpdate func(sub string, obj, old map[string]any, now time.Time)
	// resetFields, when set, are the fields a write to each subresource
	// never sets, for the field manager (kube's GetResetFields), instead
	// of the generic ones (status on the main resource, spec on /status).
	resetFields map[string][]fieldpath.Path
	// orphanByDefault: a deletion without a propagation policy orphans the
	// object's dependents (kube-apiserver's DefaultGarbageCollectionPolicy
	// of batch/v1 Jobs and core/v1 ReplicationControllers).
	orphanByDefault bool
	// admitUpdate, when set, is the admission check of an update of the
	// main resource, after validation (PersistentVolumeClaims' resize).
	admitUpdate func(s *Server, obj, old map[string]any) error
	// warnings returns the Warning headers of a valid write (nil: none).
	warnings func(obj map[string]any) []string
	// warningsUpdate, when set, returns those of an update instead (old:
	// the object it replaces), which may warn only of what it brings.
	warningsUpdate func(obj, old map[string]any) []string
	// validateAll, when set, validates a create (old nil) or an update
	// (through subresource, "" for the main resource) in place of validate,
	// validateUpdate and the generic metadata checks: the kind's own
	// validation checks the metadata too (CRDs: kube-apiserver's).
	validateAll func(obj, old map[string]any, subresource string) field.ErrorList
	// statusKeepsMeta lists the metadata fields a write to /status cannot
	// change (deployments: labels; pods: ownerReferences).
	statusKeepsMeta []string
	// requireResourceVersion: an update must name the resourceVersion it
	// replaces (kube-apiserver's AllowUnconditionalUpdate false: leases,
	// CRDs, custom resources).
	requireResourceVersion bool
	// annotationsMoveGeneration: a change of annotations moves
	// metadata.generation as a spec change does (deployments, in
	// kube-apiserver's strategy), except through /status.
	annotationsMoveGeneration bool
	// labelsMoveGeneration: a change of labels moves metadata.generation
	// (EndpointSlices, in kube-apiserver's strategy).
	labelsMoveGeneration bool
	// fixedGeneration: metadata.generation is 1 from the create on and
	// never moves (PriorityClasses, in kube-apiserver's strategy).
	fixedGeneration bool
	// checkDelete, when set, may refuse the DELETE of one object by name
	// before anything else is read (the system PriorityClasses); a
	// collection's delete does not call it, as kube-apiserver's does not.
	checkDelete func(name string) error
	// review, when set, makes the kind a create-only one that stores
	// nothing (access and identity reviews): a create answers 201 with what
	// review returns for the call (reviews.go).
	review func(rc *reviewCall) (map[string]any, error)
	// checkWrite, when set, checks a create (old nil) or an update of an
	// object (stored form) by user u in namespace ns before it is
	// validated: the RBAC kinds' escalation checks (rbac.go). Writes of
	// the server's own (u nil) and of system:masters are not checked.
	checkWrite func(s *Server, u *identity, k *kind, ns string, obj, old map[string]any) error

	// Hooks: what a kind does around the generic write path (create.go,
	// update.go, delete.go, lifecycle.go), which has no kind of its own;
	// nil does nothing. They are set by the setup of the kind's row
	// (kinds.go) or by crd.go.

	// admit checks and completes a new object (stored form) just before it
	// is stored, reserving what it needs (CRDs: names no other CRD serves,
	// and the status the CRD controllers set; services: a cluster IP).
	admit func(s *Server, obj map[string]any) error
	// admitManager, when set, records what admit sets as that manager's
	// write of /status (CRDs: the status kube-apiserver's CRD controllers
	// set, by "kube-apiserver").
	admitManager string
	// admitBefore, when set, makes the state before admit's write what
	// kube-apiserver's strategy leaves for its controllers (CRDs: an empty
	// status with the stored versions); after is the admitted object.
	admitBefore func(before, after map[string]any)
	// releaseAdmitted gives back what admit reserved for an object that is
	// not stored after all (a dry run, a failed create).
	releaseAdmitted func(s *Server, obj map[string]any)
	// afterWrite runs once an object was created or updated, afterDelete
	// once it left the store (CRDs: serve what the stored CRD says;
	// services: release the cluster IP).
	afterWrite  func(s *Server, o *storage.Object)
	afterDelete func(s *Server, o *storage.Object)
	// restore rebuilds what the server derives from a stored object, for
	// each object of a data directory New opens (persist.go). Kinds whose
	// afterWrite or admit keeps state outside the store need one (CRDs:
	// their served kinds; services: their cluster IPs; RBAC: the policy).
	restore func(s *Server, o *storage.Object)
	// terminate makes deletion two-phased, for kinds whose objects hold
	// others (namespaces, CRDs): the first deletion of an object only marks
	// it deleted, with what terminate adds (namespaces: status.phase
	// Terminating; CRDs: their cleanup finalizer), and no deletion — dry
	// runs included — removes one at once or takes the garbage collector's
	// finalizers. Once that first deletion is written, deleteContent
	// deletes what the object holds, and the last of it finishes the
	// object's deletion (see afterDelete).
	terminate     func(obj map[string]any)
	deleteContent func(s *Server, name string)
	// waitsForContent reports whether an object being deleted, with no
	// finalizer left, must still stay while it holds content (namespaces;
	// CRDs have their finalizer for that).
	waitsForContent func(s *Server, name string) bool
	// gracePeriod makes deletion graceful (pods): a first update records
	// it (deletionTimestamp, deletionGracePeriodSeconds: the period
	// gracePeriod returns for the object and the deletion's options), and
	// the object goes when the period is 0, or a later deletion shortens
	// it to 0.
	gracePeriod func(obj map[string]any, opts metav1.DeleteOptions) int64

	// deprecated, when set, is the Warning kube-apiserver adds to every
	// request of a deprecated kind (core/v1 Endpoints).
	deprecated string

	// setup, when set, gives a kind of the table of built-in kinds its
	// behaviour (its hooks and columns), at its first use (ready):
	// setupOnce guards the fields it sets, which are read only through
	// the registry (get, all), which calls ready.
	setup     func(k *kind)
	setupOnce sync.Once

	// zeroStatusOnce guards zeroStatus, computed on first use
	// (resetStatus): the status of a new object, never written.
	zeroStatusOnce sync.Once
	zeroStatus     any

	// schemaOnce guards schema, computed on first use (typedSchema): the
	// description of newTyped's type for fastTyped, nil when it serves none.
	schemaOnce sync.Once
	schema     *typed.Schema
}

// watchCached reports whether kube-apiserver serves the kind from its
// watch cache (by default every kind but events), which shapes a few
// answers: lists at resourceVersion "0" ignore the limit, and expired
// watches get the cache's message.
func (k *kind) watchCached() bool { return k.storageResource != "/events" }

func (k *kind) apiVersion() string { return k.gvr.GroupVersion().String() }

func (k *kind) groupResource() schema.GroupResource { return k.gvr.GroupResource() }

// sameStorageForm reports whether objects are stored in the form this kind
// serves (objects written before a CRD changed its storage version may not
// be: see servesAsIs).
func (k *kind) sameStorageForm() bool {
	return (k.convert == nil || k.convert.byVersion) && k.apiVersion() == k.storageVersion
}

// servesAsIs reports whether a stored object's bytes are its served form.
func (k *kind) servesAsIs(o *storage.Object) bool {
	return (k.convert == nil || k.convert.byVersion) && o.APIVersion == k.apiVersion()
}

// conversion converts between the stored and the served form of an object.
type conversion struct {
	toStorage   func(obj map[string]any) (map[string]any, error)
	fromStorage func(obj map[string]any) (map[string]any, error)
	// byVersion: an object at the version it is wanted at needs nothing
	// (a CRD's conversion webhook: crdconvert.go).
	byVersion bool
}

// scaleInfo locates the replica fields of a kind with a /scale subresource.
type scaleInfo struct {
	specReplicas   []string
	statusReplicas []string
	selector       []string // label selector (an object) or, for CRDs, a string path
	selectorString bool     // the selector path holds a serialized selector (CRDs)
	selectorMap    bool     // the selector path holds a map of labels (ReplicationControllers)
}

// selectableField is a field usable in field selectors.
type selectableField struct {
	name string
	path []string
	// absent is the field's value when the object has none (kube's
	// printing of the Go zero value: "0" for counts, "false" for flags).
	absent string
}

// column is one column of Table output.
type column struct {
	def   metav1.TableColumnDefinition
	value func(obj map[string]any, now time.Time) any
}

// registry holds the served kinds. It is safe for concurrent use.
type registry struct {
	mu sync.RWMutex // guards kinds and gen
	// kinds by group, version and resource; CRDs add and remove entries.
	kinds map[schema.GroupVersionResource]*kind
	// gen counts changes of kinds (starting at 1 once kinds are added).
	gen uint64
}

// generation returns a number that changes whenever the served kinds change.
func (r *registry) generation() uint64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.gen
}

func newRegistry() *registry {
	return &registry{kinds: map[schema.GroupVersionResource]*kind{}}
}

func (r *registry) add(ks ...*kind) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range ks {
		if k.managed == nil {
			k.managed = &kindFields{}
		}
		r.kinds[k.gvr] = k
	}
	r.gen++
}

// replaceCRD replaces the kinds served for a CRD (none to stop serving it).
func (r *registry) replaceCRD(crdName string, kinds []*kind) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := map[schema.GroupVersionResource]*kind{}
	for gvr, k := range r.kinds {
		if k.crd != nil && k.crd.crdName == crdName {
			delete(r.kinds, gvr)
			old[gvr] = k
		}
	}
	for _, k := range kinds {
		if k.managed == nil {
			k.managed = &kindFields{}
		}
		if o := old[k.gvr]; o != nil && k.crd != nil {
			k.crd.gone = o.crd.gone
			delete(old, k.gvr)
		} else if k.crd != nil {
			k.crd.gone = make(chan struct{})
		}
		r.kinds[k.gvr] = k
	}
	for _, o := range old {
		if o.crd.gone != nil {
			close(o.crd.gone)
		}
	}
	r.gen++
}

// servesGroupVersion reports whether any kind is served at gv.
func (r *registry) servesGroupVersion(gv schema.GroupVersion) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for gvr := range r.kinds {
		if gvr.GroupVersion() == gv {
			return true
		}
	}
	return false
}

// servesBuiltin reports whether a kind that is not a CRD's is served in
// group (at version, unless version is empty): kube-apiserver serves those
// with go-restful routes, a CRD's with apiextensions' handlers.
func (r *registry) servesBuiltin(group, version string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for gvr, k := range r.kinds {
		if k.crd == nil && gvr.Group == group && (version == "" || gvr.Version == version) {
			return true
		}
	}
	return false
}

// crdKinds returns the kinds served for a CRD.
func (r *registry) crdKinds(crdName string) []*kind {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []*kind
	for _, k := range r.kinds {
		if k.crd != nil && k.crd.crdName == crdName {
			out = append(out, k)
		}
	}
	return out
}

// servedOver returns the built-in kind served at apiVersion over the store
// resource storageResource (nil if none).
func (r *registry) servedOver(storageResource, apiVersion string) *kind {
	r.mu.RLock()
	var found *kind
	for _, k := range r.kinds {
		if k.crd == nil && k.storageResource == storageResource && k.apiVersion() == apiVersion {
			found = k
			break
		}
	}
	r.mu.RUnlock()
	return found.ready()
}

func (r *registry) get(gvr schema.GroupVersionResource) *kind {
	r.mu.RLock()
	k := r.kinds[gvr]
	r.mu.RUnlock()
	return k.ready()
}

// all returns the kinds sorted by group, version and resource.
func (r *registry) all() []*kind {
	r.mu.RLock()
	out := make([]*kind, 0, len(r.kinds))
	for _, k := range r.kinds {
		out = append(out, k)
	}
	r.mu.RUnlock()
	for _, k := range out {
		k.ready()
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].gvr, out[j].gvr
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.Version != b.Version {
			return versionLess(b.Version, a.Version) // preferred (highest) first
		}
		return a.Resource < b.Resource
	})
	return out
}

// groupVersions returns the served groups, in discovery order (the legacy
// core group first, then built-in groups, then the others by name), each with
// its versions, preferred first.
func (r *registry) groupVersions() []groupVersions {
	var out []groupVersions
	for _, k := range r.all() {
		g := k.gvr.Group
		i := slices.IndexFunc(out, func(x groupVersions) bool { return x.group == g })
		if i < 0 {
			out = append(out, groupVersions{group: g})
			i = len(out) - 1
		}
		if !slices.Contains(out[i].versions, k.gvr.Version) {
			out[i].versions = append(out[i].versions, k.gvr.Version)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return groupRank(out[i].group) < groupRank(out[j].group) })
	return out
}

type groupVersions struct {
	group    string
	versions []string // preferred first
}

// kube-apiserver orders groups by priority (its /apis lists them so):
// apiextensions.k8s.io comes before coordination.k8s.io, for one.
var builtinGroupOrder = []string{"", "apps", "events.k8s.io", "authentication.k8s.io", "authorization.k8s.io",
	"autoscaling", "batch", "certificates.k8s.io", "networking.k8s.io", "policy", "rbac.authorization.k8s.io",
	"storage.k8s.io", "admissionregistration.k8s.io", "apiextensions.k8s.io", "scheduling.k8s.io",
	"coordination.k8s.io", "node.k8s.io", "discovery.k8s.io"}

func groupRank(g string) int {
	if i := slices.Index(builtinGroupOrder, g); i >= 0 {
		return i
	}
	return len(builtinGroupOrder)
}

// versionLess orders Kubernetes versions: GA > beta > alpha, then by number,
// then other strings alphabetically (kube's version priority).
func versionLess(a, b string) bool {
	ra, na, sa, oka := parseVersion(a)
	rb, nb, sb, okb := parseVersion(b)
	switch {
	case oka && !okb:
		return false
	case !oka && okb:
		return true
	case !oka && !okb:
		return a > b // alphabetical: earlier letters sort higher
	}
	if ra != rb {
		return ra < rb
	}
	if na != nb {
		return na < nb
	}
	return sa < sb
}

// parseVersion parses v<major>[(alpha|beta)<minor>]; rank is 2 for GA, 1 for beta, 0 for alpha.
func parseVersion(v string) (rank, major, minor int, ok bool) {
	if !strings.HasPrefix(v, "v") {
		return 0, 0, 0, false
	}
	rest := v[1:]
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		major = major*10 + int(rest[i]-'0')
		i++
	}
	if i == 0 || rest[0] == '0' {
		return 0, 0, 0, false
	}
	rest = rest[i:]
	switch {
	case rest == "":
		return 2, major, 0, true
	case strings.HasPrefix(rest, "beta"):
		rank, rest = 1, rest[4:]
	case strings.HasPrefix(rest, "alpha"):
		rank, rest = 0, rest[5:]
	default:
		return 0, 0, 0, false
	}
	if rest == "" {
		return 0, 0, 0, false
	}
	for _, c := range rest {
		if c < '0' || c > '9' {
			return 0, 0, 0, false
		}
		minor = minor*10 + int(c-'0')
	}
	return rank, major, minor, true
}

// ready completes k's setup, once (nil for nil).
func (k *kind) ready() *kind {
	if k != nil && k.setup != nil {
		k.setupOnce.Do(func() { k.setup(k) })
	}
	return k
}
