package apiserver

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"kloop.dev/kloop/apiserver/internal/jsontree"
)

// apps/v1 StatefulSets, DaemonSets and ControllerRevisions, after
// kube-apiserver v1.37's defaults (pkg/apis/apps/v1), strategies
// (pkg/registry/apps) and validation (pkg/apis/apps/validation).

func setupStatefulSet(k *kind) {
	k.nameValidation = apivalidation.NameIsDNSLabel
	k.defaults = typedDefaults(defaultStatefulSet)
	k.validate = typedValidation(validateStatefulSet)
	// Claim templates are checked on create only (they are immutable).
	k.validateCreate = typedValidation(func(ss *appsv1.StatefulSet) field.ErrorList {
		var errs field.ErrorList
		for i := range ss.Spec.VolumeClaimTemplates {
			errs = append(errs, validatePVCSpec(&ss.Spec.VolumeClaimTemplates[i].Spec, field.NewPath("spec", "volumeClaimTemplates").Index(i).Child("spec"))...)
		}
		return errs
	})
	k.validateUpdate = typedUpdateValidation(func(ss, old *appsv1.StatefulSet) field.ErrorList {
		spec := field.NewPath("spec")
		var errs field.ErrorList
		errs = append(errs, immutable(ss.Spec.Selector, old.Spec.Selector, spec.Child("selector"))...)
		errs = append(errs, immutable(ss.Spec.VolumeClaimTemplates, old.Spec.VolumeClaimTemplates, spec.Child("volumeClaimTemplates"))...)
		errs = append(errs, immutable(ss.Spec.ServiceName, old.Spec.ServiceName, spec.Child("serviceName"))...)
		errs = append(errs, immutable(ss.Spec.PodManagementPolicy, old.Spec.PodManagementPolicy, spec.Child("podManagementPolicy"))...)
		if isDecremented(ss.Status.CollisionCount, old.Status.CollisionCount) {
			errs = append(errs, field.Invalid(field.NewPath("status", "collisionCount"), int64(deref(ss.Status.CollisionCount)), "cannot be decremented"))
		}
		return errs
	})
	k.warnings = func(obj map[string]any) []string {
		if v, ok := jsontree.Get(obj, "spec", "revisionHistoryLimit").(int64); ok && v < 0 {
			return []string{"spec.revisionHistoryLimit: a negative value retains all historical revisions; a value >= 0 is recommended"}
		}
		return nil
	}
	k.columns = defCols(def("Ready", "string", "Number of the pod with ready state"), ageColumn().def, containersCol, imagesCol)
	k.cells = typedCells(func(ss *appsv1.StatefulSet, now time.Time) []any {
		names, images := containerCells(ss.Spec.Template.Spec.Containers)
		return []any{fmt.Sprintf("%d/%d", ss.Status.ReadyReplicas, deref(ss.Spec.Replicas)), since(ss.CreationTimestamp, now), names, images}
	})
}

