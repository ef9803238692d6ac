package apiserver

import (
	"encoding/json"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// autoscaling/v1 HorizontalPodAutoscalers: the autoscaling/v2 objects,
// served in v1's form as kube-apiserver v1.37 converts them
// (pkg/apis/autoscaling/v1/conversion.go): a CPU utilization target is
// targetCPUUtilizationPercentage, the other metrics, the current metrics,
// the behavior and the conditions travel in annotations.

// The annotations autoscaling/v1 carries v2's fields in.
const (
	hpaMetricsAnnotation        = "autoscaling.alpha.kubernetes.io/metrics"
	hpaCurrentMetricsAnnotation = "autoscaling.alpha.kubernetes.io/current-metrics"
	hpaConditionsAnnotation     = "autoscaling.alpha.kubernetes.io/conditions"
	hpaBehaviorAnnotation       = "autoscaling.alpha.kubernetes.io/behavior"
)

// hpaRoundTripAnnotations are dropped from an object before conversion
// writes them (and after it reads them).
var hpaRoundTripAnnotations = []string{hpaMetricsAnnotation, hpaBehaviorAnnotation, "autoscaling.alpha.kubernetes.io/scale-down-tolerance",
	"autoscaling.alpha.kubernetes.io/scale-up-tolerance", hpaCurrentMetricsAnnotation, hpaConditionsAnnotation}

func hpaV1Conversion() *conversion {
	return &conversion{
		toStorage: func(obj map[string]any) (map[string]any, error) {
			var in autoscalingv1.HorizontalPodAutoscaler
			if err := fromMap(obj, &in); err != nil {
				return nil, err
			}
			out := hpaV1ToV2(&in)
			defaultHPA(out)
			return toMap(out)
		},
		fromStorage: func(obj map[string]any) (map[string]any, error) {
			var in autoscalingv2.HorizontalPodAutoscaler
			if err := fromMap(obj, &in); err != nil {
				return nil, err
			}
			out, err := hpaV2ToV1(&in)
			if err != nil {
				return nil, err
			}
			return toMap(out)
		},
	}
}

func setupHorizontalPodAutoscalerV1(k *kind) {
	k.declarative = betaDeclarative
	// Table rows carry the internal object's metadata: no conversion
	// annotations.
	k.internalMeta = func(md map[string]any) {
		if a, ok := md["annotations"].(map[string]any); ok {
			for _, key := range hpaRoundTripAnnotations {
				delete(a, key)
			}
			if len(a) == 0 {
				delete(md, "annotations")
			}
		}
	}
	// Objects are stored as autoscaling/v2 ones: a new one starts with
	// v2's zero status.
	k.prepareCreate = func(obj map[string]any) {
		m, err := toMap(&autoscalingv2.HorizontalPodAutoscaler{})
		if err == nil {
			obj["status"] = m["status"]
		}
	}
	k.defaults = typedDefaults(func(h *autoscalingv1.HorizontalPodAutoscaler) {
		if h.Spec.MinReplicas == nil {
			h.Spec.MinReplicas = ptrTo[int32](1)
		}
	})
	// Validated in the stored (v2) form, as kube-apiserver validates the
	// internal one.
	k.validate = typedValidation(func(h *autoscalingv2.HorizontalPodAutoscaler) field.ErrorList {
		return validateHPASpec(&h.Spec, field.NewPath("spec"))
	})
	k.columns = hpaColumns()
	k.cells = func(obj map[string]any, now time.Time) []any {
		var h autoscalingv1.HorizontalPodAutoscaler
		if err := fromMap(obj, &h); err != nil {
			return nil
		}
		return hpaCells(hpaV1ToV2(&h), now)
	}
}

// dropHPAAnnotations returns a's annotations without the round-trip ones.
func dropHPAAnnotations(a map[string]string) map[string]string {
	found := false
	for _, k := range hpaRoundTripAnnotations {
		if _, ok := a[k]; ok {
			found = true
		}
	}
	if !found {
		return a
	}
	out := make(map[string]string, len(a))
	for k, v := range a {
		out[k] = v
	}
	for _, k := range hpaRoundTripAnnotations {
		delete(out, k)
	}
	return out
}

func hpaV1ToV2(in *autoscalingv1.HorizontalPodAutoscaler) *autoscalingv2.HorizontalPodAutoscaler {
	out := &autoscalingv2.HorizontalPodAutoscaler{
		TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler"},
		ObjectMeta: *in.ObjectMeta.DeepCopy(),
	}
	ref := in.Spec.ScaleTargetRef
	out.Spec.ScaleTargetRef = autoscalingv2.CrossVersionObjectReference{Kind: ref.Kind, Name: ref.Name, APIVersion: ref.APIVersion}
	out.Spec.MinReplicas, out.Spec.MaxReplicas = in.Spec.MinReplicas, in.Spec.MaxReplicas
	if p := in.Spec.TargetCPUUtilizationPercentage; p != nil {
		out.Spec.Metrics = []autoscalingv2.MetricSpec{cpuUtilization(*p)}
	}
	st := &out.Status
	st.ObservedGeneration, st.LastScaleTime = in.Status.ObservedGeneration, in.Status.LastScaleTime
	st.CurrentReplicas, st.DesiredReplicas = in.Status.CurrentReplicas, in.Status.DesiredReplicas
	if p := in.Status.CurrentCPUUtilizationPercentage; p != nil {
		st.CurrentMetrics = []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptrTo(*p)}}}}
	}
	a := in.Annotations
	if enc, ok := a[hpaMetricsAnnotation]; ok {
		var others []autoscalingv1.MetricSpec
		if json.Unmarshal([]byte(enc), &others) == nil {
			metrics := make([]autoscalingv2.MetricSpec, 0, len(others)+len(out.Spec.Metrics))
			for _, m := range others {
				metrics = append(metrics, metricSpecV1ToV2(m))
			}
			out.Spec.Metrics = append(metrics, out.Spec.Metrics...)
		}
	}
	if enc, ok := a[hpaBehaviorAnnotation]; ok {
		var b internalBehavior
		if json.Unmarshal([]byte(enc), &b) == nil && (b.ScaleUp != nil || b.ScaleDown != nil) {
			out.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: b.ScaleUp.v2(), ScaleDown: b.ScaleDown.v2()}
		}
	}
	if enc, ok := a[hpaCurrentMetricsAnnotation]; ok {
		var current []autoscalingv1.MetricStatus
		if json.Unmarshal([]byte(enc), &current) == nil {
			st.CurrentMetrics = make([]autoscalingv2.MetricStatus, len(current))
			for i, m := range current {
				st.CurrentMetrics[i] = metricStatusV1ToV2(m)
			}
		}
	}
	if len(out.Spec.Metrics) == 0 {
		out.Spec.Metrics = []autoscalingv2.MetricSpec{cpuUtilization(80)}
	}
	if enc, ok := a[hpaConditionsAnnotation]; ok {
		var conds []autoscalingv1.HorizontalPodAutoscalerCondition
		if json.Unmarshal([]byte(enc), &conds) == nil {
			st.Conditions = make([]autoscalingv2.HorizontalPodAutoscalerCondition, len(conds))
			for i, c := range conds {
				st.Conditions[i] = autoscalingv2.HorizontalPodAutoscalerCondition{Type: autoscalingv2.HorizontalPodAutoscalerConditionType(c.Type),
					Status: c.Status, LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message}
			}
		}
	}
	out.Annotations = dropHPAAnnotations(out.Annotations)
	return out
}

