package apiserver

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"kloop.dev/kloop/apiserver/internal/jsontree"
	"kloop.dev/kloop/apiserver/storage"
)

// scaleOf builds the autoscaling/v1 Scale view of a stored object.
func scaleOf(k *kind, obj map[string]any) (*autoscalingv1.Scale, error) {
	sc := &autoscalingv1.Scale{TypeMeta: metav1.TypeMeta{Kind: "Scale", APIVersion: "autoscaling/v1"}}
	sc.Name = jsontree.Str(obj, "metadata", "name")
	sc.Namespace = jsontree.Str(obj, "metadata", "namespace")
	sc.UID = types.UID(jsontree.Str(obj, "metadata", "uid"))
	sc.ResourceVersion = jsontree.Str(obj, "metadata", "resourceVersion")
	if t, err := parseTime(jsontree.Str(obj, "metadata", "creationTimestamp")); err == nil {
		sc.CreationTimestamp = t
	}
	sc.Spec.Replicas = int32(jsontree.Int(obj, k.scale.specReplicas...))
	sc.Status.Replicas = int32(jsontree.Int(obj, k.scale.statusReplicas...))
	if len(k.scale.selector) > 0 {
		if k.scale.selectorString {
			sc.Status.Selector = jsontree.Str(obj, k.scale.selector...)
		} else if m, ok := jsontree.Get(obj, k.scale.selector...).(map[string]any); ok && k.scale.selectorMap {
			set := labels.Set{}
			for key, v := range m {
				set[key], _ = v.(string)
			}
			sc.Status.Selector = labels.SelectorFromSet(set).String()
		} else if sel, ok := jsontree.Get(obj, k.scale.selector...).(map[string]any); ok {
			ls := &metav1.LabelSelector{}
			if err := fromMap(sel, ls); err == nil {
				if s, err := metav1.LabelSelectorAsSelector(ls); err == nil {
					sc.Status.Selector = s.String()
				}
			}
		}
	}
	return sc, nil
}

func parseTime(s string) (metav1.Time, error) {
	var t metav1.Time
	err := t.UnmarshalQueryParameter(s)
	return t, err
}

func (s *Server) getScale(w http.ResponseWriter, k *kind, ns, name string) error {
	if err := k.checkKey(ns, name); err != nil {
		return err
	}
	o, err := s.store.Get(k.storageResource, ns, name)
	if err != nil {
		return err
	}
	return writeScale(w, k, o, func(err error) error { return err })
}

// writeScale answers with the Scale of o (stored); wrap wraps an error of
// reading it.
func writeScale(w http.ResponseWriter, k *kind, o *storage.Object, wrap func(error) error) error {
	obj, err := decodeMap(o.Data)
	if err != nil {
		return err
	}
	sc, err := scaleOf(k, obj)
	if err != nil {
		return wrap(err)
	}
	writeObject(w, http.StatusOK, sc)
	return nil
}

// updateScale serves PUT (pt nil) and PATCH of /scale: it sets the replicas
// of the object.
func (s *Server) updateScale(w http.ResponseWriter, k *kind, ns, name string, body []byte, pt *types.PatchType, wo *writeOpts) error {
	ri := requestInfo{gv: k.gvr.GroupVersion(), resource: k.gvr.Resource, namespace: ns, name: name, subresource: "scale"}
	switch {
	case pt == nil && k.crd == nil:
		// A PUT's body is decoded and named before the object is read, with
		// kube-apiserver's errors for built-ins.
		if err := checkScaleBody(body, name); err != nil {
			return err
		}
	case pt == nil:
		// kube-apiserver's custom resource scale decoder has one answer for
		// a body that is not an autoscaling/v1 Scale.
		var sc autoscalingv1.Scale
		err := json.Unmarshal(body, &sc)
		if err != nil || sc.APIVersion != "" && sc.APIVersion != "autoscaling/v1" || sc.Kind != "" && sc.Kind != "Scale" {
			return badRequest("no kind is registered for the type v1.Scale in scheme \"pkg/runtime/scheme.go:111\"")
		}
	}
	isApply := pt != nil && *pt == types.ApplyYAMLPatchType
	var applied map[string]any
	if isApply {
		var err error
		if applied, err = decodeApplyPatch(body); err != nil {
			return err
		}
	}
	// The parent's managedFields follow the Scale's (manageScaleFields),
	// not the parent's field manager.
	wo.applied = true
	o, err := s.update(k, ri, wo, func(cur *storage.Object) (map[string]any, error) {
		obj, err := decodeMap(cur.Data)
		if err != nil {
			return nil, err
		}
		cs, err := scaleOf(k, obj)
		if err != nil {
			return nil, err
		}
		doc, err := json.Marshal(cs)
		if err != nil {
			return nil, err
		}
		in := body
		switch {
		case isApply:
			oldScale, err := decodeMap(doc)
			if err != nil {
				return nil, err
			}
			merged, err := s.manageScaleFields(k, obj, oldScale, runtime.DeepCopyJSON(applied), true, wo)
			if err != nil {
				return nil, err
			}
			if in, err = json.Marshal(merged); err != nil {
				return nil, err
			}
		case pt != nil:
			if in, err = applyPatch(*pt, doc, body, func() any { return &autoscalingv1.Scale{} }); err != nil {
				return nil, err
			}
		}
		if !isApply && wo.manage {
			oldScale, err1 := decodeMap(doc)
			newScale, err2 := decodeMap(in)
			if err1 == nil && err2 == nil {
				if _, err := s.manageScaleFields(k, obj, oldScale, newScale, false, wo); err != nil {
					return nil, err
				}
			}
		}
		var sc autoscalingv1.Scale
		if err := json.Unmarshal(in, &sc); err != nil {
			return nil, badRequest("the body of the request was in an unknown format: %v", err)
		}
		if sc.Kind != "" && sc.Kind != "Scale" {
			return nil, badRequest("the kind in the data (%s) does not match the expected kind (Scale)", sc.Kind)
		}
		if sc.Name != "" && sc.Name != name {
			return nil, badRequest("the name of the object (%s) does not match the name on the URL (%s)", sc.Name, name)
		}
		if sc.Spec.Replicas < 0 && k.crd == nil { // a custom resource validates its replicas itself
			return nil, apierrors.NewInvalid(autoscalingv1.SchemeGroupVersion.WithKind("Scale").GroupKind(), name,
				field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), sc.Spec.Replicas, "must be greater than or equal to 0")})
		}
		jsontree.Set(obj, int64(sc.Spec.Replicas), k.scale.specReplicas...)
		m := meta(obj)
		if sc.ResourceVersion != "" {
			m["resourceVersion"] = sc.ResourceVersion // a precondition, checked by update
		}
		return obj, nil
	})
	if err != nil {
		return err
	}
	return writeScale(w, k, o, func(err error) error { return fmt.Errorf("scale of %s: %w", name, err) })
}

