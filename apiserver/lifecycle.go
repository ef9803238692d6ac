package apiserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kloop.dev/kloop/apiserver/internal/jsontree"
	"kloop.dev/kloop/apiserver/storage"
)

// What kube-apiserver's controllers do around writes, done synchronously
// here: serving CRDs, and the deletion of namespaces and CRDs with their
// content. What differs by kind are the kind's hooks (see kind), set where
// the kind is declared; this is where the write path calls them.

// admitCreate runs admission before a create is stored: a custom resource
// of a terminating CRD is refused, then the kind's admit hook runs.
func (s *Server) admitCreate(k *kind, obj map[string]any) error {
	if k.crd != nil && k.crd.terminating {
		return apierrors.NewForbidden(k.groupResource(), jsontree.Str(obj, "metadata", "name"), errors.New("create not allowed while custom resource definition is terminating"))
	}
	if k.admit != nil {
		return k.admit(s, obj)
	}
	return nil
}

// undoAdmission releases what admitCreate reserved for an object that is not
// (or no longer) stored.
func (s *Server) undoAdmission(k *kind, obj map[string]any) {
	if k.releaseAdmitted != nil {
		k.releaseAdmitted(s, obj)
	}
}

// afterWrite runs after an object was created or updated (old is nil on create).
func (s *Server) afterWrite(k *kind, old, o *storage.Object) {
	if k.afterWrite != nil {
		k.afterWrite(s, o)
	}
}

// afterDelete runs after an object left the store: the kind's hook, then
// the end of a terminating namespace or CRD that waited for the object.
func (s *Server) afterDelete(k *kind, o *storage.Object) {
	if k.afterDelete != nil {
		k.afterDelete(s, o)
	}
	switch {
	case k.namespaced:
		if ns, err := s.store.Get("/namespaces", "", o.Namespace); err == nil && terminating(ns) {
			s.finalizeNamespace(o.Namespace)
		}
	}
	if k.crd != nil {
		if crd, err := s.store.Get(crdGVR.Group+"/"+crdGVR.Resource, "", k.crd.crdName); err == nil && terminating(crd) {
			s.finalizeCRD(k.crd.crdName)
		}
	}
}

// terminating reports whether a stored object has a deletionTimestamp. It
// reads the bytes without decoding the whole object.
func terminating(o *storage.Object) bool {
	var m struct {
		Metadata struct {
			DeletionTimestamp *string `json:"deletionTimestamp"`
		} `json:"metadata"`
	}
	return json.Unmarshal(o.Data, &m) == nil && m.Metadata.DeletionTimestamp != nil
}

// namespacedStorage returns one kind per namespaced storage resource,
// preferring kinds served in their stored form.
func (s *Server) namespacedStorage() []*kind {
	seen := map[string]int{}
	var out []*kind
	for _, k := range s.reg.all() {
		if !k.namespaced {
			continue
		}
		if i, ok := seen[k.storageResource]; ok {
			if !out[i].sameStorageForm() && k.sameStorageForm() {
				out[i] = k
			}
			continue
		}
		seen[k.storageResource] = len(out)
		out = append(out, k)
	}
	return out
}

// namespaceEmpty reports whether no object is left in a namespace.
func (s *Server) namespaceEmpty(ns string) bool {
	for _, k := range s.namespacedStorage() {
		res, err := s.store.List(k.storageResource, storage.ListOptions{Namespace: ns, Limit: 1})
		if err != nil || len(res.Objects) > 0 {
			return false
		}
	}
	return true
}

// deleteNamespaceContent deletes every object of a terminating namespace
// as kube's namespace controller does (each resource's content, with the
// Background propagation policy), then records what remains in the
// namespace's conditions, or deletes it if nothing is left (objects with
// finalizers may stay; the last of them to go finishes it, afterDelete).
func (s *Server) deleteNamespaceContent(ns string) {
	s.emptying.Store(ns, true) // afterDelete waits for the end of the pass
	background := metav1.DeletePropagationBackground
	for _, k := range s.namespacedStorage() {
		res, err := s.store.List(k.storageResource, storage.ListOptions{Namespace: ns})
		if err != nil {
			continue
		}
		for _, o := range res.Objects {
			if _, _, err := s.delete(k, o.Namespace, o.Name, metav1.DeleteOptions{PropagationPolicy: &background}); err != nil && !apierrors.IsNotFound(err) {
				s.opts.Logger.Error("apiserver: deleting namespace content", "namespace", ns, "resource", k.gvr.String(), "name", o.Name, "err", err)
			}
		}
	}
	s.emptying.Delete(ns)
	if byResource, byFinalizer := s.namespaceContent(ns); len(byResource) > 0 {
		s.setNamespaceConditions(ns, byResource, byFinalizer)
		return
	}
	s.finalizeNamespace(ns)
}

// finalizeNamespace deletes a terminating namespace once it is empty, its
// conditions saying so first, as kube's namespace controller's last pass.
func (s *Server) finalizeNamespace(ns string) {
	if _, busy := s.emptying.Load(ns); busy || !s.namespaceEmpty(ns) {
		return
	}
	s.setNamespaceConditions(ns, nil, nil)
	if _, _, err := s.delete(s.reg.get(namespaceGVR), "", ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		s.opts.Logger.Error("apiserver: finalizing a namespace", "namespace", ns, "err", err)
	}
}

