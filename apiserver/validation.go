package apiserver

import (
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"kloop.dev/kloop/apiserver/internal/jsontree"
)

// Kind validation of ConfigMaps and Secrets, after kube-apiserver's
// (pkg/apis/core/validation): key names, the 1 MiB bound, the keys each
// Secret type requires, and the immutability of immutable ones.

// maxDataSize bounds the data of a ConfigMap or Secret (core.MaxSecretSize).
const maxDataSize = 1 << 20

func validateConfigMap(o map[string]any) field.ErrorList {
	var errs field.ErrorList
	data, _ := o["data"].(map[string]any)
	bin, _ := o["binaryData"].(map[string]any)
	total := 0
	for k, v := range data {
		for _, msg := range validation.IsConfigMapKey(k) {
			errs = append(errs, field.Invalid(field.NewPath("data").Key(k), k, msg))
		}
		if _, dup := bin[k]; dup {
			errs = append(errs, field.Invalid(field.NewPath("data").Key(k), k, "duplicate of key present in binaryData"))
		}
		s, _ := v.(string)
		total += len(s)
	}
	for k, v := range bin {
		for _, msg := range validation.IsConfigMapKey(k) {
			errs = append(errs, field.Invalid(field.NewPath("binaryData").Key(k), k, msg))
		}
		total += decodedLen(v)
	}
	if total > maxDataSize {
		errs = append(errs, field.TooLong(field.NewPath(""), "", maxDataSize))
	}
	return errs
}

func validateConfigMapUpdate(obj, old map[string]any) field.ErrorList {
	return immutableData(obj, old, "data", "binaryData")
}

// immutableData refuses changes of the data fields of an object whose
// "immutable" is true.
func immutableData(obj, old map[string]any, fields ...string) field.ErrorList {
	if b, _ := old["immutable"].(bool); !b {
		return nil
	}
	var errs field.ErrorList
	if b, _ := obj["immutable"].(bool); !b {
		errs = append(errs, field.Forbidden(field.NewPath("immutable"), "field is immutable when `immutable` is set"))
	}
	for _, f := range fields {
		if !reflect.DeepEqual(emptyAsNil(obj[f]), emptyAsNil(old[f])) {
			errs = append(errs, field.Forbidden(field.NewPath(f), "field is immutable when `immutable` is set"))
		}
	}
	return errs
}

func emptyAsNil(v any) any {
	if m, ok := v.(map[string]any); ok && len(m) == 0 {
		return nil
	}
	return v
}

// decodedLen is the length of a base64 value once decoded.
func decodedLen(v any) int {
	s, _ := v.(string)
	return base64.StdEncoding.DecodedLen(len(s))
}

func validateSecret(o map[string]any) field.ErrorList {
	var errs field.ErrorList
	data, _ := o["data"].(map[string]any)
	dataPath := field.NewPath("data")
	total := 0
	for k, v := range data {
		for _, msg := range validation.IsConfigMapKey(k) {
			errs = append(errs, field.Invalid(dataPath.Key(k), k, msg))
		}
		total += len(secretValue(v))
	}
	if total > maxDataSize {
		errs = append(errs, field.TooLong(dataPath, "", maxDataSize))
	}
	get := func(k string) ([]byte, bool) {
		v, ok := data[k]
		return secretValue(v), ok
	}
	switch corev1.SecretType(jsontree.Str(o, "type")) {
	case corev1.SecretTypeServiceAccountToken:
		if jsontree.Str(o, "metadata", "annotations", corev1.ServiceAccountNameKey) == "" {
			errs = append(errs, field.Required(field.NewPath("metadata", "annotations").Key(corev1.ServiceAccountNameKey), ""))
		}
	case corev1.SecretTypeDockercfg, corev1.SecretTypeDockerConfigJson:
		key := corev1.DockerConfigKey
		if jsontree.Str(o, "type") == string(corev1.SecretTypeDockerConfigJson) {
			key = corev1.DockerConfigJsonKey
		}
		b, ok := get(key)
		if !ok {
			errs = append(errs, field.Required(dataPath.Key(key), ""))
			break
		}
		if err := json.Unmarshal(b, &map[string]any{}); err != nil {
			errs = append(errs, field.Invalid(dataPath.Key(key), "<secret contents redacted>", err.Error()))
		}
	case corev1.SecretTypeBasicAuth:
		_, user := get(corev1.BasicAuthUsernameKey)
		_, pw := get(corev1.BasicAuthPasswordKey)
		if !user && !pw {
			errs = append(errs, field.Required(dataPath.Key(corev1.BasicAuthUsernameKey), ""), field.Required(dataPath.Key(corev1.BasicAuthPasswordKey), ""))
		}
	case corev1.SecretTypeSSHAuth:
		if b, _ := get(corev1.SSHAuthPrivateKey); len(b) == 0 {
			errs = append(errs, field.Required(dataPath.Key(corev1.SSHAuthPrivateKey), ""))
		}
	case corev1.SecretTypeTLS:
		if _, ok := get(corev1.TLSCertKey); !ok {
			errs = append(errs, field.Required(dataPath.Key(corev1.TLSCertKey), ""))
		}
		if _, ok := get(corev1.TLSPrivateKeyKey); !ok {
			errs = append(errs, field.Required(dataPath.Key(corev1.TLSPrivateKeyKey), ""))
		}
	}
	return errs
}

