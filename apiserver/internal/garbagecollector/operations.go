package garbagecollector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"kloop.dev/kloop/apiserver/internal/jsontree"
	"kloop.dev/kloop/reconcile"
)

// The workers: attempts to delete (an object whose owners may all be
// gone, an owner waiting for its dependents, a virtual owner to verify)
// and attempts to orphan (an owner deleted with the orphan policy), as
// kube's attemptToDeleteItem and attemptToOrphanWorker.

// retryDelay is how long a replaced virtual node waits to be verified.
const retryDelay = 50 * time.Millisecond

var (
	// errVirtualDeleteQueued: the item does not exist; a virtual delete
	// event tells the graph builder, nothing to retry.
	errVirtualDeleteQueued = errors.New("enqueued virtual delete event")
	// errNamespacedOwnerOfClusterScoped: a cluster-scoped object cannot
	// have a namespaced owner; retrying does not help.
	errNamespacedOwnerOfClusterScoped = errors.New("cluster-scoped objects cannot refer to namespaced owners")
	// errNotObserved: a virtual node stays queued until a monitor shows
	// it or it is found absent.
	errNotObserved = errors.New("item not observed by a monitor yet")
)

// snapshot is what a worker reads of a node, under the graph's lock.
type snapshot struct {
	n                  *node
	identity           objectRef
	virtual            bool
	beingDeleted       bool
	deletingDependents bool
	dependents         int
	// dependentsDeleting: some dependent is itself deleting its own.
	dependentsDeleting bool
	owners             []metav1.OwnerReference
	// blockingCount counts the dependents that block a foreground
	// deletion; dependentList holds those not deleting their own.
	blockingCount int
	dependentList []*node
}

func (c *Collector) snapshot(uid types.UID) (snapshot, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n, ok := c.uidToNode[uid]
	if !ok {
		return snapshot{}, false
	}
	s := snapshot{n: n, identity: n.identity, virtual: n.virtual, beingDeleted: n.beingDeleted, deletingDependents: n.deletingDependents,
		dependents: len(n.dependents), owners: slices.Clone(n.owners)}
	for d := range n.dependents {
		if d.deletingDependents {
			s.dependentsDeleting = true
		}
	}
	if n.deletingDependents {
		blocking := n.blockingDependents()
		s.blockingCount = len(blocking)
		for _, d := range blocking {
			if !d.deletingDependents {
				s.dependentList = append(s.dependentList, d)
			}
		}
	}
	return s, true
}

// attemptToDelete is the reconcile of the attempt-to-delete queue.
func (c *Collector) attemptToDelete(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	s, ok := c.snapshot(types.UID(req.Name))
	if !ok {
		return reconcile.Result{}, nil // no longer in the graph
	}
	err := c.attemptToDeleteItem(ctx, s)
	switch {
	case errors.Is(err, errVirtualDeleteQueued), errors.Is(err, errNamespacedOwnerOfClusterScoped):
		return reconcile.Result{}, nil
	case err != nil:
		return reconcile.Result{}, err
	case s.virtual:
		// Requeued until a monitor shows the item (otherwise a virtual
		// node for an object added and removed while a watch was down
		// could stay in the graph; kube issue 56121).
		if still, ok := c.snapshot(s.identity.UID); ok && still.virtual {
			return reconcile.Result{}, errNotObserved
		}
	}
	return reconcile.Result{}, nil
}

