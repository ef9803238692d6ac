package apiserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"kloop.dev/kloop/apiserver/internal/jsontree"
	"kloop.dev/kloop/apiserver/storage"
)

func (s *Server) serveUpdate(w http.ResponseWriter, r *http.Request, k *kind, ri requestInfo, q url.Values) (err error) {
	wo, body, err := s.writeRequest(r, k, q, "Update")
	defer warnOnError(w, wo, &err)
	if err != nil {
		return err
	}
	if ri.subresource == "scale" {
		return s.updateScale(w, k, ri.namespace, ri.name, body, nil, wo)
	}
	obj, err := s.decodeStored(k, body, wo)
	if err != nil {
		return err
	}
	if err := checkURLName(k, ri, obj); err != nil {
		return err
	}
	o, err := s.update(k, ri, wo, func(*storage.Object) (map[string]any, error) {
		if obj != nil { // the first attempt takes the decoded body as it is
			next := obj
			obj = nil
			return next, nil
		}
		// Another attempt (the object changed meanwhile) starts again from
		// the body: the first one changed obj.
		return s.decodeStored(k, body, wo)
	})
	if err != nil {
		return err
	}
	return s.respond(w, k, o, http.StatusOK, wo)
}

// update writes a new state computed by next (stored form) from the current
// stored object, with kube-apiserver's update rules for the main resource or
// the status subresource. next may run more than once.
func (s *Server) update(k *kind, ri requestInfo, wo *writeOpts, next func(cur *storage.Object) (map[string]any, error)) (*storage.Object, error) {
	if err := k.checkKey(ri.namespace, ri.name); err != nil {
		return nil, err
	}
	var dryResult *storage.Object
	var oldObj *storage.Object
	var written map[string]any // the state encoded by the last attempt
	o, deleted, err := s.store.Write(k.storageResource, ri.namespace, ri.name, func(cur *storage.Object) (storage.EncodeFunc, bool, error) {
		oldObj = cur
		obj, err := next(cur)
		if err != nil {
			return nil, false, err
		}
		old, ok := s.decoded.get(cur) // read-only
		if !ok {
			if old, err = decodeMap(cur.Data); err != nil {
				return nil, false, fmt.Errorf("decoding stored object: %w", err)
			}
		}
		if err := s.checkWrite(k, wo, ri.namespace, obj, old); err != nil {
			return nil, false, err
		}
		obj, changed, del, err := s.prepareUpdate(k, ri, obj, old, cur, wo)
		if err != nil || !changed {
			return nil, false, err
		}
		if wo.dryRun {
			dryResult, err = k.encoder(obj)(cur.ResourceVersion)
			return nil, false, err
		}
		written = obj
		return k.encoder(obj), del, nil
	})
	if err != nil {
		return nil, err
	}
	if dryResult != nil {
		return dryResult, nil
	}
	if o != oldObj { // written
		if !deleted {
			s.decoded.put(o, written)
		}
		s.afterWrite(k, oldObj, o)
		if deleted {
			s.afterDelete(k, o)
			// kube-apiserver answers an update that ends a deletion (the
			// last finalizer removed) with the new state at the revision
			// it replaced.
			m, err := decodeMap(o.Data)
			if err != nil {
				return nil, fmt.Errorf("decoding stored object: %w", err)
			}
			meta(m)["resourceVersion"] = formatRV(oldObj.ResourceVersion)
			resp := *o
			if resp.Data, err = json.Marshal(m); err != nil {
				return nil, err
			}
			resp.ResourceVersion = oldObj.ResourceVersion
			return &resp, nil
		}
	}
	return o, nil
}