func validateSecretUpdate(obj, old map[string]any) field.ErrorList {
	var errs field.ErrorList
	if t, ot := jsontree.Str(obj, "type"), jsontree.Str(old, "type"); t != ot {
		errs = append(errs, field.Invalid(field.NewPath("type"), t, "field is immutable"))
	}
	return append(errs, immutableData(obj, old, "data")...)
}

// secretValue decodes a stored (base64) Secret value.
func secretValue(v any) []byte {
	s, _ := v.(string)
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return []byte(s)
	}
	return b
}

// secretWarnings warns, as kube-apiserver does, when a TLS Secret's
// certificate and key do not make a key pair.
func secretWarnings(o map[string]any) []string {
	if jsontree.Str(o, "type") != string(corev1.SecretTypeTLS) {
		return nil
	}
	data, _ := o["data"].(map[string]any)
	if _, err := tls.X509KeyPair(secretValue(data[corev1.TLSCertKey]), secretValue(data[corev1.TLSPrivateKeyKey])); err != nil {
		return []string{err.Error()}
	}
	return nil
}

// validateDeployment is kube-apiserver's validation of a Deployment's
// spec: its numbers, its selector and pod template (as a ReplicaSet's),
// its strategy.
func validateDeployment(d *appsv1.Deployment) field.ErrorList {
	spec := field.NewPath("spec")
	sp := &d.Spec
	errs := nonNegative(int64(deref(sp.Replicas)), spec.Child("replicas"))
	errs = append(errs, validateReplicaSetTemplate(sp.Selector, &sp.Template, spec)...)
	st := spec.Child("strategy")
	switch sp.Strategy.Type {
	case appsv1.RecreateDeploymentStrategyType:
		if sp.Strategy.RollingUpdate != nil {
			errs = append(errs, field.Forbidden(st.Child("rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'"))
		}
	case appsv1.RollingUpdateDeploymentStrategyType:
		ru := sp.Strategy.RollingUpdate
		if ru == nil {
			errs = append(errs, field.Required(st.Child("rollingUpdate"), "this should be defaulted and never be nil"))
			break
		}
		var mu, ms intstr.IntOrString
		if ru.MaxUnavailable != nil {
			mu = *ru.MaxUnavailable
		}
		if ru.MaxSurge != nil {
			ms = *ru.MaxSurge
		}
		rp := st.Child("rollingUpdate")
		errs = append(errs, positiveIntOrPercent(mu, rp.Child("maxUnavailable"))...)
		errs = append(errs, positiveIntOrPercent(ms, rp.Child("maxSurge"))...)
		if intOrPercentValue(mu) == 0 && intOrPercentValue(ms) == 0 {
			errs = append(errs, field.Invalid(rp.Child("maxUnavailable"), mu, "may not be 0 when `maxSurge` is 0"))
		}
		errs = append(errs, notMoreThan100Percent(mu, rp.Child("maxUnavailable"))...)
	default:
		errs = append(errs, field.NotSupported(st, sp.Strategy, []string{"Recreate", "RollingUpdate"}))
	}
	errs = append(errs, nonNegative(int64(sp.MinReadySeconds), spec.Child("minReadySeconds"))...)
	if sp.RevisionHistoryLimit != nil {
		errs = append(errs, nonNegative(int64(*sp.RevisionHistoryLimit), spec.Child("revisionHistoryLimit"))...)
	}
	if p := sp.ProgressDeadlineSeconds; p != nil {
		errs = append(errs, nonNegative(int64(*p), spec.Child("progressDeadlineSeconds"))...)
		if *p <= sp.MinReadySeconds {
			errs = append(errs, field.Invalid(spec.Child("progressDeadlineSeconds"), int64(*p), "must be greater than minReadySeconds"))
		}
	}
	return errs
}

// validateReplicaSet is kube-apiserver's validation of a ReplicaSet's spec.
func validateReplicaSet(rs *appsv1.ReplicaSet) field.ErrorList {
	spec := field.NewPath("spec")
	errs := nonNegative(int64(deref(rs.Spec.Replicas)), spec.Child("replicas"))
	errs = append(errs, nonNegative(int64(rs.Spec.MinReadySeconds), spec.Child("minReadySeconds"))...)
	return append(errs, validateReplicaSetTemplate(rs.Spec.Selector, &rs.Spec.Template, spec)...)
}

// validateReplicaSetTemplate checks the selector and pod template of a
// Deployment or a ReplicaSet (kube says "deployment" for both).
func validateReplicaSetTemplate(sel *metav1.LabelSelector, tmpl *corev1.PodTemplateSpec, spec *field.Path) field.ErrorList {
	errs := validateSelector(sel, tmpl.Labels, spec, "deployment")
	tp := spec.Child("template")
	errs = append(errs, validatePodTemplate(tmpl, tp)...)
	if tmpl.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(tp.Child("spec", "restartPolicy"), string(tmpl.Spec.RestartPolicy), []string{"Always"}))
	}
	if tmpl.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(tp.Child("spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in ReplicaSet is not Supported"))
	}
	return errs
}