func defaultStatefulSet(ss *appsv1.StatefulSet) {
	sp := &ss.Spec
	if sp.PodManagementPolicy == "" {
		sp.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	}
	if sp.UpdateStrategy.Type == "" {
		sp.UpdateStrategy.Type = appsv1.RollingUpdateStatefulSetStrategyType
		if sp.UpdateStrategy.RollingUpdate == nil {
			sp.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
		}
	}
	if ru := sp.UpdateStrategy.RollingUpdate; sp.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType && ru != nil {
		if ru.Partition == nil {
			ru.Partition = ptrTo[int32](0)
		}
		// MaxUnavailableStatefulSet is on in v1.37.
		if ru.MaxUnavailable == nil {
			ru.MaxUnavailable = ptrTo(intstr.FromInt32(1))
		}
	}
	if sp.PersistentVolumeClaimRetentionPolicy == nil {
		sp.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{}
	}
	if p := sp.PersistentVolumeClaimRetentionPolicy; p.WhenDeleted == "" {
		p.WhenDeleted = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if p := sp.PersistentVolumeClaimRetentionPolicy; p.WhenScaled == "" {
		p.WhenScaled = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if sp.Replicas == nil {
		sp.Replicas = ptrTo[int32](1)
	}
	if sp.RevisionHistoryLimit == nil {
		sp.RevisionHistoryLimit = ptrTo[int32](10)
	}
	defaultPodSpec(&sp.Template.Spec)
	for i := range sp.VolumeClaimTemplates {
		pvc := &sp.VolumeClaimTemplates[i]
		defaultPVC(pvc)
		// apps/v1's conversion names the kind of the templates.
		pvc.APIVersion, pvc.Kind = "v1", "PersistentVolumeClaim"
	}
}

func validateStatefulSet(ss *appsv1.StatefulSet) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	sp := &ss.Spec
	switch sp.PodManagementPolicy {
	case "":
		errs = append(errs, field.Required(spec.Child("podManagementPolicy"), ""))
	case appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement:
	default:
		errs = append(errs, field.Invalid(spec.Child("podManagementPolicy"), string(sp.PodManagementPolicy), "must be 'OrderedReady' or 'Parallel'"))
	}
	us := spec.Child("updateStrategy")
	switch sp.UpdateStrategy.Type {
	case "":
		errs = append(errs, field.Required(us, ""))
	case appsv1.OnDeleteStatefulSetStrategyType:
		if sp.UpdateStrategy.RollingUpdate != nil {
			errs = append(errs, field.Invalid(us.Child("rollingUpdate"), sp.UpdateStrategy.RollingUpdate, "only allowed for updateStrategy 'RollingUpdate'"))
		}
	case appsv1.RollingUpdateStatefulSetStrategyType:
		if ru := sp.UpdateStrategy.RollingUpdate; ru != nil {
			ruPath := us.Child("rollingUpdate")
			errs = append(errs, nonNegative(int64(deref(ru.Partition)), ruPath.Child("partition"))...)
			if ru.MaxUnavailable != nil {
				p := ruPath.Child("maxUnavailable")
				errs = append(errs, positiveIntOrPercent(*ru.MaxUnavailable, p)...)
				if intOrPercentValue(*ru.MaxUnavailable) == 0 {
					errs = append(errs, field.Invalid(p, *ru.MaxUnavailable, "cannot be 0"))
				}
				errs = append(errs, notMoreThan100Percent(*ru.MaxUnavailable, p)...)
			}
		}
	default:
		errs = append(errs, field.Invalid(us, sp.UpdateStrategy, "must be 'RollingUpdate' or 'OnDelete'"))
	}
	if p := sp.PersistentVolumeClaimRetentionPolicy; p != nil {
		pp := spec.Child("persistentVolumeClaimRetentionPolicy")
		errs = append(errs, oneOf(pp.Child("whenDeleted"), string(p.WhenDeleted), "Retain", "Delete")...)
		errs = append(errs, oneOf(pp.Child("whenScaled"), string(p.WhenScaled), "Retain", "Delete")...)
	}
	errs = append(errs, nonNegative(int64(deref(sp.Replicas)), spec.Child("replicas"))...)
	errs = append(errs, nonNegative(int64(sp.MinReadySeconds), spec.Child("minReadySeconds"))...)
	if sp.Ordinals != nil {
		errs = append(errs, nonNegative(int64(sp.Ordinals.Start), spec.Child("ordinals.start"))...)
	}
	if sp.ServiceName != "" {
		for _, msg := range validation.IsDNS1123Label(sp.ServiceName) {
			errs = append(errs, field.Invalid(spec.Child("serviceName"), sp.ServiceName, msg))
		}
	}
	errs = append(errs, validateSelector(sp.Selector, sp.Template.Labels, spec, "statefulset")...)
	claims := make([]string, len(sp.VolumeClaimTemplates))
	for i, c := range sp.VolumeClaimTemplates {
		claims[i] = c.Name
	}
	errs = append(errs, validatePodTemplate(&sp.Template, spec.Child("template"), claims...)...)
	if sp.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(spec.Child("template", "spec", "restartPolicy"), string(sp.Template.Spec.RestartPolicy), []string{"Always"}))
	}
	if sp.Template.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(spec.Child("template", "spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in StatefulSet is not Supported"))
	}
	st := field.NewPath("status")
	for _, f := range []struct {
		v    int32
		name string
	}{{ss.Status.Replicas, "replicas"}, {ss.Status.ReadyReplicas, "readyReplicas"}, {ss.Status.CurrentReplicas, "currentReplicas"}, {ss.Status.UpdatedReplicas, "updatedReplicas"}, {ss.Status.AvailableReplicas, "availableReplicas"}} {
		errs = append(errs, nonNegative(int64(f.v), st.Child(f.name))...)
	}
	const msg = "cannot be greater than status.replicas"
	for _, f := range []struct {
		v    int32
		name string
	}{{ss.Status.ReadyReplicas, "readyReplicas"}, {ss.Status.CurrentReplicas, "currentReplicas"}, {ss.Status.UpdatedReplicas, "updatedReplicas"}, {ss.Status.AvailableReplicas, "availableReplicas"}} {
		if f.v > ss.Status.Replicas {
			errs = append(errs, field.Invalid(st.Child(f.name), int64(f.v), msg))
		}
	}
	if ss.Status.AvailableReplicas > ss.Status.ReadyReplicas {
		errs = append(errs, field.Invalid(st.Child("availableReplicas"), int64(ss.Status.AvailableReplicas), "cannot be greater than status.readyReplicas"))
	}
	return errs
}