func hpaV2ToV1(in *autoscalingv2.HorizontalPodAutoscaler) (*autoscalingv1.HorizontalPodAutoscaler, error) {
	out := &autoscalingv1.HorizontalPodAutoscaler{
		TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "HorizontalPodAutoscaler"},
		ObjectMeta: *in.ObjectMeta.DeepCopy(),
	}
	ref := in.Spec.ScaleTargetRef
	out.Spec.ScaleTargetRef = autoscalingv1.CrossVersionObjectReference{Kind: ref.Kind, Name: ref.Name, APIVersion: ref.APIVersion}
	out.Spec.MinReplicas, out.Spec.MaxReplicas = in.Spec.MinReplicas, in.Spec.MaxReplicas
	var others []autoscalingv1.MetricSpec
	for _, m := range in.Spec.Metrics {
		if isCPUUtilization(m) {
			if out.Spec.TargetCPUUtilizationPercentage == nil {
				out.Spec.TargetCPUUtilizationPercentage = ptrTo(*m.Resource.Target.AverageUtilization)
			}
			continue
		}
		others = append(others, metricSpecV2ToV1(m))
	}
	st := in.Status
	out.Status = autoscalingv1.HorizontalPodAutoscalerStatus{ObservedGeneration: st.ObservedGeneration, LastScaleTime: st.LastScaleTime,
		CurrentReplicas: st.CurrentReplicas, DesiredReplicas: st.DesiredReplicas}
	for _, m := range st.CurrentMetrics {
		if m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU && m.Resource.Current.AverageUtilization != nil {
			out.Status.CurrentCPUUtilizationPercentage = ptrTo(*m.Resource.Current.AverageUtilization)
		}
	}
	annotations := dropHPAAnnotations(out.Annotations)
	set := func(key string, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[key] = string(b)
		return nil
	}
	copied := false
	copyOnce := func() {
		if !copied {
			copied = true
			c := make(map[string]string, len(annotations))
			for k, v := range annotations {
				c[k] = v
			}
			annotations = c
		}
	}
	if len(others) > 0 {
		copyOnce()
		if err := set(hpaMetricsAnnotation, others); err != nil {
			return nil, err
		}
	}
	if len(st.CurrentMetrics) > 0 {
		current := make([]autoscalingv1.MetricStatus, len(st.CurrentMetrics))
		for i, m := range st.CurrentMetrics {
			current[i] = metricStatusV2ToV1(m)
		}
		copyOnce()
		if err := set(hpaCurrentMetricsAnnotation, current); err != nil {
			return nil, err
		}
	}
	if b := in.Spec.Behavior; b != nil {
		copyOnce()
		if err := set(hpaBehaviorAnnotation, internalBehavior{ScaleUp: internalRules(b.ScaleUp), ScaleDown: internalRules(b.ScaleDown)}); err != nil {
			return nil, err
		}
	}
	if len(st.Conditions) > 0 {
		conds := make([]autoscalingv1.HorizontalPodAutoscalerCondition, len(st.Conditions))
		for i, c := range st.Conditions {
			conds[i] = autoscalingv1.HorizontalPodAutoscalerCondition{Type: autoscalingv1.HorizontalPodAutoscalerConditionType(c.Type),
				Status: c.Status, LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message}
		}
		copyOnce()
		if err := set(hpaConditionsAnnotation, conds); err != nil {
			return nil, err
		}
	}
	out.Annotations = annotations
	return out, nil
}

