package apiserver

import (
	"fmt"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// autoscaling/v2 HorizontalPodAutoscalers, after kube-apiserver v1.37's
// defaults, strategy and validation (pkg/apis/autoscaling,
// pkg/registry/autoscaling). No autoscaler acts on them.

func setupHorizontalPodAutoscaler(k *kind) {
	k.declarative = betaDeclarative
	k.defaults = typedDefaults(defaultHPA)
	k.validate = typedValidation(func(h *autoscalingv2.HorizontalPodAutoscaler) field.ErrorList {
		return validateHPASpec(&h.Spec, field.NewPath("spec"))
	})
	k.columns = hpaColumns()
	k.cells = typedCells(hpaCells)
}

func defaultHPA(h *autoscalingv2.HorizontalPodAutoscaler) {
	if h.Spec.MinReplicas == nil {
		h.Spec.MinReplicas = ptrTo[int32](1)
	}
	if len(h.Spec.Metrics) == 0 {
		h.Spec.Metrics = []autoscalingv2.MetricSpec{cpuUtilization(80)}
	}
	if b := h.Spec.Behavior; b != nil {
		up := &autoscalingv2.HPAScalingRules{
			StabilizationWindowSeconds: ptrTo[int32](0),
			SelectPolicy:               ptrTo(autoscalingv2.MaxChangePolicySelect),
			Policies: []autoscalingv2.HPAScalingPolicy{
				{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
				{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
			},
		}
		down := &autoscalingv2.HPAScalingRules{
			SelectPolicy: ptrTo(autoscalingv2.MaxChangePolicySelect),
			Policies:     []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}},
		}
		b.ScaleUp = mergeScalingRules(b.ScaleUp, up)
		b.ScaleDown = mergeScalingRules(b.ScaleDown, down)
	}
}

// mergeScalingRules is kube's copyHPAScalingRules: what from sets, over
// the defaults to.
func mergeScalingRules(from, to *autoscalingv2.HPAScalingRules) *autoscalingv2.HPAScalingRules {
	if from == nil {
		return to
	}
	if from.SelectPolicy != nil {
		to.SelectPolicy = from.SelectPolicy
	}
	if from.StabilizationWindowSeconds != nil {
		to.StabilizationWindowSeconds = from.StabilizationWindowSeconds
	}
	if from.Policies != nil {
		to.Policies = from.Policies
	}
	if from.Tolerance != nil {
		to.Tolerance = from.Tolerance
	}
	return to
}

// cpuUtilization is the metric of an average CPU utilization target.
func cpuUtilization(percent int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptrTo(percent)},
	}}
}

func validateHPASpec(sp *autoscalingv2.HorizontalPodAutoscalerSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	// Replica bounds are decided by kube-apiserver's declarative
	// validation (beta): their errors come last (betaDeclarative).
	if sp.MinReplicas != nil && *sp.MinReplicas < 1 {
		errs = append(errs, field.Invalid(path.Child("minReplicas"), int64(*sp.MinReplicas), "must be greater than or equal to 1").MarkCoveredByDeclarative())
	}
	switch {
	case sp.MaxReplicas == 0:
		errs = append(errs, field.Required(path.Child("maxReplicas"), "must be set and greater than 0").MarkCoveredByDeclarative())
	case sp.MaxReplicas < 0:
		errs = append(errs, field.Invalid(path.Child("maxReplicas"), int64(sp.MaxReplicas), "must be greater than or equal to 1").MarkCoveredByDeclarative())
	}
	if sp.MinReplicas != nil && sp.MaxReplicas < *sp.MinReplicas {
		errs = append(errs, field.Invalid(path.Child("maxReplicas"), int64(sp.MaxReplicas), "must be greater than or equal to `minReplicas`"))
	}
	ref := path.Child("scaleTargetRef")
	for _, f := range []struct{ name, v string }{{"kind", sp.ScaleTargetRef.Kind}, {"name", sp.ScaleTargetRef.Name}} {
		if f.v == "" {
			errs = append(errs, field.Required(ref.Child(f.name), ""))
			continue
		}
		for _, msg := range content.IsPathSegmentName(f.v) {
			errs = append(errs, field.Invalid(ref.Child(f.name), f.v, msg))
		}
	}
	if _, err := schema.ParseGroupVersion(sp.ScaleTargetRef.APIVersion); err != nil {
		errs = append(errs, field.Invalid(ref.Child("apiVersion"), sp.ScaleTargetRef.APIVersion, err.Error()))
	}
	for i, m := range sp.Metrics {
		errs = append(errs, validateMetricSpec(m, path.Child("metrics").Index(i))...)
	}
	return errs
}