func (c *Collector) attemptToDeleteItem(ctx context.Context, s snapshot) error {
	if s.beingDeleted && !s.deletingDependents {
		return nil // one way to its deletion; its dependents follow then
	}
	if _, ok := c.deleted.Load(s.identity.UID); ok && !s.deletingDependents {
		return nil // deleted; the graph learns it from its monitor
	}
	latest, err := c.latest(ctx, s.identity)
	switch {
	case apierrors.IsNotFound(err):
		c.virtualDelete(s.identity)
		return errVirtualDeleteQueued
	case err != nil:
		return err
	}
	if latest.UID != s.identity.UID {
		c.virtualDelete(s.identity)
		return errVirtualDeleteQueued
	}
	if s.deletingDependents {
		return c.processDeletingDependents(ctx, s)
	}
	owners := latest.OwnerReferences
	if len(owners) == 0 {
		return nil
	}
	solid, dangling, waiting, err := c.classifyReferences(ctx, s.identity, owners)
	if err != nil {
		return err
	}
	switch {
	case len(solid) > 0:
		if len(dangling) == 0 && len(waiting) == 0 {
			return nil
		}
		// An owner remains: the references to owners gone, and to owners
		// waiting for their dependents (which would wait for ever), go.
		var uids []types.UID
		for _, r := range append(dangling, waiting...) {
			uids = append(uids, r.UID)
		}
		return c.patchOwnerReferences(ctx, s.identity, deleteOwnerRefsPatch(s.identity.UID, uids), func(refs []metav1.OwnerReference) []metav1.OwnerReference {
			return slices.DeleteFunc(refs, func(r metav1.OwnerReference) bool { return slices.Contains(uids, r.UID) })
		})
	case len(waiting) > 0 && s.dependents > 0:
		if s.dependentsDeleting {
			// A dependent deletes its own dependents in the foreground
			// too: unblock this item's references so that no cycle of
			// waiting owners forms, then delete it in the foreground.
			if err := c.patchOwnerReferences(ctx, s.identity, unblockPatch(s.identity.UID, s.owners), func(refs []metav1.OwnerReference) []metav1.OwnerReference {
				f := false
				for i := range refs {
					refs[i].BlockOwnerDeletion = &f
				}
				return refs
			}); err != nil {
				return err
			}
		}
		policy := metav1.DeletePropagationForeground
		return c.deleteObject(ctx, s.identity, latest.ResourceVersion, latest.OwnerReferences, policy)
	default:
		// No owner left: the item goes, its own finalizers choosing how
		// its dependents follow.
		policy := metav1.DeletePropagationBackground
		switch {
		case slices.Contains(latest.Finalizers, metav1.FinalizerOrphanDependents):
			policy = metav1.DeletePropagationOrphan
		case slices.Contains(latest.Finalizers, metav1.FinalizerDeleteDependents):
			policy = metav1.DeletePropagationForeground
		}
		return c.deleteObject(ctx, s.identity, latest.ResourceVersion, latest.OwnerReferences, policy)
	}
}

// processDeletingDependents handles an owner deleted in the foreground:
// once no dependent blocks it, its foregroundDeletion finalizer goes;
// until then its blocking dependents are queued.
func (c *Collector) processDeletingDependents(ctx context.Context, s snapshot) error {
	if s.blockingCount == 0 {
		return c.removeFinalizer(ctx, s.identity, metav1.FinalizerDeleteDependents)
	}
	for _, d := range s.dependentList {
		if _, done := c.deleted.Load(d.identity.UID); !done {
			c.enqueueDelete(d)
		}
	}
	return nil
}

// classifyReferences sorts an item's owner references: solid (the owner
// exists and is not waiting for its dependents), dangling (it does not
// exist) and waiting (being deleted in the foreground).
func (c *Collector) classifyReferences(ctx context.Context, item objectRef, refs []metav1.OwnerReference) (solid, dangling, waiting []metav1.OwnerReference, err error) {
	for _, r := range refs {
		isDangling, owner, err := c.isDangling(ctx, r, item)
		if err != nil {
			return nil, nil, nil, err
		}
		switch {
		case isDangling:
			dangling = append(dangling, r)
		case owner.DeletionTimestamp != nil && slices.Contains(owner.Finalizers, metav1.FinalizerDeleteDependents):
			waiting = append(waiting, r)
		default:
			solid = append(solid, r)
		}
	}
	return solid, dangling, waiting, nil
}

// isDangling reports whether a reference names an object that does not
// exist (absent, or another uid under that name), and the owner's latest
// state otherwise.
func (c *Collector) isDangling(ctx context.Context, r metav1.OwnerReference, item objectRef) (bool, *metav1.PartialObjectMetadata, error) {
	key := refOf(r, "")
	if c.absent.has(key) {
		return true, nil, nil
	}
	key.Namespace = item.Namespace
	if c.absent.has(key) {
		return true, nil, nil
	}
	info, err := c.mapping(r.APIVersion, r.Kind)
	if err != nil {
		return false, nil, err
	}
	ns := item.Namespace
	if !info.namespaced {
		key.Namespace, ns = "", ""
	} else if item.Namespace == "" {
		return false, nil, errNamespacedOwnerOfClusterScoped
	}
	// An owner the monitor shows deleting in the foreground needs no
	// request: that state is one way (a foreground deletion of thousands
	// of dependents asks once per dependent otherwise).
	if cached, ok := c.cached(info, ns, r.Name); ok && cached.UID == r.UID && cached.DeletionTimestamp != nil &&
		slices.Contains(cached.Finalizers, metav1.FinalizerDeleteDependents) {
		return false, cached, nil
	}
	owner, err := c.getMetadata(ctx, info, ns, r.Name)
	switch {
	case apierrors.IsNotFound(err):
		c.absent.add(key)
		return true, nil, nil
	case err != nil:
		return false, nil, err
	}
	if owner.UID != r.UID {
		c.absent.add(key)
		return true, nil, nil
	}
	return false, owner, nil
}