// daemonSetTemplateGeneration is the annotation apps/v1 DaemonSets carry
// their template generation in: set by kube-apiserver on create (1) and
// on every update that changes the template (+1), whatever a client
// sends.
const daemonSetTemplateGeneration = appsv1.DeprecatedTemplateGeneration

func setupDaemonSet(k *kind) {
	k.defaults = typedDefaults(defaultDaemonSet)
	k.prepareCreate = func(obj map[string]any) {
		k.resetStatus(obj)
		gen := int64(0)
		if v, ok := jsontree.Get(obj, "metadata", "annotations", daemonSetTemplateGeneration).(string); ok {
			var err error
			if gen, err = strconv.ParseInt(v, 10, 64); err != nil {
				return // normalize refuses it
			}
		}
		setAnnotation(obj, daemonSetTemplateGeneration, strconv.FormatInt(max(gen, 1), 10))
	}
	k.normalize = func(obj map[string]any) (map[string]any, error) {
		// apps/v1's conversion reads the annotation on every decoding
		// (and refuses one that is not a number), and writes it back,
		// where the field manager sees it.
		v, ok := jsontree.Get(obj, "metadata", "annotations", daemonSetTemplateGeneration).(string)
		if !ok {
			setAnnotation(obj, daemonSetTemplateGeneration, "0")
			return obj, nil
		}
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			return nil, &decodeFailure{gvk: appsv1.SchemeGroupVersion.WithKind("DaemonSet"), target: "DaemonSet", err: err}
		}
		return obj, nil
	}
	k.carryOver = func(obj, old map[string]any) {
		gen, _ := strconv.ParseInt(jsontree.Str(old, "metadata", "annotations", daemonSetTemplateGeneration), 10, 64)
		if !jsontree.Equal(jsontree.Get(obj, "spec", "template"), jsontree.Get(old, "spec", "template")) {
			gen++
		}
		setAnnotation(obj, daemonSetTemplateGeneration, strconv.FormatInt(gen, 10))
	}
	k.internalMeta = func(md map[string]any) {
		if a, ok := md["annotations"].(map[string]any); ok {
			delete(a, daemonSetTemplateGeneration)
			if len(a) == 0 {
				delete(md, "annotations")
			}
		}
	}
	k.validate = typedValidation(validateDaemonSet)
	k.validateUpdate = typedUpdateValidation(func(ds, old *appsv1.DaemonSet) field.ErrorList {
		errs := immutable(ds.Spec.Selector, old.Spec.Selector, field.NewPath("spec", "selector"))
		if isDecremented(ds.Status.CollisionCount, old.Status.CollisionCount) {
			errs = append(errs, field.Invalid(field.NewPath("status", "collisionCount"), int64(deref(ds.Status.CollisionCount)), "cannot be decremented"))
		}
		return errs
	})
	st := appsv1.DaemonSetStatus{}.SwaggerDoc()
	k.columns = defCols(
		def("Desired", "integer", st["desiredNumberScheduled"]),
		def("Current", "integer", st["currentNumberScheduled"]),
		def("Ready", "integer", st["numberReady"]),
		def("Up-to-date", "integer", st["updatedNumberScheduled"]),
		def("Available", "integer", st["numberAvailable"]),
		def("Node Selector", "string", corev1.PodSpec{}.SwaggerDoc()["nodeSelector"]),
		ageColumn().def, containersCol, imagesCol,
		wide("Selector", "string", appsv1.DaemonSetSpec{}.SwaggerDoc()["selector"]),
	)
	k.cells = typedCells(func(ds *appsv1.DaemonSet, now time.Time) []any {
		s := ds.Status
		names, images := containerCells(ds.Spec.Template.Spec.Containers)
		return []any{int64(s.DesiredNumberScheduled), int64(s.CurrentNumberScheduled), int64(s.NumberReady), int64(s.UpdatedNumberScheduled), int64(s.NumberAvailable),
			labels.FormatLabels(ds.Spec.Template.Spec.NodeSelector), since(ds.CreationTimestamp, now), names, images, metav1.FormatLabelSelector(ds.Spec.Selector)}
	})
}

