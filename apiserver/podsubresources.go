package apiserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"kloop.dev/kloop/apiserver/internal/jsontree"
	"kloop.dev/kloop/apiserver/storage"
)

// The pods' eviction and binding subresources, as kube-apiserver serves
// them to drain tools and schedulers: POST of a policy/v1 Eviction (the pod
// deleted with the Eviction's deleteOptions; no PodDisruptionBudget is
// served to refuse it) and of a v1 Binding (the pod bound to a node once:
// spec.nodeName, the Binding's annotations, condition PodScheduled).
// Both answer 201 with a Success Status.

// servePodSubresourceWrite serves POST pods/{name}/eviction and /binding.
func (s *Server) servePodSubresourceWrite(w http.ResponseWriter, r *http.Request, k *kind, ri requestInfo) error {
	if r.Method != http.MethodPost {
		return methodNotAllowed()
	}
	body, _, err := s.readObjectBody(r, map[string]string{"eviction": "Eviction", "binding": "Binding"}[ri.subresource])
	if err != nil {
		return err
	}
	obj, err := decodeMap(body)
	if err != nil {
		return badRequest("%v", err)
	}
	want := map[string]schema.GroupVersionKind{
		"eviction": {Group: "policy", Version: "v1", Kind: "Eviction"},
		"binding":  {Version: "v1", Kind: "Binding"},
	}[ri.subresource]
	av, kd := jsontree.Str(obj, "apiVersion"), jsontree.Str(obj, "kind")
	gv, err := schema.ParseGroupVersion(av)
	if err != nil {
		return badRequest("%v", err)
	}
	okVersion := gv == want.GroupVersion() || (ri.subresource == "eviction" && gv == schema.GroupVersion{Group: "policy", Version: "v1beta1"})
	if av != "" && kd != "" && (!okVersion || kd != want.Kind) {
		return badRequest("%s in version %q cannot be handled as a %s: converting (%s.%s) to (%s.%s): unknown conversion",
			kd, gv.Version, want.Kind, gv.Version, kd, internalPackage(want.Group), want.Kind)
	}
	if ri.subresource == "eviction" {
		return s.evict(w, k, ri, obj)
	}
	return s.bind(w, k, ri, obj)
}

// created is the 201 Success Status of an eviction or a binding.
func created(w http.ResponseWriter) {
	writeObject(w, http.StatusCreated, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess, Code: http.StatusCreated})
}

func (s *Server) evict(w http.ResponseWriter, k *kind, ri requestInfo, obj map[string]any) error {
	if jsontree.Str(obj, "metadata", "name") != ri.name {
		return badRequest("name in URL does not match name in Eviction object")
	}
	if _, err := s.store.Get(k.storageResource, ri.namespace, ri.name); err != nil {
		return err
	}
	var opts metav1.DeleteOptions
	if do, ok := obj["deleteOptions"].(map[string]any); ok {
		b, err := json.Marshal(do)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &opts); err != nil {
			return badRequest("deleteOptions: %v", err)
		}
	}
	if _, _, err := s.delete(k, ri.namespace, ri.name, opts); err != nil {
		return err
	}
	created(w)
	return nil
}

func (s *Server) bind(w http.ResponseWriter, k *kind, ri requestInfo, obj map[string]any) error {
	node := jsontree.Str(obj, "target", "name")
	if node == "" {
		// kube-apiserver's binding storage answers its validation with a 500.
		return serverError(field.Required(field.NewPath("target", "name"), ""))
	}
	if kd := jsontree.Str(obj, "target", "kind"); kd != "" && kd != "Node" {
		return serverError(field.NotSupported(field.NewPath("target", "kind"), kd, []string{"Node", "<empty>"}))
	}
	if name := jsontree.Str(obj, "metadata", "name"); name != "" && name != ri.name {
		return badRequest("name in URL does not match name in Binding object")
	}
	annotations, _ := jsontree.Get(obj, "metadata", "annotations").(map[string]any)
	now := s.opts.Now().UTC().Truncate(time.Second).Format(time.RFC3339)
	// kube-apiserver's binding storage writes the pod as it is (no update
	// strategy: the generation stays, the status is the binding's).
	_, err := s.update(k, ri, &writeOpts{}, func(cur *storage.Object) (map[string]any, error) {
		pod, err := decodeMap(cur.Data)
		if err != nil {
			return nil, err
		}
		if jsontree.Get(pod, "metadata", "deletionTimestamp") != nil {
			return nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods/binding"}, ri.name, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", ri.name))
		}
		if cur := jsontree.Str(pod, "spec", "nodeName"); cur != "" {
			return nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods/binding"}, ri.name, fmt.Errorf("pod %s is already assigned to node %q", ri.name, cur))
		}
		jsontree.Set(pod, node, "spec", "nodeName")
		if len(annotations) > 0 {
			m := meta(pod)
			a, _ := m["annotations"].(map[string]any)
			if a == nil {
				a = map[string]any{}
			}
			for key, v := range annotations {
				a[key] = v
			}
			m["annotations"] = a
		}
		st, _ := pod["status"].(map[string]any)
		if st == nil {
			st = map[string]any{}
			pod["status"] = st
		}
		conds, _ := st["conditions"].([]any)
		cond := map[string]any{"type": "PodScheduled", "status": "True", "lastProbeTime": nil, "lastTransitionTime": now}
		replaced := false
		for i, c := range conds {
			if cm, ok := c.(map[string]any); ok && cm["type"] == "PodScheduled" {
				conds[i], replaced = cond, true
			}
		}
		if !replaced {
			conds = append(conds, cond)
		}
		st["conditions"] = conds
		return pod, nil
	})
	if err != nil {
		return err
	}
	created(w)
	return nil
}