// latest returns an item's metadata: the monitor's cached copy, else the
// server's. A cached copy may be older than the server's; deletions are
// made on its resourceVersion (deleteObject), so a change since is never
// acted on blindly.
func (c *Collector) latest(ctx context.Context, id objectRef) (*metav1.PartialObjectMetadata, error) {
	info, err := c.mapping(id.APIVersion, id.Kind)
	if err != nil {
		return nil, err
	}
	ns := id.Namespace
	if !info.namespaced {
		ns = ""
	}
	if o, ok := c.cached(info, ns, id.Name); ok && o.UID == id.UID {
		return o, nil
	}
	return c.getMetadata(ctx, info, ns, id.Name)
}

// cached returns an object from the monitor of its resource.
func (c *Collector) cached(info resourceInfo, ns, name string) (*metav1.PartialObjectMetadata, bool) {
	c.resMu.RLock()
	m := c.monitors[info.gvr]
	c.resMu.RUnlock()
	if m == nil {
		return nil, false
	}
	return m.inf.Get(ns, name)
}

// virtualDelete tells the graph builder that an identity does not exist.
func (c *Collector) virtualDelete(id objectRef) {
	gv, _ := schema.ParseGroupVersion(id.APIVersion)
	c.graphChanges.Add(&event{typ: deleteEvent, virtual: true, gvk: gv.WithKind(id.Kind),
		obj: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: id.Namespace, Name: id.Name, UID: id.UID}}})
}

// attemptToOrphan is the reconcile of the attempt-to-orphan queue: the
// owner's reference is removed from every dependent, then its orphan
// finalizer.
func (c *Collector) attemptToOrphan(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	c.mu.RLock()
	n, ok := c.uidToNode[types.UID(req.Name)]
	var owner objectRef
	var deps []objectRef
	if ok {
		owner = n.identity
		for d := range n.dependents {
			deps = append(deps, d.identity)
		}
	}
	c.mu.RUnlock()
	if !ok {
		return reconcile.Result{}, nil
	}
	if err := c.orphanDependents(ctx, owner, deps); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, c.removeFinalizer(ctx, owner, metav1.FinalizerOrphanDependents)
}

