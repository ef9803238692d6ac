package garbagecollector

import (
	"container/list"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The graph builder: one goroutine applies the monitors' changes to the
// owner graph, in order, and queues the work they make (kube's
// GraphBuilder.processGraphChanges).

func (c *Collector) processGraphChanges() {
	for {
		e, shutdown := c.graphChanges.Get()
		if shutdown {
			return
		}
		c.mu.Lock()
		c.applyChange(e)
		c.mu.Unlock()
		c.graphChanges.Done(e)
	}
}

// applyChange applies one change. c.mu is held.
func (c *Collector) applyChange(e *event) {
	obj := e.obj
	existing, found := c.uidToNode[obj.UID]
	if found && !e.virtual && existing.virtual {
		// A virtual node is observed: its real identity replaces the one
		// its dependents gave it; dependents that named it otherwise are
		// checked again (and told of a namespace that cannot match).
		observed := identityOf(e)
		if observed != existing.identity {
			_, invalid := partitionDependents(existing.dependentList(), observed)
			for _, d := range invalid {
				if observed.Namespace != "" && d.identity.Namespace != observed.Namespace {
					c.reportInvalidNamespaceOwnerRef(d, observed.UID)
				}
				c.enqueueDelete(d)
			}
			existing = c.replaceNode(existing, func(n *node) { n.identity = observed })
		}
		existing.virtual = false
	}
	switch {
	case (e.typ == addEvent || e.typ == updateEvent) && !found:
		n := &node{
			identity:           identityOf(e),
			dependents:         map[*node]struct{}{},
			owners:             obj.OwnerReferences,
			beingDeleted:       beingDeleted(obj),
			deletingDependents: beingDeleted(obj) && hasFinalizer(obj, metav1.FinalizerDeleteDependents),
		}
		c.uidToNode[obj.UID] = n
		c.addDependentToOwners(n, n.owners)
		c.processTransitions(e.old, obj, n)
	case e.typ == addEvent || e.typ == updateEvent:
		if !e.virtual && (existing.identity.APIVersion != e.gvk.GroupVersion().String() || existing.identity.Kind != e.gvk.Kind) {
			existing = c.replaceNode(existing, func(n *node) {
				n.identity.APIVersion, n.identity.Kind = e.gvk.GroupVersion().String(), e.gvk.Kind
			})
		}
		added, removed, changed := referencesDiff(existing.owners, obj.OwnerReferences)
		if len(added) > 0 || len(removed) > 0 || len(changed) > 0 {
			c.addUnblockedOwnersToDeleteQueue(removed, changed)
			existing.owners = obj.OwnerReferences
			c.addDependentToOwners(existing, added)
			c.removeDependentFromOwners(existing, removed)
		}
		if beingDeleted(obj) {
			existing.beingDeleted = true
		}
		c.processTransitions(e.old, obj, existing)
	case e.typ == deleteEvent:
		if !e.virtual {
			c.deleted.Delete(obj.UID)
		}
		if !found {
			return
		}
		c.applyDelete(e, existing)
	}
	if e.typ != deleteEvent && beingDeleted(obj) {
		c.deleted.Delete(obj.UID) // marked, not gone: its node says so now
	}
}

// replaceNode puts a changed copy of n in the graph, in its owners'
// dependents and its dependents' view, and returns it.
func (c *Collector) replaceNode(n *node, change func(*node)) *node {
	m := n.clone()
	change(m)
	c.uidToNode[m.identity.UID] = m
	for _, o := range m.owners {
		if on, ok := c.uidToNode[o.UID]; ok {
			if _, had := on.dependents[n]; had {
				delete(on.dependents, n)
				on.dependents[m] = struct{}{}
			}
		}
	}
	return m
}

// applyDelete removes a deleted object's node, or, for a virtual delete
// event (an owner verified absent), what it verified.
func (c *Collector) applyDelete(e *event, existing *node) {
	remove := true
	if e.virtual {
		deleted := identityOf(e)
		if existing.virtual {
			// Dependents may disagree on a virtual owner's identity: only
			// the identity verified absent goes.
			matching, nonmatching := partitionDependents(existing.dependentList(), deleted)
			if len(nonmatching) > 0 {
				remove = false
				if len(matching) > 0 {
					c.absent.add(deleted)
					for _, d := range matching {
						c.enqueueDelete(d)
					}
				}
				if existing.identity == deleted {
					if alt := alternateIdentity(nonmatching, deleted); alt != nil {
						r := c.replaceNode(existing, func(n *node) { n.identity = *alt })
						c.enqueueDeleteLater(r, retryDelay)
					}
				}
			}
		} else if existing.identity != deleted {
			// The observed object is not what the virtual event verified
			// absent: dependents that named that identity are collected.
			remove = false
			matching, _ := partitionDependents(existing.dependentList(), deleted)
			if len(matching) > 0 {
				c.absent.add(deleted)
				for _, d := range matching {
					c.enqueueDelete(d)
				}
			}
		}
	}
	if !remove {
		return
	}
	delete(c.uidToNode, existing.identity.UID)
	c.removeDependentFromOwners(existing, existing.owners)
	if len(existing.dependents) > 0 {
		c.absent.add(identityOf(e))
	}
	for d := range existing.dependents {
		c.enqueueDelete(d)
	}
	for _, o := range existing.owners {
		if on, ok := c.uidToNode[o.UID]; ok && on.deletingDependents {
			// The owner waits for its dependents: perhaps no longer.
			c.enqueueDelete(on)
		}
	}
}

// addDependentToOwners records n as a dependent of each owner, making
// virtual nodes for owners not seen yet (queued to be verified), and
// queues n itself when a reference may be invalid: an owner in another
// namespace, other coordinates than the owner observed, or a virtual
// cluster-scoped owner named from a namespace (kube issue 98040).
func (c *Collector) addDependentToOwners(n *node, owners []metav1.OwnerReference) {
	suspicious := false
	for _, o := range owners {
		on, ok := c.uidToNode[o.UID]
		if !ok {
			on = &node{identity: refOf(o, n.identity.Namespace), dependents: map[*node]struct{}{}, virtual: true}
			c.uidToNode[o.UID] = on
		}
		on.dependents[n] = struct{}{}
		if !ok {
			c.enqueueDelete(on)
			continue
		}
		if suspicious {
			continue
		}
		ownerNamespaced := on.identity.Namespace != ""
		switch {
		case ownerNamespaced && on.identity.Namespace != n.identity.Namespace:
			if !on.virtual {
				c.reportInvalidNamespaceOwnerRef(n, o.UID)
			}
			suspicious = true
		case !sameCoordinates(o, on.identity):
			suspicious = true
		case !ownerNamespaced && on.identity.Namespace != n.identity.Namespace && on.virtual:
			suspicious = true
		}
	}
	if suspicious {
		c.enqueueDelete(n)
	}
}

func (c *Collector) removeDependentFromOwners(n *node, owners []metav1.OwnerReference) {
	for _, o := range owners {
		if on, ok := c.uidToNode[o.UID]; ok {
			delete(on.dependents, n)
		}
	}
}

// addUnblockedOwnersToDeleteQueue queues the owners a dependent stopped
// blocking (its blocking reference removed, or its blockOwnerDeletion
// unset): a foreground deletion may be able to finish.
func (c *Collector) addUnblockedOwnersToDeleteQueue(removed []metav1.OwnerReference, changed [][2]metav1.OwnerReference) {
	for _, r := range removed {
		if isTrue(r.BlockOwnerDeletion) {
			if on, ok := c.uidToNode[r.UID]; ok {
				c.enqueueDelete(on)
			}
		}
	}
	for _, ch := range changed {
		if isTrue(ch[0].BlockOwnerDeletion) && !isTrue(ch[1].BlockOwnerDeletion) {
			if on, ok := c.uidToNode[ch[1].UID]; ok {
				c.enqueueDelete(on)
			}
		}
	}
}

// processTransitions queues an object whose deletion began to wait for
// the collector: an orphan deletion to attemptToOrphan, a foreground one
// (with its dependents) to attemptToDelete.
func (c *Collector) processTransitions(old, cur *metav1.PartialObjectMetadata, n *node) {
	if deletionStartsWith(old, cur, metav1.FinalizerOrphanDependents) {
		c.enqueueOrphan(n)
		return
	}
	if deletionStartsWith(old, cur, metav1.FinalizerDeleteDependents) {
		n.deletingDependents = true
		for d := range n.dependents {
			c.enqueueDelete(d)
		}
		c.enqueueDelete(n)
	}
}

// refCache is a bounded set of identities, the least recently added
// dropped first: the owners known to be absent (kube's absentOwnerCache).
type refCache struct {
	mu    sync.Mutex // guards the fields below
	max   int
	order *list.List // of objectRef, most recent first
	items map[objectRef]*list.Element
}

func newRefCache(max int) *refCache {
	return &refCache{max: max, order: list.New(), items: map[objectRef]*list.Element{}}
}

func (r *refCache) add(ref objectRef) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.items[ref]; ok {
		r.order.MoveToFront(e)
		return
	}
	r.items[ref] = r.order.PushFront(ref)
	if r.order.Len() > r.max {
		last := r.order.Back()
		r.order.Remove(last)
		delete(r.items, last.Value.(objectRef))
	}
}

func (r *refCache) has(ref objectRef) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.items[ref]
	return ok
}
