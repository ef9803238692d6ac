package apiserver

import (
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"kloop.dev/kloop/apiserver/internal/jsontree"
	"kloop.dev/kloop/apiserver/storage"
)

// scheduling.k8s.io/v1 PriorityClasses, after kube-apiserver v1.37's
// strategy, validation and storage (pkg/registry/scheduling,
// pkg/apis/scheduling/validation): generation 1 on create and never moved,
// value and preemptionPolicy immutable, the system- prefix reserved for the
// two system classes kube-apiserver creates at start, which cannot be
// deleted; and the Priority admission plugin's work (one global default
// class at most; a Pod's priority and preemption policy from its class).

var priorityClassesGVR = schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1", Resource: "priorityclasses"}

const (
	// highestUserDefinablePriority is kube's HighestUserDefinablePriority.
	highestUserDefinablePriority = 1000000000
	systemPriorityClassPrefix    = "system-"
)

// systemPriorityClasses are the classes kube-apiserver creates for itself.
var systemPriorityClasses = []schedulingv1.PriorityClass{
	{Value: 2000001000, Description: "Used for system critical pods that must not be moved from their current node."},
	{Value: 2000000000, Description: "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."},
}

func init() {
	systemPriorityClasses[0].Name, systemPriorityClasses[1].Name = "system-node-critical", "system-cluster-critical"
}

// knownSystemPriorityClass is kube's IsKnownSystemPriorityClass.
func knownSystemPriorityClass(name string, value int32, globalDefault bool) error {
	for _, spc := range systemPriorityClasses {
		if spc.Name != name {
			continue
		}
		if spc.Value != value {
			return fmt.Errorf("value of %v PriorityClass must be %v", spc.Name, spc.Value)
		}
		if spc.GlobalDefault != globalDefault {
			return fmt.Errorf("globalDefault of %v PriorityClass must be %v", spc.Name, spc.GlobalDefault)
		}
		return nil
	}
	return fmt.Errorf("%v is not a known system priority class", name)
}

func setupPriorityClass(k *kind) {
	k.fixedGeneration = true
	k.defaults = typedDefaults(func(pc *schedulingv1.PriorityClass) {
		if pc.PreemptionPolicy == nil {
			pc.PreemptionPolicy = ptrTo(corev1.PreemptLowerPriority)
		}
	})
	k.validate = typedValidation(func(pc *schedulingv1.PriorityClass) field.ErrorList {
		var errs field.ErrorList
		if strings.HasPrefix(pc.Name, systemPriorityClassPrefix) {
			if err := knownSystemPriorityClass(pc.Name, pc.Value, pc.GlobalDefault); err != nil {
				errs = append(errs, field.Forbidden(field.NewPath("metadata", "name"),
					"priority class names with '"+systemPriorityClassPrefix+"' prefix are reserved for system use only. error: "+err.Error()))
			}
		} else if pc.Value > highestUserDefinablePriority {
			errs = append(errs, field.Forbidden(field.NewPath("value"), fmt.Sprintf("maximum allowed value of a user defined priority is %v", highestUserDefinablePriority)))
		}
		if p := pc.PreemptionPolicy; p != nil && *p != corev1.PreemptLowerPriority && *p != corev1.PreemptNever {
			errs = append(errs, field.NotSupported(field.NewPath("preemptionPolicy"), *p, []string{string(corev1.PreemptLowerPriority), string(corev1.PreemptNever)}))
		}
		return errs
	})
	k.validateUpdate = typedUpdateValidation(func(pc, old *schedulingv1.PriorityClass) field.ErrorList {
		var errs field.ErrorList
		if pc.Value != old.Value {
			errs = append(errs, field.Forbidden(field.NewPath("value"), "may not be changed in an update."))
		}
		return append(errs, immutable(pc.PreemptionPolicy, old.PreemptionPolicy, field.NewPath("preemptionPolicy"))...)
	})
	k.admit = (*Server).admitPriorityClass
	k.admitUpdate = func(s *Server, obj, _ map[string]any) error { return s.admitPriorityClass(obj) }
	k.checkDelete = func(name string) error {
		for _, spc := range systemPriorityClasses {
			if name == spc.Name {
				return apierrors.NewForbidden(priorityClassesGVR.GroupResource(), name, errors.New("this is a system priority class and cannot be deleted"))
			}
		}
		return nil
	}
	doc := schedulingv1.PriorityClass{}.SwaggerDoc()
	k.columns = defCols(def("Value", "integer", doc["value"]), def("Global-Default", "boolean", doc["globalDefault"]),
		ageColumn().def, def("PreemptionPolicy", "string", doc["preemptionPolicy"]))
	k.cells = typedCells(func(pc *schedulingv1.PriorityClass, now time.Time) []any {
		policy := "<none>"
		if pc.PreemptionPolicy != nil {
			policy = string(*pc.PreemptionPolicy)
		}
		return []any{int64(pc.Value), pc.GlobalDefault, since(pc.CreationTimestamp, now), policy}
	})
}