// orphanDependents removes the owner's reference from its dependents,
// several at a time.
func (c *Collector) orphanDependents(ctx context.Context, owner objectRef, deps []objectRef) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex // guards errs
		errs []error
	)
	sem := make(chan struct{}, c.opts.Workers)
	for _, d := range deps {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			err := c.patchOwnerReferences(ctx, d, deleteOwnerRefsPatch(d.UID, []types.UID{owner.UID}), func(refs []metav1.OwnerReference) []metav1.OwnerReference {
				return slices.DeleteFunc(refs, func(r metav1.OwnerReference) bool { return r.UID == owner.UID })
			})
			switch {
			case err == nil:
				c.stats.orphaned.Add(1)
			case !apierrors.IsNotFound(err):
				mu.Lock()
				errs = append(errs, fmt.Errorf("orphaning %s: %w", d, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("orphaning the dependents of %s: %w", owner, errors.Join(errs...))
	}
	return nil
}

// objectPath is the URL path of an object of a resource.
func objectPath(info resourceInfo, ns, name string) string {
	p := "/apis/" + info.gvr.Group + "/" + info.gvr.Version
	if info.gvr.Group == "" {
		p = "/api/" + info.gvr.Version
	}
	if info.namespaced {
		p += "/namespaces/" + url.PathEscape(ns)
	}
	return p + "/" + info.gvr.Resource + "/" + url.PathEscape(name)
}

const metadataAccept = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"

// getMetadata reads an object's metadata from the server.
func (c *Collector) getMetadata(ctx context.Context, info resourceInfo, ns, name string) (*metav1.PartialObjectMetadata, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.client.Host()+objectPath(info, ns, name), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", metadataAccept)
	var out metav1.PartialObjectMetadata
	if err := c.client.Send(req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// deleteObject deletes an item on the resourceVersion its decision was
// made on, as kube's collector: if that fails with a conflict and the
// item's owners did not change since, it deletes on its uid alone.
func (c *Collector) deleteObject(ctx context.Context, id objectRef, rv string, owners []metav1.OwnerReference, policy metav1.DeletionPropagation) error {
	info, err := c.mapping(id.APIVersion, id.Kind)
	if err != nil {
		return err
	}
	ns := id.Namespace
	if !info.namespaced {
		ns = ""
	}
	uid := id.UID
	del := func(pre metav1.Preconditions) error {
		c.stats.attempted.Add(1)
		err := c.client.Do(ctx, http.MethodDelete, objectPath(info, ns, id.Name), "", deleteOptions(pre, policy), nil)
		switch {
		case err == nil:
			c.stats.done.Add(1)
			c.deleted.Store(uid, true)
		case apierrors.IsNotFound(err):
			c.stats.done.Add(1)
		default:
			c.stats.failed.Add(1)
		}
		return err
	}
	pre := metav1.Preconditions{UID: &uid}
	if rv != "" {
		pre.ResourceVersion = &rv
	}
	err = del(pre)
	if apierrors.IsConflict(err) && rv != "" {
		live, gerr := c.getMetadata(ctx, info, ns, id.Name)
		if gerr == nil && live.UID == uid && ownersEqual(live.OwnerReferences, owners) {
			err = del(metav1.Preconditions{UID: &uid})
		}
	}
	if apierrors.IsNotFound(err) {
		c.virtualDelete(id)
		return errVirtualDeleteQueued
	}
	return err
}

// deleteOptions is the JSON of DeleteOptions with preconditions and a
// propagation policy (one per object collected: written without
// reflection).
func deleteOptions(pre metav1.Preconditions, policy metav1.DeletionPropagation) []byte {
	b := make([]byte, 0, 192)
	b = append(b, `{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{`...)
	sep := ""
	if pre.UID != nil {
		b = append(b, `"uid":`...)
		b = jsontree.AppendString(b, string(*pre.UID))
		sep = ","
	}
	if pre.ResourceVersion != nil {
		b = append(b, sep+`"resourceVersion":`...)
		b = jsontree.AppendString(b, *pre.ResourceVersion)
	}
	b = append(b, `},"propagationPolicy":`...)
	b = jsontree.AppendString(b, string(policy))
	return append(b, '}')
}

func ownersEqual(a, b []metav1.OwnerReference) bool {
	return slices.EqualFunc(a, b, sameReference)
}

// patchOwnerReferences changes an item's owner references: a strategic
// merge patch (smp, which carries the item's uid as a precondition), or,
// for kinds that take none (custom resources: 415), a JSON merge patch of
// the whole list as edit makes it, on the item's resourceVersion.
func (c *Collector) patchOwnerReferences(ctx context.Context, id objectRef, smp []byte, edit func([]metav1.OwnerReference) []metav1.OwnerReference) error {
	info, err := c.mapping(id.APIVersion, id.Kind)
	if err != nil {
		return err
	}
	ns := id.Namespace
	if !info.namespaced {
		ns = ""
	}
	path := objectPath(info, ns, id.Name)
	err = c.client.Do(ctx, http.MethodPatch, path, "application/strategic-merge-patch+json", smp, nil)
	if !apierrors.IsUnsupportedMediaType(err) {
		return err
	}
	cur, err := c.getMetadata(ctx, info, ns, id.Name)
	if err != nil {
		return err
	}
	if cur.UID != id.UID {
		return apierrors.NewNotFound(info.gvr.GroupResource(), id.Name)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": cur.ResourceVersion,
		"ownerReferences": edit(slices.Clone(cur.OwnerReferences)),
	}})
	if err != nil {
		return err
	}
	return c.client.Do(ctx, http.MethodPatch, path, "application/merge-patch+json", patch, nil)
}

// deleteOwnerRefsPatch is the strategic merge patch that removes the
// references to owners from the object uid.
func deleteOwnerRefsPatch(uid types.UID, owners []types.UID) []byte {
	refs := make([]map[string]any, 0, len(owners))
	for _, o := range owners {
		refs = append(refs, map[string]any{"$patch": "delete", "uid": o})
	}
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": refs, "uid": uid}})
	return b
}

// unblockPatch is the strategic merge patch that unsets blockOwnerDeletion
// on an object's blocking references.
func unblockPatch(uid types.UID, owners []metav1.OwnerReference) []byte {
	f := false
	var refs []metav1.OwnerReference
	for _, o := range owners {
		if isTrue(o.BlockOwnerDeletion) {
			o.BlockOwnerDeletion = &f
			refs = append(refs, o)
		}
	}
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": refs, "uid": uid}})
	return b
}

// removeFinalizer removes a finalizer from an owner: a JSON merge patch of
// its finalizers on the resourceVersion read, retried on conflicts.
func (c *Collector) removeFinalizer(ctx context.Context, id objectRef, finalizer string) error {
	info, err := c.mapping(id.APIVersion, id.Kind)
	if err != nil {
		return err
	}
	ns := id.Namespace
	if !info.namespaced {
		ns = ""
	}
	for range 5 {
		cur, err := c.getMetadata(ctx, info, ns, id.Name)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("finalizing %s: %w", id, err)
		}
		if cur.UID != id.UID || !slices.Contains(cur.Finalizers, finalizer) {
			return nil
		}
		rest := slices.DeleteFunc(slices.Clone(cur.Finalizers), func(f string) bool { return f == finalizer })
		var fs any = rest
		if len(rest) == 0 {
			fs = nil
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": cur.ResourceVersion, "finalizers": fs}})
		if err != nil {
			return err
		}
		err = c.client.Do(ctx, http.MethodPatch, objectPath(info, ns, id.Name), "application/merge-patch+json", patch, nil)
		switch {
		case err == nil:
			c.stats.finalizers.Add(1)
			return nil
		case apierrors.IsNotFound(err):
			return nil
		case !apierrors.IsConflict(err):
			return err
		}
	}
	return fmt.Errorf("finalizing %s: conflicts on every try; retried later", id)
}

// reportInvalidNamespaceOwnerRef records a Warning event on a dependent
// whose owner reference names an object of another namespace. c.mu is
// held; the event is sent by the event loop.
func (c *Collector) reportInvalidNamespaceOwnerRef(n *node, ownerUID types.UID) {
	i := slices.IndexFunc(n.owners, func(o metav1.OwnerReference) bool { return o.UID == ownerUID })
	if i < 0 {
		return
	}
	o := n.owners[i]
	invalid := objectRef{APIVersion: o.APIVersion, Kind: o.Kind, Name: o.Name, UID: o.UID, Namespace: n.identity.Namespace}
	now := metav1.NewTime(time.Now())
	ns := n.identity.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	ev := corev1.Event{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", n.identity.Name, now.UnixNano()), Namespace: ns},
		InvolvedObject: corev1.ObjectReference{Kind: n.identity.Kind, APIVersion: n.identity.APIVersion, Namespace: n.identity.Namespace,
			Name: n.identity.Name, UID: n.identity.UID},
		Reason:              "OwnerRefInvalidNamespace",
		Message:             fmt.Sprintf("ownerRef %s does not exist in namespace %q", invalid, n.identity.Namespace),
		Source:              corev1.EventSource{Component: "garbage-collector-controller"},
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
		Type:                corev1.EventTypeWarning,
		ReportingController: "garbage-collector-controller",
	}
	select {
	case c.events <- ev:
	default:
		c.opts.Logger.Warn("garbage collector: event dropped (too many pending)", "reason", ev.Reason, "object", n.identity.String())
	}
}

// runEvents sends the recorded events until ctx is cancelled.
func (c *Collector) runEvents(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-c.events:
			if err := c.client.Do(ctx, http.MethodPost, "/api/v1/namespaces/"+ev.Namespace+"/events", "", ev, nil); err != nil && ctx.Err() == nil {
				c.opts.Logger.Warn("garbage collector: recording an event", "reason", ev.Reason, "err", err)
			}
		}
	}
}
