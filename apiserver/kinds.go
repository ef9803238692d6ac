package apiserver

import (
	"reflect"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The table of built-in kinds: one row per kind, with what discovery, the
// router and the write path need (its group, version and resource, scope,
// short names, categories, subresources, selectable fields, storage) and a
// setup function, grouped by API group in builtin.go (the first kinds) and
// kinds_<group>.go, that gives the kind its behaviour (defaults,
// strategy, validation, printer columns) as kube-apiserver v1.37 has it. The Go type of each kind comes from client-go's scheme (every
// k8s.io/api kind); its OpenAPI schema is derived from that type
// (internal/openapi) and its apply schema is client-go's. New only
// builds each row's kind (a few fields); its setup (hooks, columns) runs
// at the kind's first use through the registry (kind.ready), and what is
// derived from it (the zero status of a create, the fast-path schema,
// field managers) at the first write that needs it.

// kindDef is one row of the table.
type kindDef struct {
	gv         schema.GroupVersion
	resource   string
	kind       string
	namespaced bool
	shortNames []string
	categories []string
	// status and scale are the /status and /scale subresources; approval
	// is CSRs' /approval.
	status, approval bool
	scale            *scaleInfo
	// generation: the strategy keeps metadata.generation (1 on create,
	// +1 on each change outside metadata and status).
	generation bool
	fields     []selectableField
	// storage, when set, is the group version objects are stored at when
	// it is not gv (autoscaling/v1 HorizontalPodAutoscalers are stored as
	// autoscaling/v2 ones); convert then converts between the two.
	storage schema.GroupVersion
	convert *conversion
	// newTyped, when set, makes the kind's Go values, for a kind that is
	// not in client-go's scheme (CustomResourceDefinitions).
	newTyped func() any
	// setup gives the kind its behaviour; nil: none beyond the generic one.
	setup func(k *kind)
}

// tableKinds is the table: every built-in kind served but the reviews
// (reviews.go), which store nothing.
func tableKinds() []kindDef {
	gv := func(group, version string) schema.GroupVersion {
		return schema.GroupVersion{Group: group, Version: version}
	}
	core, apps, batch, rbac := gv("", "v1"), gv("apps", "v1"), gv("batch", "v1"), gv("rbac.authorization.k8s.io", "v1")
	networking, admission := gv("networking.k8s.io", "v1"), gv("admissionregistration.k8s.io", "v1")
	all := []string{"all"}
	return []kindDef{
		// The kinds served from the start (builtin.go, rbac.go).
		{gv: core, resource: "namespaces", kind: "Namespace", shortNames: []string{"ns"}, status: true,
			fields: []selectableField{{name: "status.phase", path: []string{"status", "phase"}}}, setup: setupNamespace},
		{gv: core, resource: "configmaps", kind: "ConfigMap", namespaced: true, shortNames: []string{"cm"}, setup: setupConfigMap},
		{gv: core, resource: "secrets", kind: "Secret", namespaced: true, fields: []selectableField{{name: "type", path: []string{"type"}}}, setup: setupSecret},
		{gv: core, resource: "events", kind: "Event", namespaced: true, shortNames: []string{"ev"}, fields: coreEventFields(), setup: setupCoreEvent},
		// Selectors of events.k8s.io/v1 Events apply to the stored (core) form.
		{gv: gv("events.k8s.io", "v1"), resource: "events", kind: "Event", namespaced: true, shortNames: []string{"ev"}, fields: coreEventFields(),
			storage: core, convert: &conversion{toStorage: eventToCore, fromStorage: eventFromCore}, setup: setupEventV1},
		{gv: core, resource: "serviceaccounts", kind: "ServiceAccount", namespaced: true, shortNames: []string{"sa"}, setup: setupServiceAccount},
		{gv: core, resource: "pods", kind: "Pod", namespaced: true, shortNames: []string{"po"}, categories: all, status: true, generation: true,
			fields: podFields(), setup: setupPod},
		{gv: core, resource: "services", kind: "Service", namespaced: true, shortNames: []string{"svc"}, categories: all, status: true,
			fields: []selectableField{{name: "spec.clusterIP", path: []string{"spec", "clusterIP"}}, {name: "spec.type", path: []string{"spec", "type"}}}, setup: setupService},
		{gv: apps, resource: "deployments", kind: "Deployment", namespaced: true, shortNames: []string{"deploy"}, categories: all, status: true, generation: true,
			scale: replicasScale(), setup: setupDeployment},
		{gv: apps, resource: "replicasets", kind: "ReplicaSet", namespaced: true, shortNames: []string{"rs"}, categories: all, status: true, generation: true,
			scale: replicasScale(), fields: []selectableField{{name: "status.replicas", path: []string{"status", "replicas"}}}, setup: setupReplicaSet},
		{gv: gv("coordination.k8s.io", "v1"), resource: "leases", kind: "Lease", namespaced: true, setup: setupLease},
		// apiextensions.k8s.io is not in client-go's scheme: its Go type is
		// k8s.io/apiextensions-apiserver's.
		{gv: gv(apiextensionsv1.GroupName, "v1"), resource: "customresourcedefinitions", kind: "CustomResourceDefinition", shortNames: []string{"crd", "crds"},
			status: true, generation: true, newTyped: func() any { return &apiextensionsv1.CustomResourceDefinition{} }, setup: setupCRD},
		{gv: rbac, resource: "roles", kind: "Role", namespaced: true, setup: setupRBAC(roleGVR)},
		{gv: rbac, resource: "clusterroles", kind: "ClusterRole", setup: setupRBAC(clusterRoleGVR)},
		{gv: rbac, resource: "rolebindings", kind: "RoleBinding", namespaced: true, setup: setupRBAC(roleBindingGVR)},
		{gv: rbac, resource: "clusterrolebindings", kind: "ClusterRoleBinding", setup: setupRBAC(clusterRoleBindingGVR)},
		// The other kinds a controller commonly watches or writes.
		{gv: apps, resource: "statefulsets", kind: "StatefulSet", namespaced: true, shortNames: []string{"sts"}, categories: all,
			status: true, generation: true, scale: replicasScale(), setup: setupStatefulSet},
		{gv: apps, resource: "daemonsets", kind: "DaemonSet", namespaced: true, shortNames: []string{"ds"}, categories: all,
			status: true, generation: true, setup: setupDaemonSet},
		{gv: apps, resource: "controllerrevisions", kind: "ControllerRevision", namespaced: true, setup: setupControllerRevision},
		{gv: batch, resource: "jobs", kind: "Job", namespaced: true, categories: all, status: true, generation: true,
			fields: []selectableField{{name: "status.successful", path: []string{"status", "succeeded"}, absent: "0"}}, setup: setupJob},
		{gv: batch, resource: "cronjobs", kind: "CronJob", namespaced: true, shortNames: []string{"cj"}, categories: all,
			status: true, generation: true, setup: setupCronJob},
		{gv: core, resource: "nodes", kind: "Node", shortNames: []string{"no"}, status: true,
			fields: []selectableField{{name: "spec.unschedulable", path: []string{"spec", "unschedulable"}, absent: "false"}}, setup: setupNode},
		{gv: core, resource: "persistentvolumes", kind: "PersistentVolume", shortNames: []string{"pv"}, status: true, setup: setupPersistentVolume},
		{gv: core, resource: "persistentvolumeclaims", kind: "PersistentVolumeClaim", namespaced: true, shortNames: []string{"pvc"}, status: true,
			setup: setupPersistentVolumeClaim},
		{gv: core, resource: "endpoints", kind: "Endpoints", namespaced: true, shortNames: []string{"ep"}, setup: setupEndpoints},
		{gv: core, resource: "resourcequotas", kind: "ResourceQuota", namespaced: true, shortNames: []string{"quota"}, status: true, setup: setupResourceQuota},
		{gv: core, resource: "limitranges", kind: "LimitRange", namespaced: true, shortNames: []string{"limits"}, setup: setupLimitRange},
		{gv: core, resource: "replicationcontrollers", kind: "ReplicationController", namespaced: true, shortNames: []string{"rc"}, categories: all,
			status: true, generation: true, scale: replicasScale(), fields: []selectableField{{name: "status.replicas", path: []string{"status", "replicas"}, absent: "0"}},
			setup: setupReplicationController},
		{gv: gv("discovery.k8s.io", "v1"), resource: "endpointslices", kind: "EndpointSlice", namespaced: true, generation: true, setup: setupEndpointSlice},
		{gv: networking, resource: "ingresses", kind: "Ingress", namespaced: true, shortNames: []string{"ing"}, status: true, generation: true, setup: setupIngress},
		{gv: networking, resource: "ingressclasses", kind: "IngressClass", generation: true, setup: setupIngressClass},
		{gv: networking, resource: "networkpolicies", kind: "NetworkPolicy", namespaced: true, shortNames: []string{"netpol"}, generation: true, setup: setupNetworkPolicy},
		{gv: gv("policy", "v1"), resource: "poddisruptionbudgets", kind: "PodDisruptionBudget", namespaced: true, shortNames: []string{"pdb"}, status: true, generation: true,
			setup: setupPodDisruptionBudget},
		{gv: gv("storage.k8s.io", "v1"), resource: "storageclasses", kind: "StorageClass", shortNames: []string{"sc"}, setup: setupStorageClass},
		{gv: gv("autoscaling", "v2"), resource: "horizontalpodautoscalers", kind: "HorizontalPodAutoscaler", namespaced: true, shortNames: []string{"hpa"}, categories: all,
			status: true, generation: true, setup: setupHorizontalPodAutoscaler},
		{gv: gv("autoscaling", "v1"), resource: "horizontalpodautoscalers", kind: "HorizontalPodAutoscaler", namespaced: true, shortNames: []string{"hpa"}, categories: all,
			status: true, generation: true, storage: gv("autoscaling", "v2"), convert: hpaV1Conversion(), setup: setupHorizontalPodAutoscalerV1},
		{gv: admission, resource: "validatingwebhookconfigurations", kind: "ValidatingWebhookConfiguration", categories: []string{"api-extensions"}, generation: true,
			setup: setupValidatingWebhookConfiguration},
		{gv: admission, resource: "mutatingwebhookconfigurations", kind: "MutatingWebhookConfiguration", categories: []string{"api-extensions"}, generation: true,
			setup: setupMutatingWebhookConfiguration},
		{gv: gv("scheduling.k8s.io", "v1"), resource: "priorityclasses", kind: "PriorityClass", shortNames: []string{"pc"}, setup: setupPriorityClass},
		{gv: gv("certificates.k8s.io", "v1"), resource: "certificatesigningrequests", kind: "CertificateSigningRequest", shortNames: []string{"csr"},
			status: true, approval: true, fields: []selectableField{{name: "spec.signerName", path: []string{"spec", "signerName"}}}, setup: setupCertificateSigningRequest},
	}
}

// replicasScale is the /scale of kinds with spec.replicas, status.replicas
// and a label selector in spec.selector.
func replicasScale() *scaleInfo {
	return &scaleInfo{specReplicas: []string{"spec", "replicas"}, statusReplicas: []string{"status", "replicas"}, selector: []string{"spec", "selector"}}
}

// build makes the kind a row describes; nil when client-go's scheme does
// not know it (the table's test checks that every row is known).
func (d *kindDef) build() *kind {
	newTyped := d.newTyped
	if newTyped == nil {
		typ, ok := builtinScheme.AllKnownTypes()[d.gv.WithKind(d.kind)]
		if !ok {
			return nil
		}
		newTyped = func() any { return reflect.New(typ).Interface() }
	}
	k := &kind{
		gvr:        d.gv.WithResource(d.resource),
		kind:       d.kind,
		namespaced: d.namespaced,
		shortNames: d.shortNames,
		categories: d.categories,
		status:     d.status,
		approval:   d.approval,
		scale:      d.scale,
		generation: d.generation,
		fields:     d.fields,
		convert:    d.convert,
		newTyped:   newTyped,
	}
	if !d.storage.Empty() {
		k.storageResource = d.storage.Group + "/" + d.resource
		k.storageVersion = d.storage.String()
	}
	if d.status {
		// kube-apiserver's strategies reset the status of a create; the
		// stored object is read back with its type's defaults.
		k.prepareCreate = k.resetStatus
	}
	// The kind's behaviour is set at its first use (kind.ready): New
	// stays cheap however many kinds the table has.
	k.setup = d.setup
	return k
}

// resetStatus replaces the status of a new object by its type's zero
// status, defaulted: what a create through kube-apiserver leaves there.
func (k *kind) resetStatus(obj map[string]any) {
	k.zeroStatusOnce.Do(func() {
		typed := k.newTyped()
		k.applyDefaults(typed)
		m, err := toMap(typed)
		if err == nil {
			k.zeroStatus = m["status"]
		}
	})
	if k.zeroStatus == nil {
		delete(obj, "status")
		return
	}
	obj["status"] = runtime.DeepCopyJSONValue(k.zeroStatus)
}

// applyDefaults applies the defaults of a decoded built-in object (a
// pointer to its Go type), as kube-apiserver's scheme defaulter does on
// decoding; it reports whether the kind has any.
func (k *kind) applyDefaults(obj any) bool {
	if k.defaults == nil {
		return false
	}
	k.defaults(obj)
	return true
}

// typedFunc adapts a function of a kind's Go type T (a pointer) to the
// write path's objects: obj is converted into T, and back into obj when
// f reports a change. An object that does not convert is left to
// validation.
func typedFunc[T any](f func(t *T) bool) func(obj map[string]any) {
	return func(obj map[string]any) {
		t := new(T)
		if err := fromMap(obj, t); err != nil {
			return
		}
		if !f(t) {
			return
		}
		m, err := toMap(t)
		if err != nil {
			return
		}
		clear(obj)
		for key, v := range m {
			obj[key] = v
		}
	}
}

// typedValidation adapts a validation of a kind's Go type T to the write
// path's objects.
func typedValidation[T any](f func(t *T) field.ErrorList) func(obj map[string]any) field.ErrorList {
	return func(obj map[string]any) field.ErrorList {
		t := new(T)
		if err := fromMap(obj, t); err != nil {
			return field.ErrorList{field.Invalid(field.NewPath(""), nil, err.Error())}
		}
		return f(t)
	}
}

// typedUpdateValidation adapts an update validation of a kind's Go type.
func typedUpdateValidation[T any](f func(t, old *T) field.ErrorList) func(obj, old map[string]any) field.ErrorList {
	return func(obj, old map[string]any) field.ErrorList {
		t, o := new(T), new(T)
		if err := fromMap(obj, t); err != nil {
			return field.ErrorList{field.Invalid(field.NewPath(""), nil, err.Error())}
		}
		if err := fromMap(old, o); err != nil {
			return nil
		}
		return f(t, o)
	}
}

// typedSubresourceUpdate adapts a kind's subresourceUpdate on its Go type.
func typedSubresourceUpdate[T any](f func(sub string, t, old *T, now metav1.Time)) func(sub string, obj, old map[string]any, now time.Time) {
	return func(sub string, obj, old map[string]any, now time.Time) {
		prev := new(T)
		if err := fromMap(old, prev); err != nil {
			return
		}
		typedFunc(func(t *T) bool {
			f(sub, t, prev, metav1.NewTime(now.UTC().Truncate(time.Second)))
			return true
		})(obj)
	}
}

// typedSubresourceValidation adapts a kind's validateSubresource.
func typedSubresourceValidation[T any](f func(sub string, t, old *T) field.ErrorList) func(sub string, obj, old map[string]any) field.ErrorList {
	return func(sub string, obj, old map[string]any) field.ErrorList {
		t, o := new(T), new(T)
		if fromMap(obj, t) != nil || fromMap(old, o) != nil {
			return nil // validate reports what does not convert
		}
		return f(sub, t, o)
	}
}

// typedDefaults adapts a defaulting function of a Go type to kind.defaults.
func typedDefaults[T any](f func(t *T)) func(obj any) {
	return func(obj any) {
		if t, ok := obj.(*T); ok {
			f(t)
		}
	}
}

// finishKind fills in what every kind derives from its row: singular and
// list names, verbs, the store resource and name validation.
func finishKind(k *kind) {
	k.singular = strings.ToLower(k.kind)
	k.listKind = k.kind + "List"
	k.verbs = allVerbs
	if k.storageResource == "" {
		k.storageResource = k.gvr.Group + "/" + k.gvr.Resource
		k.storageVersion = k.apiVersion()
	}
	if k.nameValidation == nil {
		k.nameValidation = apivalidation.NameIsDNSSubdomain
	}
}

// validatePodTemplate checks a pod template as far as kube-apiserver's
// ValidatePodTemplateSpec is followed here (the rules a controller's
// template commonly breaks): its volumes' names, at least one container,
// each with a unique DNS-label name and an image, valid ports and
// environment variable names, mounts of volumes that exist (those of the
// template and, for a StatefulSet, of its claim templates: claimVolumes),
// and the enums of its pull, restart and DNS policies.
func validatePodTemplate(t *corev1.PodTemplateSpec, path *field.Path, claimVolumes ...string) field.ErrorList {
	var errs field.ErrorList
	spec := path.Child("spec")
	volumes := map[string]bool{}
	for _, v := range claimVolumes {
		volumes[v] = true
	}
	for i, v := range t.Spec.Volumes {
		p := spec.Child("volumes").Index(i).Child("name")
		switch {
		case v.Name == "":
			errs = append(errs, field.Required(p, ""))
		case volumes[v.Name] && !slices.Contains(claimVolumes, v.Name):
			errs = append(errs, field.Duplicate(p, v.Name))
		default:
			for _, msg := range validation.IsDNS1123Label(v.Name) {
				errs = append(errs, field.Invalid(p, v.Name, msg))
			}
		}
		volumes[v.Name] = true
	}
	cs := t.Spec.Containers
	if len(cs) == 0 {
		errs = append(errs, field.Required(spec.Child("containers"), ""))
	}
	names := map[string]bool{}
	for i, c := range cs {
		p := spec.Child("containers").Index(i)
		if c.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else {
			for _, msg := range validation.IsDNS1123Label(c.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), c.Name, msg))
			}
		}
		if c.Image == "" {
			errs = append(errs, field.Required(p.Child("image"), ""))
		}
		errs = append(errs, validateContainerPorts(c.Ports, p.Child("ports"))...)
		for j, e := range c.Env {
			ep := p.Child("env").Index(j).Child("name")
			if e.Name == "" {
				errs = append(errs, field.Required(ep, ""))
			}
			for _, msg := range validation.IsRelaxedEnvVarName(e.Name) {
				if e.Name != "" {
					errs = append(errs, field.Invalid(ep, e.Name, msg))
				}
			}
		}
		mountPaths := map[string]bool{}
		for j, m := range c.VolumeMounts {
			mp := p.Child("volumeMounts").Index(j)
			if m.Name == "" {
				errs = append(errs, field.Required(mp.Child("name"), ""))
			}
			if !volumes[m.Name] {
				errs = append(errs, field.NotFound(mp.Child("name"), m.Name))
			}
			if m.MountPath == "" {
				errs = append(errs, field.Required(mp.Child("mountPath"), ""))
			}
			if mountPaths[m.MountPath] {
				errs = append(errs, field.Invalid(mp.Child("mountPath"), m.MountPath, "must be unique"))
			}
			mountPaths[m.MountPath] = true
		}
		errs = append(errs, oneOf(p.Child("imagePullPolicy"), string(c.ImagePullPolicy), "Always", "IfNotPresent", "Never")...)
		if names[c.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
		}
		names[c.Name] = true
	}
	errs = append(errs, oneOf(spec.Child("restartPolicy"), string(t.Spec.RestartPolicy), "Always", "OnFailure", "Never")...)
	errs = append(errs, oneOf(spec.Child("dnsPolicy"), string(t.Spec.DNSPolicy), "ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")...)
	return errs
}