// validateMetricSpec checks that a metric names a known source type and
// populates that source only.
func validateMetricSpec(m autoscalingv2.MetricSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	types := []string{"ContainerResource", "External", "Object", "Pods", "Resource"}
	if m.Type == "" {
		errs = append(errs, field.Required(p.Child("type"), "must specify a metric source type"))
	}
	sources := map[string]bool{"object": m.Object != nil, "external": m.External != nil, "pods": m.Pods != nil, "resource": m.Resource != nil, "containerResource": m.ContainerResource != nil}
	if m.Resource != nil && m.Resource.Name == "" {
		errs = append(errs, field.Required(p.Child("resource", "name"), "must specify a resource name"))
	}
	if m.Resource != nil {
		errs = append(errs, validateMetricTarget(m.Resource.Target, p.Child("resource", "target"))...)
	}
	expected := map[autoscalingv2.MetricSourceType]string{autoscalingv2.ObjectMetricSourceType: "object", autoscalingv2.PodsMetricSourceType: "pods",
		autoscalingv2.ResourceMetricSourceType: "resource", autoscalingv2.ExternalMetricSourceType: "external", autoscalingv2.ContainerResourceMetricSourceType: "containerResource"}[m.Type]
	switch {
	case expected == "":
		// kube-apiserver says it twice.
		errs = append(errs, field.NotSupported(p.Child("type"), string(m.Type), types), field.NotSupported(p.Child("type"), string(m.Type), types))
	case !sources[expected]:
		errs = append(errs, field.Required(p.Child(expected), "must populate information for the given metric source"))
	}
	n := 0
	for _, present := range sources {
		if present {
			n++
		}
	}
	if n != 1 {
		for _, typ := range []string{"object", "external", "pods", "resource", "containerResource"} {
			if sources[typ] && typ != expected {
				errs = append(errs, field.Forbidden(p.Child(typ), "must populate the given metric source only"))
			}
		}
	}
	return errs
}

func validateMetricTarget(t autoscalingv2.MetricTarget, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch t.Type {
	case "":
		errs = append(errs, field.Required(p.Child("type"), "must specify a metric target type"))
	case autoscalingv2.UtilizationMetricType, autoscalingv2.ValueMetricType, autoscalingv2.AverageValueMetricType:
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), string(t.Type), []string{"AverageValue", "Utilization", "Value"}))
	}
	if t.AverageUtilization != nil && *t.AverageUtilization < 1 {
		errs = append(errs, field.Invalid(p.Child("averageUtilization"), int64(*t.AverageUtilization), "must be greater than 0"))
	}
	return errs
}

func hpaColumns() []column {
	sp, st := autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc(), autoscalingv2.HorizontalPodAutoscalerStatus{}.SwaggerDoc()
	return defCols(def("Reference", "string", sp["scaleTargetRef"]), def("Targets", "string", sp["metrics"]), def("MinPods", "string", sp["minReplicas"]),
		def("MaxPods", "string", sp["maxReplicas"]), def("Replicas", "string", st["currentReplicas"]), ageColumn().def)
}