func defaultDaemonSet(ds *appsv1.DaemonSet) {
	us := &ds.Spec.UpdateStrategy
	if us.Type == "" {
		us.Type = appsv1.RollingUpdateDaemonSetStrategyType
	}
	if us.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		if us.RollingUpdate == nil {
			us.RollingUpdate = &appsv1.RollingUpdateDaemonSet{}
		}
		if us.RollingUpdate.MaxUnavailable == nil {
			us.RollingUpdate.MaxUnavailable = ptrTo(intstr.FromInt32(1))
		}
		if us.RollingUpdate.MaxSurge == nil {
			us.RollingUpdate.MaxSurge = ptrTo(intstr.FromInt32(0))
		}
	}
	if ds.Spec.RevisionHistoryLimit == nil {
		ds.Spec.RevisionHistoryLimit = ptrTo[int32](10)
	}
	defaultPodSpec(&ds.Spec.Template.Spec)
}

func validateDaemonSet(ds *appsv1.DaemonSet) field.ErrorList {
	spec := field.NewPath("spec")
	sp := &ds.Spec
	errs := validateSelector(sp.Selector, sp.Template.Labels, spec, "daemonset")
	errs = append(errs, validatePodTemplate(&sp.Template, spec.Child("template"))...)
	if sp.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(spec.Child("template", "spec", "restartPolicy"), string(sp.Template.Spec.RestartPolicy), []string{"Always"}))
	}
	if sp.Template.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(spec.Child("template", "spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in DaemonSet is not Supported"))
	}
	errs = append(errs, nonNegative(int64(sp.MinReadySeconds), spec.Child("minReadySeconds"))...)
	us := spec.Child("updateStrategy")
	switch sp.UpdateStrategy.Type {
	case appsv1.OnDeleteDaemonSetStrategyType:
	case appsv1.RollingUpdateDaemonSetStrategyType:
		ru := sp.UpdateStrategy.RollingUpdate
		if ru == nil {
			errs = append(errs, field.Required(us.Child("rollingUpdate"), ""))
			break
		}
		ruPath := us.Child("rollingUpdate")
		var mu, ms intstr.IntOrString
		if ru.MaxUnavailable != nil {
			mu = *ru.MaxUnavailable
		}
		if ru.MaxSurge != nil {
			ms = *ru.MaxSurge
		}
		errs = append(errs, positiveIntOrPercent(mu, ruPath.Child("maxUnavailable"))...)
		errs = append(errs, positiveIntOrPercent(ms, ruPath.Child("maxSurge"))...)
		errs = append(errs, notMoreThan100Percent(mu, ruPath.Child("maxUnavailable"))...)
		errs = append(errs, notMoreThan100Percent(ms, ruPath.Child("maxSurge"))...)
		hasUnavailable, hasSurge := intOrPercentValue(mu) != 0, intOrPercentValue(ms) != 0
		switch {
		case hasUnavailable && hasSurge:
			errs = append(errs, field.Invalid(ruPath.Child("maxSurge"), ms, "may not be set when maxUnavailable is non-zero"))
		case !hasUnavailable && !hasSurge:
			errs = append(errs, field.Required(ruPath.Child("maxUnavailable"), "cannot be 0 when maxSurge is 0"))
		}
	default:
		errs = append(errs, field.NotSupported(us, sp.UpdateStrategy, []string{"RollingUpdate", "OnDelete"}))
	}
	if sp.RevisionHistoryLimit != nil {
		errs = append(errs, nonNegative(int64(*sp.RevisionHistoryLimit), spec.Child("revisionHistoryLimit"))...)
	}
	return errs
}