// validateService checks a Service's ports and that only load balancers
// have load balancer ingress.
func validateService(o map[string]any) field.ErrorList {
	var errs field.ErrorList
	typ := jsontree.Str(o, "spec", "type")
	ports, _ := jsontree.Get(o, "spec", "ports").([]any)
	if len(ports) == 0 && typ != string(corev1.ServiceTypeExternalName) && jsontree.Str(o, "spec", "clusterIP") != corev1.ClusterIPNone {
		errs = append(errs, field.Required(field.NewPath("spec", "ports"), ""))
	}
	const portRange = "must be between 1 and 65535, inclusive"
	for i, p := range ports {
		path := field.NewPath("spec", "ports").Index(i)
		if n := jsontree.Int(p, "port"); n < 1 || n > 65535 {
			errs = append(errs, field.Invalid(path.Child("port"), n, portRange))
		}
		if tp, ok := jsontree.Get(p, "targetPort").(int64); ok && (tp < 1 || tp > 65535) {
			errs = append(errs, field.Invalid(path.Child("targetPort"), tp, portRange))
		}
	}
	if ingress, _ := jsontree.Get(o, "status", "loadBalancer", "ingress").([]any); len(ingress) > 0 && typ != string(corev1.ServiceTypeLoadBalancer) {
		errs = append(errs, field.Forbidden(field.NewPath("status", "loadBalancer", "ingress"), "may only be used when `spec.type` is 'LoadBalancer'"))
	}
	return errs
}