func hpaCells(h *autoscalingv2.HorizontalPodAutoscaler, now time.Time) []any {
	minPods := "<unset>"
	if h.Spec.MinReplicas != nil {
		minPods = fmt.Sprintf("%d", *h.Spec.MinReplicas)
	}
	return []any{h.Spec.ScaleTargetRef.Kind + "/" + h.Spec.ScaleTargetRef.Name, hpaTargets(h.Spec.Metrics, h.Status.CurrentMetrics),
		minPods, int64(h.Spec.MaxReplicas), int64(h.Status.CurrentReplicas), since(h.CreationTimestamp, now)}
}

// hpaTargets is kube's printers' Targets cell: current/target of the
// first two metrics, then how many more.
func hpaTargets(specs []autoscalingv2.MetricSpec, statuses []autoscalingv2.MetricStatus) string {
	if len(specs) == 0 {
		return "<none>"
	}
	var list []string
	for i, s := range specs {
		var st *autoscalingv2.MetricStatus
		if i < len(statuses) {
			st = &statuses[i]
		}
		current := "<unknown>"
		switch s.Type {
		case autoscalingv2.ExternalMetricSourceType:
			if s.External.Target.AverageValue != nil {
				if st != nil && st.External != nil && st.External.Current.AverageValue != nil {
					current = st.External.Current.AverageValue.String()
				}
				list = append(list, fmt.Sprintf("%s/%s (avg)", current, s.External.Target.AverageValue.String()))
			} else {
				if st != nil && st.External != nil {
					current = st.External.Current.Value.String()
				}
				list = append(list, fmt.Sprintf("%s/%s", current, s.External.Target.Value.String()))
			}
		case autoscalingv2.PodsMetricSourceType:
			if st != nil && st.Pods != nil {
				current = st.Pods.Current.AverageValue.String()
			}
			list = append(list, fmt.Sprintf("%s/%s", current, s.Pods.Target.AverageValue.String()))
		case autoscalingv2.ObjectMetricSourceType:
			if s.Object.Target.AverageValue != nil {
				if st != nil && st.Object != nil && st.Object.Current.AverageValue != nil {
					current = st.Object.Current.AverageValue.String()
				}
				list = append(list, fmt.Sprintf("%s/%s (avg)", current, s.Object.Target.AverageValue.String()))
			} else {
				if st != nil && st.Object != nil {
					current = st.Object.Current.Value.String()
				}
				list = append(list, fmt.Sprintf("%s/%s", current, s.Object.Target.Value.String()))
			}
		case autoscalingv2.ResourceMetricSourceType, autoscalingv2.ContainerResourceMetricSourceType:
			name, target := corev1.ResourceName(""), autoscalingv2.MetricTarget{}
			var cur *autoscalingv2.MetricValueStatus
			if s.Type == autoscalingv2.ResourceMetricSourceType {
				name, target = s.Resource.Name, s.Resource.Target
				if st != nil && st.Resource != nil {
					cur = &st.Resource.Current
				}
			} else {
				name, target = s.ContainerResource.Name, s.ContainerResource.Target
				if st != nil && st.ContainerResource != nil {
					cur = &st.ContainerResource.Current
				}
			}
			if target.AverageValue != nil {
				if cur != nil {
					current = cur.AverageValue.String()
				}
				list = append(list, fmt.Sprintf("%s: %s/%s", name, current, target.AverageValue.String()))
				break
			}
			if cur != nil && cur.AverageUtilization != nil {
				current = fmt.Sprintf("%d%%", *cur.AverageUtilization)
			}
			t := "<auto>"
			if target.AverageUtilization != nil {
				t = fmt.Sprintf("%d%%", *target.AverageUtilization)
			}
			list = append(list, fmt.Sprintf("%s: %s/%s", name, current, t))
		default:
			list = append(list, "<unknown type>")
		}
	}
	if len(list) > 2 {
		return fmt.Sprintf("%s + %d more...", strings.Join(list[:2], ", "), len(list)-2)
	}
	return strings.Join(list, ", ")
}