func setupControllerRevision(k *kind) {
	k.validate = func(obj map[string]any) field.ErrorList {
		var errs field.ErrorList
		if v, ok := obj["revision"].(int64); ok && v < 0 {
			errs = append(errs, nonNegative(v, field.NewPath("revision"))...)
		}
		switch obj["data"].(type) {
		case nil:
			errs = append(errs, field.Required(field.NewPath("data"), "data is mandatory"))
		case map[string]any:
		default:
			errs = append(errs, field.Required(field.NewPath("data"), "data must be a valid JSON object"))
		}
		return errs
	}
	k.validateUpdate = func(obj, old map[string]any) field.ErrorList {
		if !jsontree.Equal(obj["data"], old["data"]) {
			// kube-apiserver quotes the RawExtension it compared.
			return field.ErrorList{field.Invalid(field.NewPath("data"), obj["data"], "field is immutable")}
		}
		return nil
	}
	k.columns = defCols(def("Controller", "string", "Controller of the object"), def("Revision", "string", appsv1.ControllerRevision{}.SwaggerDoc()["revision"]), ageColumn().def)
	k.cells = typedCells(func(cr *appsv1.ControllerRevision, now time.Time) []any {
		controller := "<none>"
		if ref := metav1.GetControllerOf(cr); ref != nil {
			gv, err := schema.ParseGroupVersion(ref.APIVersion)
			if err == nil {
				controller = formatResourceName(gv.WithKind(ref.Kind).GroupKind(), ref.Name)
			}
		}
		return []any{controller, cr.Revision, since(cr.CreationTimestamp, now)}
	})
}

// formatResourceName is kube's printers' name of an object with its kind.
func formatResourceName(gk schema.GroupKind, name string) string {
	if gk.Empty() {
		return name
	}
	return strings.ToLower(gk.String()) + "/" + name
}

// setAnnotation sets an annotation of an object.
func setAnnotation(obj map[string]any, key, value string) {
	m := meta(obj)
	a, _ := m["annotations"].(map[string]any)
	if a == nil {
		a = map[string]any{}
		m["annotations"] = a
	}
	a[key] = value
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// isDecremented is kube's apivalidation.IsDecremented.
func isDecremented(update, old *int32) bool {
	if update == nil && old != nil {
		return true
	}
	if update == nil || old == nil {
		return false
	}
	return *update < *old
}

// positiveIntOrPercent is kube's ValidatePositiveIntOrPercent.
func positiveIntOrPercent(v intstr.IntOrString, p *field.Path) field.ErrorList {
	switch v.Type {
	case intstr.String:
		var errs field.ErrorList
		for _, msg := range validation.IsValidPercent(v.StrVal) {
			errs = append(errs, field.Invalid(p, v, msg))
		}
		return errs
	case intstr.Int:
		return nonNegative(int64(v.IntValue()), p)
	}
	return field.ErrorList{field.Invalid(p, v, "must be an integer or percentage (e.g '5%%')")}
}

// intOrPercentValue is the number of an int or a percentage.
func intOrPercentValue(v intstr.IntOrString) int {
	if v.Type == intstr.String {
		n, err := strconv.Atoi(strings.TrimSuffix(v.StrVal, "%"))
		if err != nil {
			return 0
		}
		return n
	}
	return v.IntValue()
}

// notMoreThan100Percent is kube's IsNotMoreThan100Percent.
func notMoreThan100Percent(v intstr.IntOrString, p *field.Path) field.ErrorList {
	if v.Type != intstr.String || len(validation.IsValidPercent(v.StrVal)) > 0 {
		return nil
	}
	if intOrPercentValue(v) > 100 {
		return field.ErrorList{field.Invalid(p, v, "must not be greater than 100%")}
	}
	return nil
}