// createSystemPriorityClasses creates the system PriorityClasses
// kube-apiserver creates at start, those a data directory does not hold
// already, with kube-apiserver's managedFields.
func (s *Server) createSystemPriorityClasses() error {
	k := s.reg.get(priorityClassesGVR)
	for _, spc := range systemPriorityClasses {
		if _, err := s.store.Get(k.storageResource, "", spc.Name); err == nil {
			continue // kept in a data directory
		}
		obj := map[string]any{
			"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
			"metadata": map[string]any{"name": spc.Name, "managedFields": s.ownManagedFields("scheduling.k8s.io/v1", map[string]any{
				"f:description": map[string]any{}, "f:preemptionPolicy": map[string]any{}, "f:value": map[string]any{},
			})},
			"value": int64(spc.Value), "description": spc.Description, "preemptionPolicy": string(corev1.PreemptLowerPriority),
		}
		if _, err := s.create(k, obj, "", &writeOpts{keepManagedFields: true}); err != nil {
			return fmt.Errorf("apiserver: priority class %s: %w", spc.Name, err)
		}
	}
	return nil
}

// defaultPriorityClass is the PriorityClass marked globalDefault, the one
// of lowest value if more are (as kube's Priority admission plugin picks
// it); nil if none is.
func (s *Server) defaultPriorityClass() map[string]any {
	res, err := s.store.List(s.reg.get(priorityClassesGVR).storageResource, storage.ListOptions{})
	if err != nil {
		return nil
	}
	var dpc map[string]any
	for _, o := range res.Objects {
		pc, err := decodeMap(o.Data)
		if err != nil || jsontree.Get(pc, "globalDefault") != true {
			continue
		}
		if dpc == nil || jsontree.Int(dpc, "value") > jsontree.Int(pc, "value") {
			dpc = pc
		}
	}
	return dpc
}

// admitPriorityClass is the Priority admission plugin's check of a
// PriorityClass written (stored form): only one may be the global default.
func (s *Server) admitPriorityClass(obj map[string]any) error {
	if jsontree.Get(obj, "globalDefault") != true {
		return nil
	}
	name := jsontree.Str(meta(obj), "name")
	if dpc := s.defaultPriorityClass(); dpc != nil && jsontree.Str(meta(dpc), "name") != name {
		return apierrors.NewForbidden(priorityClassesGVR.GroupResource(), name,
			fmt.Errorf("PriorityClass %v is already marked as default. Only one default can exist", jsontree.Str(meta(dpc), "name")))
	}
	return nil
}

// admitPodPriority is the Priority admission plugin's work on a new Pod
// (stored form): its priority and preemption policy from its
// priorityClassName (0 and PreemptLowerPriority without one, no class
// being the global default here), 403 when the class does not exist or the
// Pod names another priority or policy.
func (s *Server) admitPodPriority(obj map[string]any) error {
	spec, _ := obj["spec"].(map[string]any)
	if spec == nil {
		return nil
	}
	name := jsontree.Str(meta(obj), "name")
	forbidden := func(format string, args ...any) error {
		return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, name, fmt.Errorf(format, args...))
	}
	var priority int64
	var policy string
	if class := jsontree.Str(spec, "priorityClassName"); class == "" {
		policy = string(corev1.PreemptLowerPriority)
		if dpc := s.defaultPriorityClass(); dpc != nil {
			spec["priorityClassName"] = jsontree.Str(meta(dpc), "name")
			priority, policy = jsontree.Int(dpc, "value"), jsontree.Str(dpc, "preemptionPolicy")
		}
	} else {
		o, err := s.store.Get(s.reg.get(priorityClassesGVR).storageResource, "", class)
		if err != nil {
			return forbidden("no PriorityClass with name %v was found", class)
		}
		pc, err := decodeMap(o.Data)
		if err != nil {
			return err
		}
		priority, policy = jsontree.Int(pc, "value"), jsontree.Str(pc, "preemptionPolicy")
	}
	if v, ok := spec["priority"]; ok && v != nil {
		if p := jsontree.Int(spec, "priority"); p != priority {
			return forbidden("the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name", p, priority)
		}
	}
	spec["priority"] = priority
	if policy != "" {
		if p := jsontree.Str(spec, "preemptionPolicy"); p != "" && p != policy {
			return forbidden("the string value of PreemptionPolicy (%s) must not be provided in pod spec; priority admission controller computed %s from the given PriorityClass name", p, policy)
		}
		spec["preemptionPolicy"] = policy
	}
	return nil
}