// validateContainerPorts is kube-apiserver's check of a container's ports.
func validateContainerPorts(ports []corev1.ContainerPort, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	for i, port := range ports {
		p := path.Index(i)
		if port.Name != "" {
			if msgs := validation.IsValidPortName(port.Name); len(msgs) != 0 {
				for _, msg := range msgs {
					errs = append(errs, field.Invalid(p.Child("name"), port.Name, msg))
				}
			} else if names[port.Name] {
				errs = append(errs, field.Duplicate(p.Child("name"), port.Name))
			} else {
				names[port.Name] = true
			}
		}
		if port.ContainerPort == 0 {
			errs = append(errs, field.Required(p.Child("containerPort"), ""))
		} else {
			for _, msg := range validation.IsValidPortNum(int(port.ContainerPort)) {
				errs = append(errs, field.Invalid(p.Child("containerPort"), int64(port.ContainerPort), msg))
			}
		}
		if port.HostPort != 0 {
			for _, msg := range validation.IsValidPortNum(int(port.HostPort)) {
				errs = append(errs, field.Invalid(p.Child("hostPort"), int64(port.HostPort), msg))
			}
		}
		switch port.Protocol {
		case "":
			errs = append(errs, field.Required(p.Child("protocol"), ""))
		case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
		default:
			errs = append(errs, field.NotSupported(p.Child("protocol"), string(port.Protocol), []string{"SCTP", "TCP", "UDP"}))
		}
	}
	return errs
}

