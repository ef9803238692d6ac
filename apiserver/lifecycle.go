package apiserver

import (
	"encoding/json"
	"errors"

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

// deleteNamespaceContent deletes every object of a terminating namespace,
// then the namespace if nothing is left (objects with finalizers may stay).
func (s *Server) deleteNamespaceContent(ns string) {
	for _, k := range s.namespacedStorage() {
		res, err := s.store.List(k.storageResource, storage.ListOptions{Namespace: ns})
		if err != nil {
			continue
		}
		for _, o := range res.Objects {
			if _, _, err := s.delete(k, o.Namespace, o.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				s.opts.Logger.Error("apiserver: deleting namespace content", "namespace", ns, "resource", k.gvr.String(), "name", o.Name, "err", err)
			}
		}
	}
	s.finalizeNamespace(ns)
}

// finalizeNamespace deletes a terminating namespace once it is empty.
func (s *Server) finalizeNamespace(ns string) {
	if !s.namespaceEmpty(ns) {
		return
	}
	if _, _, err := s.delete(s.reg.get(namespaceGVR), "", ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		s.opts.Logger.Error("apiserver: finalizing a namespace", "namespace", ns, "err", err)
	}
}
