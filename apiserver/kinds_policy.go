package apiserver

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// policy/v1 PodDisruptionBudgets and storage.k8s.io/v1 StorageClasses,
// after kube-apiserver v1.37's strategies and validation
// (pkg/registry/policy, pkg/apis/policy/validation, pkg/registry/storage,
// pkg/apis/storage). No disruption controller computes a budget's status,
// and evictions do not consult budgets.

func setupPodDisruptionBudget(k *kind) {
	k.validate = typedValidation(func(pdb *policyv1.PodDisruptionBudget) field.ErrorList {
		spec := field.NewPath("spec")
		var errs field.ErrorList
		if pdb.Spec.MinAvailable != nil && pdb.Spec.MaxUnavailable != nil {
			errs = append(errs, field.Invalid(spec, pdb.Spec, "minAvailable and maxUnavailable cannot be both set"))
		}
		if v := pdb.Spec.MinAvailable; v != nil {
			errs = append(errs, positiveIntOrPercent(*v, spec.Child("minAvailable"))...)
			errs = append(errs, notMoreThan100Percent(*v, spec.Child("minAvailable"))...)
		}
		if v := pdb.Spec.MaxUnavailable; v != nil {
			errs = append(errs, positiveIntOrPercent(*v, spec.Child("maxUnavailable"))...)
			errs = append(errs, notMoreThan100Percent(*v, spec.Child("maxUnavailable"))...)
		}
		errs = append(errs, metav1validation.ValidateLabelSelector(pdb.Spec.Selector, metav1validation.LabelSelectorValidationOptions{}, spec.Child("selector"))...)
		if p := pdb.Spec.UnhealthyPodEvictionPolicy; p != nil && *p != policyv1.IfHealthyBudget && *p != policyv1.AlwaysAllow {
			errs = append(errs, field.NotSupported(spec.Child("unhealthyPodEvictionPolicy"), string(*p), []string{"AlwaysAllow", "IfHealthyBudget"}))
		}
		st := field.NewPath("status")
		errs = append(errs, metav1validation.ValidateConditions(pdb.Status.Conditions, st.Child("conditions"))...)
		errs = append(errs, nonNegative(int64(pdb.Status.DisruptionsAllowed), st.Child("disruptionsAllowed"))...)
		errs = append(errs, nonNegative(int64(pdb.Status.CurrentHealthy), st.Child("currentHealthy"))...)
		errs = append(errs, nonNegative(int64(pdb.Status.DesiredHealthy), st.Child("desiredHealthy"))...)
		errs = append(errs, nonNegative(int64(pdb.Status.ExpectedPods), st.Child("expectedPods"))...)
		return errs
	})
	k.columns = defCols(def("Min Available", "string", "The minimum number of pods that must be available."),
		def("Max Unavailable", "string", "The maximum number of pods that may be unavailable."),
		def("Allowed Disruptions", "integer", "Calculated number of pods that may be disrupted at this time."), ageColumn().def)
	k.cells = typedCells(func(pdb *policyv1.PodDisruptionBudget, now time.Time) []any {
		minAvailable, maxUnavailable := "N/A", "N/A"
		if v := pdb.Spec.MinAvailable; v != nil {
			minAvailable = v.String()
		}
		if v := pdb.Spec.MaxUnavailable; v != nil {
			maxUnavailable = v.String()
		}
		return []any{minAvailable, maxUnavailable, int64(pdb.Status.DisruptionsAllowed), since(pdb.CreationTimestamp, now)}
	})
}

func setupStorageClass(k *kind) {
	k.returnsDeleted = true
	k.declarative = betaDeclarative
	k.defaults = typedDefaults(func(sc *storagev1.StorageClass) {
		if sc.ReclaimPolicy == nil {
			sc.ReclaimPolicy = ptrTo(corev1.PersistentVolumeReclaimDelete)
		}
		if sc.VolumeBindingMode == nil {
			sc.VolumeBindingMode = ptrTo(storagev1.VolumeBindingImmediate)
		}
	})
	k.validate = typedValidation(func(sc *storagev1.StorageClass) field.ErrorList {
		var errs field.ErrorList
		prov := field.NewPath("provisioner")
		if sc.Provisioner == "" {
			errs = append(errs, field.Required(prov, "").MarkCoveredByDeclarative())
		} else {
			errs = append(errs, qualifiedName(strings.ToLower(sc.Provisioner), prov)...)
		}
		if len(sc.Parameters) > 512 {
			errs = append(errs, field.TooLong(field.NewPath("parameters"), "", 512))
		}
		if p := sc.ReclaimPolicy; p != nil && *p != "" && *p != corev1.PersistentVolumeReclaimDelete && *p != corev1.PersistentVolumeReclaimRetain {
			errs = append(errs, field.NotSupported(field.NewPath("reclaimPolicy"), string(*p), []string{"Delete", "Retain"}))
		}
		switch m := sc.VolumeBindingMode; {
		case m == nil:
			errs = append(errs, field.Required(field.NewPath("volumeBindingMode"), ""))
		case *m != storagev1.VolumeBindingImmediate && *m != storagev1.VolumeBindingWaitForFirstConsumer:
			errs = append(errs, field.NotSupported(field.NewPath("volumeBindingMode"), string(*m), []string{"Immediate", "WaitForFirstConsumer"}))
		}
		return errs
	})
	k.validateUpdate = typedUpdateValidation(func(sc, old *storagev1.StorageClass) field.ErrorList {
		errs := immutable(sc.Parameters, old.Parameters, field.NewPath("parameters"))
		errs = append(errs, immutable(sc.Provisioner, old.Provisioner, field.NewPath("provisioner"))...)
		if !ptrEqual(sc.ReclaimPolicy, old.ReclaimPolicy) {
			errs = append(errs, field.Invalid(field.NewPath("reclaimPolicy"), string(deref(sc.ReclaimPolicy)), "field is immutable"))
		}
		if !ptrEqual(sc.VolumeBindingMode, old.VolumeBindingMode) {
			errs = append(errs, field.Invalid(field.NewPath("volumeBindingMode"), string(deref(sc.VolumeBindingMode)), "field is immutable"))
		}
		for _, e := range errs {
			e.CoveredByDeclarative = true
		}
		return errs
	})
	doc := storagev1.StorageClass{}.SwaggerDoc()
	k.columns = defCols(def("Provisioner", "string", doc["provisioner"]), def("ReclaimPolicy", "string", doc["reclaimPolicy"]),
		def("VolumeBindingMode", "string", doc["volumeBindingMode"]), def("AllowVolumeExpansion", "string", doc["allowVolumeExpansion"]), ageColumn().def)
	k.cells = typedCells(func(sc *storagev1.StorageClass, now time.Time) []any {
		reclaim := string(corev1.PersistentVolumeReclaimDelete)
		if sc.ReclaimPolicy != nil {
			reclaim = string(*sc.ReclaimPolicy)
		}
		mode := string(storagev1.VolumeBindingImmediate)
		if sc.VolumeBindingMode != nil {
			mode = string(*sc.VolumeBindingMode)
		}
		return []any{sc.Provisioner, reclaim, mode, deref(sc.AllowVolumeExpansion), since(sc.CreationTimestamp, now)}
	})
}

// qualifiedName is kube-apiserver's ValidateQualifiedName.
func qualifiedName(v string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(v) {
		errs = append(errs, field.Invalid(p, v, msg))
	}
	return errs
}