// validateSelector checks a workload's label selector and that it selects
// its pod template's labels, with kube-apiserver's errors; what names the
// kind in "empty selector is invalid for <what>" (none: an empty selector
// is valid). A missing selector is required unless what is "daemonset"
// (kube only says it does not match), and matches no labels.
func validateSelector(sel *metav1.LabelSelector, tmplLabels map[string]string, path *field.Path, what string) field.ErrorList {
	selPath := path.Child("selector")
	mismatch := field.Invalid(path.Child("template", "metadata", "labels"), tmplLabels, "`selector` does not match template `labels`")
	if sel == nil {
		if what == "daemonset" {
			return field.ErrorList{mismatch}
		}
		return field.ErrorList{field.Required(selPath, ""), mismatch}
	}
	errs := metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, selPath)
	if what != "" && len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
		errs = append(errs, field.Invalid(selPath, sel, "empty selector is invalid for "+what))
	}
	if s, err := metav1.LabelSelectorAsSelector(sel); err == nil && !s.Empty() && !s.Matches(labels.Set(tmplLabels)) {
		errs = append(errs, mismatch)
	}
	return errs
}

// nonNegative is kube-apiserver's ValidateNonnegativeField.
func nonNegative(v int64, p *field.Path) field.ErrorList {
	if v < 0 {
		return field.ErrorList{field.Invalid(p, v, "must be greater than or equal to 0")}
	}
	return nil
}