var scaleGVK = autoscalingv1.SchemeGroupVersion.WithKind("Scale")

// checkScaleBody checks the body of a PUT to the /scale of a built-in kind
// as kube-apiserver decodes it: an autoscaling/v1 Scale (apiVersion and
// kind default to it), which names the object.
func checkScaleBody(body []byte, name string) error {
	var tm metav1.TypeMeta
	if err := json.Unmarshal(body, &tm); err != nil {
		return badRequest("the object provided is unrecognized (must be of type Scale): couldn't get version/kind; json parse error: %v (%s)", err, summarizeData(body, 30))
	}
	gvk := scaleGVK
	if tm.APIVersion != "" {
		gv, err := schema.ParseGroupVersion(tm.APIVersion)
		if err != nil {
			return badRequest("%v", err)
		}
		gvk.Group, gvk.Version = gv.Group, gv.Version
	}
	if tm.Kind != "" {
		gvk.Kind = tm.Kind
	}
	if gvk != scaleGVK {
		if !builtinScheme.Recognizes(gvk) {
			return &decodeFailure{gvk: gvk, target: "Scale", err: fmt.Errorf("no kind %q is registered for version %q in scheme \"pkg/runtime/scheme.go:111\"", gvk.Kind, gvk.GroupVersion())}
		}
		return &decodeFailure{gvk: gvk, target: "Scale", err: fmt.Errorf("converting (%s.%s) to (autoscaling.Scale): unknown conversion", gvk.Version, gvk.Kind)}
	}
	var sc autoscalingv1.Scale
	if err := json.Unmarshal(body, &sc); err != nil {
		return &decodeFailure{gvk: gvk, target: "Scale", err: err}
	}
	if sc.Name == "" {
		return badRequest("the name of the object (%s based on URL) was undeterminable: name must be provided", name)
	}
	return nil
}

// check is kube-apiserver's check of a custom resource's scale paths, on
// every write of the main resource: the replicas at specReplicasPath and
// statusReplicasPath, when present, are integers from 0 to 2^31-1, the
// selector at labelSelectorPath a string. checkStatus is the part a write
// of /status gets: all but specReplicasPath.
func (sc *scaleInfo) check(obj map[string]any) field.ErrorList {
	return append(checkReplicas(obj, sc.specReplicas), sc.checkStatus(obj)...)
}

func (sc *scaleInfo) checkStatus(obj map[string]any) field.ErrorList {
	errs := checkReplicas(obj, sc.statusReplicas)
	if len(sc.selector) > 0 {
		if _, _, err := unstructured.NestedString(obj, sc.selector...); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("."+strings.Join(sc.selector, ".")), "", err.Error()))
		}
	}
	return errs
}

// checkReplicas checks the replicas at path, if any.
func checkReplicas(obj map[string]any, path []string) field.ErrorList {
	if len(path) == 0 {
		return nil
	}
	p := field.NewPath("." + strings.Join(path, "."))
	n, _, err := unstructured.NestedInt64(obj, path...)
	switch {
	case err != nil:
		return field.ErrorList{field.Invalid(p, n, err.Error())}
	case n < 0:
		return field.ErrorList{field.Invalid(p, n, "should be a non-negative integer")}
	case n > math.MaxInt32:
		return field.ErrorList{field.Invalid(p, n, fmt.Sprintf("should be less than or equal to %d", math.MaxInt32))}
	}
	return nil
}
