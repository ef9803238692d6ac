package garbagecollector

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// objectRef is an object's identity as the collector knows it: an owner
// reference's coordinates (apiVersion, kind, name, uid) and a namespace.
type objectRef struct {
	APIVersion string
	Kind       string
	Name       string
	UID        types.UID
	Namespace  string
}

// String is kube's rendering of an identity, which its events quote.
func (r objectRef) String() string {
	return fmt.Sprintf("[%s/%s, namespace: %s, name: %s, uid: %s]", r.APIVersion, r.Kind, r.Namespace, r.Name, r.UID)
}

// refOf is the identity an owner reference names, in namespace ns.
func refOf(o metav1.OwnerReference, ns string) objectRef {
	return objectRef{APIVersion: o.APIVersion, Kind: o.Kind, Name: o.Name, UID: o.UID, Namespace: ns}
}

// sameCoordinates reports whether an owner reference names r (namespace
// aside).
func sameCoordinates(o metav1.OwnerReference, r objectRef) bool {
	return o.UID == r.UID && o.Name == r.Name && o.Kind == r.Kind && o.APIVersion == r.APIVersion
}

// node is an object in the owner graph: an object observed by a monitor,
// or a virtual node, an owner that dependents name and no monitor has
// shown yet (it may not exist). Every field is guarded by graph.mu; only
// the graph builder writes.
type node struct {
	identity objectRef
	// dependents are the nodes whose ownerReferences name this one.
	dependents map[*node]struct{}
	// owners are the object's ownerReferences, as last observed.
	owners []metav1.OwnerReference
	// beingDeleted: the object has a deletionTimestamp (one way).
	beingDeleted bool
	// deletingDependents: being deleted with the foregroundDeletion
	// finalizer, waiting for its blocking dependents to go.
	deletingDependents bool
	// virtual: never observed by a monitor.
	virtual bool
}

func (n *node) dependentList() []*node {
	out := make([]*node, 0, len(n.dependents))
	for d := range n.dependents {
		out = append(out, d)
	}
	return out
}

// blockingDependents returns the dependents whose reference to n has
// blockOwnerDeletion: those a foreground deletion of n waits for.
func (n *node) blockingDependents() []*node {
	var out []*node
	for d := range n.dependents {
		for _, o := range d.owners {
			if o.UID == n.identity.UID && o.BlockOwnerDeletion != nil && *o.BlockOwnerDeletion {
				out = append(out, d)
				break
			}
		}
	}
	return out
}

// clone copies a node (for an identity replaced in the graph).
func (n *node) clone() *node {
	c := *n
	c.dependents = make(map[*node]struct{}, len(n.dependents))
	for d := range n.dependents {
		c.dependents[d] = struct{}{}
	}
	c.owners = slices.Clone(n.owners)
	return &c
}

// eventType is the kind of a graph change.
type eventType uint8

const (
	addEvent eventType = iota
	updateEvent
	deleteEvent
)

// event is a change for the graph builder: a monitor's notification, or a
// virtual delete event (the collector found an owner absent).
type event struct {
	typ     eventType
	virtual bool
	gvk     schema.GroupVersionKind
	obj     *metav1.PartialObjectMetadata
	old     *metav1.PartialObjectMetadata // updates only
}

func identityOf(e *event) objectRef {
	return objectRef{APIVersion: e.gvk.GroupVersion().String(), Kind: e.gvk.Kind, Name: e.obj.Name, UID: e.obj.UID, Namespace: e.obj.Namespace}
}

func beingDeleted(o *metav1.PartialObjectMetadata) bool { return o.DeletionTimestamp != nil }

func hasFinalizer(o *metav1.PartialObjectMetadata, f string) bool {
	return slices.Contains(o.Finalizers, f)
}