func isCPUUtilization(m autoscalingv2.MetricSpec) bool {
	return m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU && m.Resource.Target.AverageUtilization != nil
}

// internalBehavior is the JSON kube-apiserver writes for a behavior in
// the v1 annotation: its internal type's, without JSON tags.
type internalBehavior struct {
	ScaleUp   *internalScalingRules
	ScaleDown *internalScalingRules
}

type internalScalingRules struct {
	StabilizationWindowSeconds *int32
	SelectPolicy               *autoscalingv2.ScalingPolicySelect
	Policies                   []internalScalingPolicy
	Tolerance                  *resource.Quantity
}

type internalScalingPolicy struct {
	Type          autoscalingv2.HPAScalingPolicyType
	Value         int32
	PeriodSeconds int32
}

func internalRules(r *autoscalingv2.HPAScalingRules) *internalScalingRules {
	if r == nil {
		return nil
	}
	out := &internalScalingRules{StabilizationWindowSeconds: r.StabilizationWindowSeconds, SelectPolicy: r.SelectPolicy, Tolerance: r.Tolerance}
	for _, p := range r.Policies {
		out.Policies = append(out.Policies, internalScalingPolicy(p))
	}
	return out
}

func (r *internalScalingRules) v2() *autoscalingv2.HPAScalingRules {
	if r == nil {
		return nil
	}
	out := &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: r.StabilizationWindowSeconds, SelectPolicy: r.SelectPolicy, Tolerance: r.Tolerance}
	for _, p := range r.Policies {
		out.Policies = append(out.Policies, autoscalingv2.HPAScalingPolicy(p))
	}
	return out
}