// prepareUpdate applies the update rules to obj (the requested new state,
// stored form) given the current state old, which it does not modify (it
// may be shared: see decodedCache). It reports whether anything
// changed and whether the object is now deleted (finalizers emptied while
// deleting).
func (s *Server) prepareUpdate(k *kind, ri requestInfo, obj, old map[string]any, cur *storage.Object, wo *writeOpts) (map[string]any, bool, bool, error) {
	u, oldU := &unstructured.Unstructured{Object: obj}, &unstructured.Unstructured{Object: old}
	gr := k.groupResource()
	if name := u.GetName(); name != ri.name {
		return nil, false, false, badRequest("the name of the object (%s) does not match the name on the URL (%s)", name, ri.name)
	}
	if k.namespaced {
		switch ns := u.GetNamespace(); {
		case ns == "":
			u.SetNamespace(ri.namespace)
		case ns != ri.namespace:
			return nil, false, false, badRequest("the namespace of the provided object does not match the namespace sent on the request")
		}
	} else {
		delete(meta(obj), "namespace")
	}
	if u.GetResourceVersion() == "" && k.requireResourceVersion {
		// Leases, CRDs and custom resources take no unconditional update.
		return nil, false, false, apierrors.NewInvalid(schema.GroupKind{Group: k.gvr.Group, Kind: k.gvr.Resource}, ri.name,
			field.ErrorList{field.Invalid(field.NewPath("metadata", "resourceVersion"), 0, "must be specified for an update")})
	}
	if rv := u.GetResourceVersion(); rv != "" {
		if _, err := strconv.ParseUint(rv, 10, 64); err != nil {
			return nil, false, false, serverError(err) // kube-apiserver's storage answers 500
		}
	}
	if rv := u.GetResourceVersion(); rv != "" && rv != formatRV(cur.ResourceVersion) {
		return nil, false, false, apierrors.NewConflict(gr, ri.name, errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	}
	switch {
	case ri.subresource == "status" && k.crd != nil:
		// Custom resources: only the status changes.
		next := runtime.DeepCopyJSON(old)
		if st, ok := obj["status"]; ok {
			next["status"] = st
		} else {
			delete(next, "status")
		}
		if wo.applied { // the managers the apply recorded
			if mf, ok := meta(obj)["managedFields"]; ok {
				meta(next)["managedFields"] = mf
			} else {
				delete(meta(next), "managedFields")
			}
		}
		obj = next
		u = &unstructured.Unstructured{Object: obj}
	case ri.subresource == "status" || ri.subresource == "approval":
		// Built-ins: the spec (everything but metadata and status) stays;
		// metadata follows the update rules, except what the kind's status
		// strategy keeps (kube-apiserver's PrepareForUpdate).
		for key, v := range old {
			if key != "metadata" && key != "status" {
				obj[key] = runtime.DeepCopyJSONValue(v)
			}
		}
		for key := range obj {
			if _, ok := old[key]; !ok && key != "metadata" && key != "status" {
				delete(obj, key)
			}
		}
		m, om := meta(obj), meta(old)
		for _, f := range k.statusKeepsMeta {
			if v, ok := om[f]; ok {
				m[f] = runtime.DeepCopyJSONValue(v)
			} else {
				delete(m, f)
			}
		}
	case k.status && ri.subresource != "binding": // a pod's binding writes its status (podsubresources.go)
		// The main resource ignores the status.
		if st, ok := old["status"]; ok {
			obj["status"] = runtime.DeepCopyJSONValue(st)
		} else {
			delete(obj, "status")
		}
	}
	if k.subresourceUpdate != nil {
		k.subresourceUpdate(ri.subresource, obj, old, s.opts.Now())
	}
	m, om := meta(obj), meta(old)
	if u.GetUID() == "" {
		m["uid"] = om["uid"]
	}
	for _, f := range []string{"creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"} {
		if v, ok := om[f]; ok {
			m[f] = runtime.DeepCopyJSONValue(v) // old is read-only
		} else {
			delete(m, f)
		}
	}
	delete(m, "selfLink")
	if k.crd != nil {
		unknown, err := k.crd.checked().schema.decode(obj)
		if err != nil {
			return nil, false, false, crDecodeError(k, err)
		}
		if err := wo.unknownFields(k, unknownFieldMessages(unknown)); err != nil {
			return nil, false, false, err
		}
	}
	if k.normalize != nil {
		var err error
		if obj, err = k.normalize(obj); err != nil {
			return nil, false, false, err
		}
		u.Object = obj
		m = meta(obj)
	}
	m["resourceVersion"] = om["resourceVersion"]
	if !wo.applied {
		// After decoding's work (defaults, pruning, conversion) and
		// before the strategy's, as kube-apiserver's field manager sees
		// the object.
		obj = s.manageFields(k, ri.subresource, obj, old, wo)
		u.Object, m = obj, meta(obj)
	}
	// Mutating admission webhooks, after the field manager (admission.go).
	obj, err := s.mutateWrite(k, ri.subresource, obj, old, wo)
	if err != nil {
		return nil, false, false, err
	}
	u.Object, m = obj, meta(obj)
	if k.stored != nil {
		k.stored(obj)
	}
	if k.carryOver != nil {
		k.carryOver(obj, old)
	}
	if err := s.validate(k, u, oldU, ri.subresource); err != nil {
		return nil, false, false, err
	}
	if k.admitUpdate != nil && ri.subresource == "" {
		if err := k.admitUpdate(s, obj, old); err != nil {
			return nil, false, false, err
		}
	}
	if ri.subresource == "" {
		wo.strategyWarnings(k, obj, old)
	}
	if _, ok := om["generation"]; ok && !k.fixedGeneration && ri.subresource != "binding" && (specChanged(k, obj, old) ||
		k.annotationsMoveGeneration && ri.subresource == "" && !jsontree.Equal(m["annotations"], om["annotations"]) ||
		k.labelsMoveGeneration && !jsontree.Equal(m["labels"], om["labels"])) {
		m["generation"] = jsontree.Int(old, "metadata", "generation") + 1
	}
	if err := s.validateWrite(k, ri.subresource, obj, old, wo); err != nil {
		return nil, false, false, err
	}
	if jsontree.Equal(obj, old) {
		return obj, false, false, nil
	}
	del := u.GetDeletionTimestamp() != nil && len(u.GetFinalizers()) == 0
	if del && k.waitsForContent != nil && k.waitsForContent(s, ri.name) {
		del = false // a terminating namespace goes once its content is gone
	}
	return obj, true, del, nil
}

// specChanged reports whether anything outside metadata (and status, when it
// is a subresource) differs.
func specChanged(k *kind, obj, old map[string]any) bool {
	for key, v := range obj {
		if key == "metadata" || (k.status && key == "status") {
			continue
		}
		if ov, ok := old[key]; !ok || !jsontree.Equal(v, ov) {
			return true
		}
	}
	for key := range old {
		if key == "metadata" || (k.status && key == "status") {
			continue
		}
		if _, ok := obj[key]; !ok {
			return true
		}
	}
	return false
}