// namespaceContent counts the objects left in a namespace, by resource
// ("configmaps.", "deployments.apps") and by finalizer.
func (s *Server) namespaceContent(ns string) (byResource, byFinalizer map[string]int) {
	byResource, byFinalizer = map[string]int{}, map[string]int{}
	for _, k := range s.namespacedStorage() {
		res, err := s.store.List(k.storageResource, storage.ListOptions{Namespace: ns})
		if err != nil || len(res.Objects) == 0 {
			continue
		}
		byResource[k.gvr.Resource+"."+k.gvr.Group] += len(res.Objects)
		for _, o := range res.Objects {
			var m struct {
				Metadata struct {
					Finalizers []string `json:"finalizers"`
				} `json:"metadata"`
			}
			if json.Unmarshal(o.Data, &m) == nil {
				for _, f := range m.Metadata.Finalizers {
					byFinalizer[f]++
				}
			}
		}
	}
	return byResource, byFinalizer
}

// setNamespaceConditions records in a terminating namespace's
// status.conditions what kube's namespace controller records there, with
// its texts: content deleted, and what remains of it and of its
// finalizers. A condition keeps its lastTransitionTime while its status
// does not change. The write is the namespace controller's (the manager
// kube-controller-manager, on the status subresource).
func (s *Server) setNamespaceConditions(ns string, byResource, byFinalizer map[string]int) {
	k := s.reg.get(namespaceGVR)
	var before *storage.Object
	o, _, err := s.store.Write(k.storageResource, "", ns, func(cur *storage.Object) (storage.EncodeFunc, bool, error) {
		before = cur
		old, err := decodeMap(cur.Data)
		if err != nil {
			return nil, false, err
		}
		obj, err := decodeMap(cur.Data)
		if err != nil {
			return nil, false, err
		}
		if jsontree.Str(obj, "metadata", "deletionTimestamp") == "" {
			return nil, false, nil
		}
		conds, _ := jsontree.Get(obj, "status", "conditions").([]any)
		next, changed := namespaceConditions(conds, byResource, byFinalizer, metav1.NewTime(s.opts.Now()).UTC().Format(time.RFC3339))
		if !changed {
			return nil, false, nil
		}
		jsontree.Set(obj, next, "status", "conditions")
		if obj, err = s.updateManagedFields(k, "status", obj, old, controllerManagerName); err != nil {
			return nil, false, err
		}
		return k.encoder(obj), false, nil
	})
	if err != nil {
		if !errors.Is(err, storage.ErrNotFound) {
			s.opts.Logger.Error("apiserver: namespace conditions", "namespace", ns, "err", err)
		}
		return
	}
	if o != before {
		s.afterWrite(k, before, o)
	}
}

// controllerManagerName is the field manager of kube-controller-manager's
// writes.
const controllerManagerName = "kube-controller-manager"

// namespaceConditions returns conds updated as kube's namespace controller
// updates them for the content left (its five condition types, in its
// order), and whether anything changed.
func namespaceConditions(conds []any, byResource, byFinalizer map[string]int, now string) ([]any, bool) {
	type cond struct{ typ, status, reason, message string }
	want := []cond{
		{"NamespaceDeletionDiscoveryFailure", "False", "ResourcesDiscovered", "All resources successfully discovered"},
		{"NamespaceDeletionGroupVersionParsingFailure", "False", "ParsedGroupVersions", "All legacy kube types successfully parsed"},
		{"NamespaceDeletionContentFailure", "False", "ContentDeleted", "All content successfully deleted, may be waiting on finalization"},
		{"NamespaceContentRemaining", "False", "ContentRemoved", "All content successfully removed"},
		{"NamespaceFinalizersRemaining", "False", "ContentHasNoFinalizers", "All content-preserving finalizers finished"},
	}
	if len(byResource) > 0 {
		var parts []string
		for r, n := range byResource {
			parts = append(parts, fmt.Sprintf("%s has %d resource instances", r, n))
		}
		sort.Strings(parts)
		want[3] = cond{"NamespaceContentRemaining", "True", "SomeResourcesRemain", "Some resources are remaining: " + strings.Join(parts, ", ")}
	}
	if len(byFinalizer) > 0 {
		var parts []string
		for f, n := range byFinalizer {
			parts = append(parts, fmt.Sprintf("%s in %d resource instances", f, n))
		}
		sort.Strings(parts)
		want[4] = cond{"NamespaceFinalizersRemaining", "True", "SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: " + strings.Join(parts, ", ")}
	}
	out := slices.Clone(conds)
	changed := false
	for _, w := range want {
		i := slices.IndexFunc(out, func(c any) bool { m, _ := c.(map[string]any); return m["type"] == w.typ })
		if i < 0 {
			out = append(out, map[string]any{"type": w.typ, "status": w.status, "lastTransitionTime": now, "reason": w.reason, "message": w.message})
			changed = true
			continue
		}
		m, _ := out[i].(map[string]any)
		if m["status"] == w.status && m["reason"] == w.reason && m["message"] == w.message {
			continue
		}
		c := maps.Clone(m)
		if c["status"] != w.status {
			c["lastTransitionTime"] = now
		}
		c["status"], c["reason"], c["message"] = w.status, w.reason, w.message
		out[i] = c
		changed = true
	}
	return out, changed
}