func metricSpecV2ToV1(m autoscalingv2.MetricSpec) autoscalingv1.MetricSpec {
	out := autoscalingv1.MetricSpec{Type: autoscalingv1.MetricSourceType(m.Type)}
	if s := m.Object; s != nil {
		o := &autoscalingv1.ObjectMetricSource{AverageValue: s.Target.AverageValue, MetricName: s.Metric.Name, Selector: s.Metric.Selector,
			Target: autoscalingv1.CrossVersionObjectReference{Kind: s.DescribedObject.Kind, Name: s.DescribedObject.Name, APIVersion: s.DescribedObject.APIVersion}}
		if s.Target.Value != nil {
			o.TargetValue = *s.Target.Value
		}
		out.Object = o
	}
	if s := m.Pods; s != nil {
		p := &autoscalingv1.PodsMetricSource{MetricName: s.Metric.Name, Selector: s.Metric.Selector}
		if s.Target.AverageValue != nil {
			p.TargetAverageValue = *s.Target.AverageValue
		}
		out.Pods = p
	}
	if s := m.Resource; s != nil {
		out.Resource = &autoscalingv1.ResourceMetricSource{Name: s.Name, TargetAverageUtilization: s.Target.AverageUtilization, TargetAverageValue: s.Target.AverageValue}
	}
	if s := m.ContainerResource; s != nil {
		out.ContainerResource = &autoscalingv1.ContainerResourceMetricSource{Name: s.Name, Container: s.Container,
			TargetAverageUtilization: s.Target.AverageUtilization, TargetAverageValue: s.Target.AverageValue}
	}
	if s := m.External; s != nil {
		out.External = &autoscalingv1.ExternalMetricSource{MetricName: s.Metric.Name, MetricSelector: s.Metric.Selector,
			TargetValue: s.Target.Value, TargetAverageValue: s.Target.AverageValue}
	}
	return out
}

func metricSpecV1ToV2(m autoscalingv1.MetricSpec) autoscalingv2.MetricSpec {
	out := autoscalingv2.MetricSpec{Type: autoscalingv2.MetricSourceType(m.Type)}
	utilizationOr := func(u *int32) autoscalingv2.MetricTargetType {
		if u == nil {
			return autoscalingv2.AverageValueMetricType
		}
		return autoscalingv2.UtilizationMetricType
	}
	if s := m.Object; s != nil {
		t := autoscalingv2.MetricTarget{AverageValue: s.AverageValue}
		if s.AverageValue == nil {
			t.Type, t.Value = autoscalingv2.ValueMetricType, ptrTo(s.TargetValue)
		} else {
			t.Type = autoscalingv2.AverageValueMetricType
			if !s.TargetValue.IsZero() {
				t.Value = ptrTo(s.TargetValue)
			}
		}
		out.Object = &autoscalingv2.ObjectMetricSource{Target: t, Metric: autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.Selector},
			DescribedObject: autoscalingv2.CrossVersionObjectReference{Kind: s.Target.Kind, Name: s.Target.Name, APIVersion: s.Target.APIVersion}}
	}
	if s := m.Pods; s != nil {
		out.Pods = &autoscalingv2.PodsMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.Selector},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptrTo(s.TargetAverageValue)}}
	}
	if s := m.Resource; s != nil {
		out.Resource = &autoscalingv2.ResourceMetricSource{Name: s.Name, Target: autoscalingv2.MetricTarget{Type: utilizationOr(s.TargetAverageUtilization),
			AverageUtilization: s.TargetAverageUtilization, AverageValue: s.TargetAverageValue}}
	}
	if s := m.ContainerResource; s != nil {
		out.ContainerResource = &autoscalingv2.ContainerResourceMetricSource{Name: s.Name, Container: s.Container, Target: autoscalingv2.MetricTarget{
			Type: utilizationOr(s.TargetAverageUtilization), AverageUtilization: s.TargetAverageUtilization, AverageValue: s.TargetAverageValue}}
	}
	if s := m.External; s != nil {
		t := autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: s.TargetValue, AverageValue: s.TargetAverageValue}
		if s.TargetValue == nil {
			t.Type = autoscalingv2.AverageValueMetricType
		}
		out.External = &autoscalingv2.ExternalMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.MetricSelector}, Target: t}
	}
	return out
}