// validateNamespace checks that a namespace is Terminating exactly when it
// is being deleted.
func validateNamespace(o map[string]any) field.ErrorList {
	phase, deleting := jsontree.Str(o, "status", "phase"), jsontree.Str(o, "metadata", "deletionTimestamp") != ""
	switch {
	case deleting && phase != string(corev1.NamespaceTerminating):
		return field.ErrorList{field.Invalid(field.NewPath("status", "Phase"), phase, "may only be 'Terminating' if `deletionTimestamp` is not empty")}
	case !deleting && phase != string(corev1.NamespaceActive):
		return field.ErrorList{field.Invalid(field.NewPath("status", "Phase"), phase, "may only be 'Active' if `deletionTimestamp` is empty")}
	}
	return nil
}

// Lengths kube-apiserver allows in an Event's reportingInstance, action,
// reason and message, when the Event has an eventTime.
const (
	eventReportingInstanceMax = 128
	eventActionMax            = 128
	eventReasonMax            = 128
	eventMessageMax           = 1024
)

// validateCoreEvent is kube-apiserver's validation of a core/v1 Event: one
// without an eventTime (the old kind) must name its involved object's
// namespace as its own (or none, in "default"); one with an eventTime needs
// the reporting fields, an action and a reason, within their lengths.
func validateCoreEvent(o map[string]any) field.ErrorList {
	var errs field.ErrorList
	ns := jsontree.Str(o, "metadata", "namespace")
	involvedNS := jsontree.Str(o, "involvedObject", "namespace")
	mismatch := func() {
		errs = append(errs, field.Invalid(field.NewPath("involvedObject", "namespace"), involvedNS, "does not match event.namespace"))
	}
	if t, _ := o["eventTime"].(string); t == "" {
		switch {
		case involvedNS == "" && ns != metav1.NamespaceNone && ns != metav1.NamespaceDefault:
			mismatch()
		case involvedNS != "" && involvedNS != ns:
			mismatch()
		}
		return errs
	}
	if involvedNS == "" && ns != metav1.NamespaceDefault && ns != metav1.NamespaceSystem {
		mismatch()
	}
	component := jsontree.Str(o, "reportingComponent")
	if component == "" {
		errs = append(errs, field.Required(field.NewPath("reportingComponent"), ""))
	}
	for _, msg := range validation.IsQualifiedName(component) {
		errs = append(errs, field.Invalid(field.NewPath("reportingComponent"), component, msg))
	}
	for _, f := range []struct {
		name     string
		max      int
		required bool
	}{
		{"reportingInstance", eventReportingInstanceMax, true},
		{"action", eventActionMax, true},
		{"reason", eventReasonMax, true},
		{"message", eventMessageMax, false},
	} {
		v := jsontree.Str(o, f.name)
		if v == "" && f.required {
			errs = append(errs, field.Required(field.NewPath(f.name), ""))
		}
		if len(v) > f.max {
			errs = append(errs, field.Invalid(field.NewPath(f.name), "", fmt.Sprintf("can have at most %d characters", f.max)))
		}
	}
	return errs
}

// validateLease is kube-apiserver's validation of a Lease's spec: a
// duration, when set, above 0, and transitions not below 0.
func validateLease(o map[string]any) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if v, ok := jsontree.Get(o, "spec", "leaseDurationSeconds").(int64); ok && v <= 0 {
		errs = append(errs, field.Invalid(spec.Child("leaseDurationSeconds"), v, "must be greater than 0"))
	}
	if v, ok := jsontree.Get(o, "spec", "leaseTransitions").(int64); ok && v < 0 {
		errs = append(errs, field.Invalid(spec.Child("leaseTransitions"), v, "must be greater than or equal to 0"))
	}
	return errs
}

// dropLeaseStrategy drops a Lease's strategy and preferredHolder, the
// fields of coordinated leader election, a feature kube-apiserver v1.37
// leaves off (it drops them unless the old object, on an update, has one).
func dropLeaseStrategy(obj, old map[string]any) {
	if old != nil && (jsontree.Get(old, "spec", "strategy") != nil || jsontree.Get(old, "spec", "preferredHolder") != nil) {
		return
	}
	if spec, ok := obj["spec"].(map[string]any); ok {
		delete(spec, "strategy")
		delete(spec, "preferredHolder")
	}
}