// equalSemantic is kube's apiequality.Semantic.DeepEqual (quantities by
// value).
func equalSemantic(a, b any) bool { return equality.Semantic.DeepEqual(a, b) }

// immutable is kube-apiserver's ValidateImmutableField.
func immutable(v, old any, p *field.Path) field.ErrorList {
	if !equality.Semantic.DeepEqual(v, old) {
		return field.ErrorList{field.Invalid(p, v, "field is immutable")}
	}
	return nil
}

// typedCells adapts a kind's printer (the cells after Name) to the write
// path's objects.
func typedCells[T any](f func(t *T, now time.Time) []any) func(obj map[string]any, now time.Time) []any {
	return func(obj map[string]any, now time.Time) []any {
		t := new(T)
		if err := fromMap(obj, t); err != nil {
			return nil
		}
		return f(t, now)
	}
}

// since is kube's printers' translateTimestampSince.
func since(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// containerCells are the Containers and Images cells of a pod template.
func containerCells(cs []corev1.Container) (names, images string) {
	n, i := make([]string, len(cs)), make([]string, len(cs))
	for j, c := range cs {
		n[j], i[j] = c.Name, c.Image
	}
	return strings.Join(n, ","), strings.Join(i, ",")
}

// defCols makes the columns of a kind whose cells come from kind.cells.
func defCols(cols ...metav1.TableColumnDefinition) []column {
	out := make([]column, len(cols))
	for i, c := range cols {
		out[i] = column{def: c}
	}
	return out
}

func wide(name, typ, desc string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: typ, Description: desc, Priority: 1}
}

var (
	containersCol = wide("Containers", "string", "Names of each container in the template.")
	imagesCol     = wide("Images", "string", "Images referenced by each container in the template.")
)

// betaDeclarative is kind.declarative for kinds whose declarative
// validation is beta in kube-apiserver v1.37 (and so decides): the errors
// of the rules it covers (marked with MarkCoveredByDeclarative) come
// after the others, in its form: an immutable field's value is not
// quoted (null), a required field's error has no detail.
func betaDeclarative(errs field.ErrorList, _ map[string]any, _ bool) field.ErrorList {
	var out, covered field.ErrorList
	for _, e := range errs {
		if !e.CoveredByDeclarative {
			out = append(out, e)
			continue
		}
		c := *e
		switch {
		case c.Type == field.ErrorTypeInvalid && c.Detail == "field is immutable":
			c.BadValue = nil
		case c.Type == field.ErrorTypeRequired:
			c.Detail = ""
		}
		covered = append(covered, &c)
	}
	return append(out, covered...)
}