// deletionStartsWith reports whether an update makes the object wait for
// the collector with finalizer f: being deleted with f now, and not before.
func deletionStartsWith(old, cur *metav1.PartialObjectMetadata, f string) bool {
	if !beingDeleted(cur) || !hasFinalizer(cur, f) {
		return false
	}
	return old == nil || !beingDeleted(old) || !hasFinalizer(old, f)
}

// referencesDiff compares two ownerReferences lists by uid.
func referencesDiff(old, cur []metav1.OwnerReference) (added, removed []metav1.OwnerReference, changed [][2]metav1.OwnerReference) {
	byUID := make(map[types.UID]metav1.OwnerReference, len(old))
	for _, o := range old {
		byUID[o.UID] = o
	}
	for _, c := range cur {
		o, ok := byUID[c.UID]
		if !ok {
			added = append(added, c)
			continue
		}
		if !sameReference(o, c) {
			changed = append(changed, [2]metav1.OwnerReference{o, c})
		}
		delete(byUID, c.UID)
	}
	for _, o := range old {
		if _, ok := byUID[o.UID]; ok {
			removed = append(removed, o)
		}
	}
	return added, removed, changed
}

func sameReference(a, b metav1.OwnerReference) bool {
	return a.APIVersion == b.APIVersion && a.Kind == b.Kind && a.Name == b.Name && a.UID == b.UID &&
		boolPtrEqual(a.Controller, b.Controller) && boolPtrEqual(a.BlockOwnerDeletion, b.BlockOwnerDeletion)
}

func boolPtrEqual(a, b *bool) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func isTrue(b *bool) bool { return b != nil && *b }

// partitionDependents splits dependents into those whose reference to the
// owner's uid matches its identity (coordinates, and namespace for a
// namespaced owner), and those with a reference to that uid that does not;
// a dependent with several references to the uid may be in both.
func partitionDependents(deps []*node, owner objectRef) (matching, nonmatching []*node) {
	namespaced := owner.Namespace != ""
	for _, d := range deps {
		match, mismatch := false, false
		if namespaced && owner.Namespace != d.identity.Namespace {
			mismatch = true
		} else {
			for _, o := range d.owners {
				if o.UID != owner.UID {
					continue
				}
				if sameCoordinates(o, owner) {
					match = true
				} else {
					mismatch = true
				}
			}
		}
		if match {
			matching = append(matching, d)
		}
		if mismatch {
			nonmatching = append(nonmatching, d)
		}
	}
	return matching, nonmatching
}

func refLess(a, b objectRef) bool {
	switch {
	case a.Kind != b.Kind:
		return a.Kind < b.Kind
	case a.APIVersion != b.APIVersion:
		return a.APIVersion < b.APIVersion
	case a.Namespace != b.Namespace:
		return a.Namespace < b.Namespace
	case a.Name != b.Name:
		return a.Name < b.Name
	}
	return a.UID < b.UID
}

// alternateIdentity returns another identity dependents give the owner
// uid of absent, which was verified not to exist: the first, in refLess
// order, that follows absent, else the first; nil if there is none.
func alternateIdentity(deps []*node, absent objectRef) *objectRef {
	clusterScoped := absent.Namespace == ""
	seen := map[objectRef]bool{absent: true}
	var first, following *objectRef
	for _, d := range deps {
		for _, o := range d.owners {
			if o.UID != absent.UID {
				continue
			}
			if sameCoordinates(o, absent) && (clusterScoped || absent.Namespace == d.identity.Namespace) {
				continue
			}
			ref := refOf(o, d.identity.Namespace)
			if clusterScoped && ref.APIVersion == absent.APIVersion && ref.Kind == absent.Kind {
				ref.Namespace = ""
			}
			if seen[ref] {
				continue
			}
			seen[ref] = true
			r := ref
			if first == nil || refLess(r, *first) {
				first = &r
			}
			if refLess(absent, r) && (following == nil || refLess(r, *following)) {
				following = &r
			}
		}
	}
	if following != nil {
		return following
	}
	return first
}