func metricStatusV2ToV1(m autoscalingv2.MetricStatus) autoscalingv1.MetricStatus {
	out := autoscalingv1.MetricStatus{Type: autoscalingv1.MetricSourceType(m.Type)}
	if s := m.Object; s != nil {
		o := &autoscalingv1.ObjectMetricStatus{MetricName: s.Metric.Name, Selector: s.Metric.Selector,
			Target: autoscalingv1.CrossVersionObjectReference{Kind: s.DescribedObject.Kind, Name: s.DescribedObject.Name, APIVersion: s.DescribedObject.APIVersion}}
		if s.Current.Value != nil {
			o.CurrentValue = *s.Current.Value
		}
		if s.Current.AverageValue != nil {
			o.AverageValue = ptrTo(*s.Current.AverageValue)
		}
		out.Object = o
	}
	if s := m.Pods; s != nil {
		p := &autoscalingv1.PodsMetricStatus{MetricName: s.Metric.Name, Selector: s.Metric.Selector}
		if s.Current.AverageValue != nil {
			p.CurrentAverageValue = *s.Current.AverageValue
		}
		out.Pods = p
	}
	if s := m.Resource; s != nil {
		r := &autoscalingv1.ResourceMetricStatus{Name: s.Name, CurrentAverageUtilization: s.Current.AverageUtilization}
		if s.Current.AverageValue != nil {
			r.CurrentAverageValue = *s.Current.AverageValue
		}
		out.Resource = r
	}
	if s := m.ContainerResource; s != nil {
		r := &autoscalingv1.ContainerResourceMetricStatus{Name: s.Name, Container: s.Container, CurrentAverageUtilization: s.Current.AverageUtilization}
		if s.Current.AverageValue != nil {
			r.CurrentAverageValue = *s.Current.AverageValue
		}
		out.ContainerResource = r
	}
	if s := m.External; s != nil {
		e := &autoscalingv1.ExternalMetricStatus{MetricName: s.Metric.Name, MetricSelector: s.Metric.Selector, CurrentAverageValue: s.Current.AverageValue}
		if s.Current.Value != nil {
			e.CurrentValue = *s.Current.Value
		}
		out.External = e
	}
	return out
}

func metricStatusV1ToV2(m autoscalingv1.MetricStatus) autoscalingv2.MetricStatus {
	out := autoscalingv2.MetricStatus{Type: autoscalingv2.MetricSourceType(m.Type)}
	if s := m.Object; s != nil {
		out.Object = &autoscalingv2.ObjectMetricStatus{Current: autoscalingv2.MetricValueStatus{Value: ptrTo(s.CurrentValue), AverageValue: s.AverageValue},
			DescribedObject: autoscalingv2.CrossVersionObjectReference{Kind: s.Target.Kind, Name: s.Target.Name, APIVersion: s.Target.APIVersion},
			Metric:          autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.Selector}}
	}
	if s := m.Pods; s != nil {
		out.Pods = &autoscalingv2.PodsMetricStatus{Current: autoscalingv2.MetricValueStatus{AverageValue: ptrTo(s.CurrentAverageValue)},
			Metric: autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.Selector}}
	}
	if s := m.Resource; s != nil {
		out.Resource = &autoscalingv2.ResourceMetricStatus{Name: s.Name, Current: autoscalingv2.MetricValueStatus{AverageValue: ptrTo(s.CurrentAverageValue), AverageUtilization: s.CurrentAverageUtilization}}
	}
	if s := m.ContainerResource; s != nil {
		out.ContainerResource = &autoscalingv2.ContainerResourceMetricStatus{Name: s.Name, Container: s.Container,
			Current: autoscalingv2.MetricValueStatus{AverageValue: ptrTo(s.CurrentAverageValue), AverageUtilization: s.CurrentAverageUtilization}}
	}
	if s := m.External; s != nil {
		out.External = &autoscalingv2.ExternalMetricStatus{Current: autoscalingv2.MetricValueStatus{Value: ptrTo(s.CurrentValue), AverageValue: s.CurrentAverageValue},
			Metric: autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.MetricSelector}}
	}
	return out
}
