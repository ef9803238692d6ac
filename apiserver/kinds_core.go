package apiserver

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"kloop.dev/kloop/apiserver/internal/jsontree"
)

// core/v1 Nodes, PersistentVolumes, PersistentVolumeClaims, Endpoints,
// ResourceQuotas, LimitRanges and ReplicationControllers, after
// kube-apiserver v1.37's defaults (pkg/apis/core/v1), strategies
// (pkg/registry/core), admission (TaintNodesByCondition,
// StorageObjectInUseProtection) and validation (pkg/apis/core/validation).
// Nothing runs them: no kubelet reports Nodes, no controller binds claims
// or counts quota.

const (
	isNegativeMsg    = "must be greater than or equal to 0"
	isNotPositiveMsg = "must be greater than zero"
	isNotIntegerMsg  = "must be an integer"
)

func setupNode(k *kind) {
	k.prepareCreate = nil // a Node is created with its status (by its kubelet)
	k.defaults = typedDefaults(func(n *corev1.Node) {
		st := &n.Status
		if st.Allocatable == nil && st.Capacity != nil {
			st.Allocatable = st.Capacity.DeepCopy()
		}
		roundUp(st.Capacity)
		roundUp(st.Allocatable)
	})
	// TaintNodesByCondition: a new Node is not ready until its controller
	// says otherwise.
	k.strategyCreate = typedFunc(func(n *corev1.Node) bool {
		for _, t := range n.Spec.Taints {
			if t.Key == corev1.TaintNodeNotReady && t.Effect == corev1.TaintEffectNoSchedule {
				return false
			}
		}
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule})
		return true
	})
	k.validate = typedValidation(func(n *corev1.Node) field.ErrorList {
		var errs field.ErrorList
		// kube-apiserver names the taints' path metadata.taints.
		path := field.NewPath("metadata", "taints")
		seen := map[corev1.TaintEffect]map[string]bool{}
		for i, t := range n.Spec.Taints {
			p := path.Index(i)
			errs = append(errs, metav1validation.ValidateLabelName(t.Key, p.Child("key"))...)
			if msgs := validation.IsValidLabelValue(t.Value); len(msgs) != 0 {
				errs = append(errs, field.Invalid(p.Child("value"), t.Value, strings.Join(msgs, ";")))
			}
			switch t.Effect {
			case "":
				errs = append(errs, field.Required(p.Child("effect"), ""))
			case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
			default:
				errs = append(errs, field.NotSupported(p.Child("effect"), string(t.Effect), []string{"NoSchedule", "PreferNoSchedule", "NoExecute"}))
			}
			if seen[t.Effect][t.Key] {
				e := field.Duplicate(p, t)
				e.Detail = "taints must be unique by key and effect pair"
				errs = append(errs, e)
				continue
			}
			if seen[t.Effect] == nil {
				seen[t.Effect] = map[string]bool{}
			}
			seen[t.Effect][t.Key] = true
		}
		for _, r := range []struct {
			name string
			list corev1.ResourceList
		}{{"capacity", n.Status.Capacity}, {"allocatable", n.Status.Allocatable}} {
			for name, q := range r.list {
				errs = append(errs, resourceQuantity(string(name), q, field.NewPath("status", r.name, string(name)))...)
			}
		}
		return errs
	})
	st, info := corev1.NodeStatus{}.SwaggerDoc(), corev1.NodeSystemInfo{}.SwaggerDoc()
	k.columns = defCols(def("Status", "string", "The status of the node"), def("Roles", "string", "The roles of the node"), ageColumn().def,
		def("Version", "string", info["kubeletVersion"]), wide("Internal-IP", "string", st["addresses"]), wide("External-IP", "string", st["addresses"]),
		wide("OS-Image", "string", info["osImage"]), wide("Kernel-Version", "string", info["kernelVersion"]), wide("Container-Runtime", "string", info["containerRuntimeVersion"]))
	k.cells = typedCells(func(n *corev1.Node, now time.Time) []any {
		var status []string
		for _, c := range n.Status.Conditions {
			if c.Type != corev1.NodeReady {
				continue
			}
			if c.Status == corev1.ConditionTrue {
				status = []string{string(c.Type)}
			} else {
				status = []string{"Not" + string(c.Type)}
			}
		}
		if len(status) == 0 {
			status = []string{"Unknown"}
		}
		if n.Spec.Unschedulable {
			status = append(status, "SchedulingDisabled")
		}
		roles := map[string]bool{}
		for key, v := range n.Labels {
			switch {
			case strings.HasPrefix(key, "node-role.kubernetes.io/"):
				if r := strings.TrimPrefix(key, "node-role.kubernetes.io/"); r != "" {
					roles[r] = true
				}
			case key == "kubernetes.io/role" && v != "":
				roles[v] = true
			}
		}
		roleList := slices.Sorted(mapKeys(roles))
		rolesCell := strings.Join(roleList, ",")
		if rolesCell == "" {
			rolesCell = "<none>"
		}
		address := func(t corev1.NodeAddressType) string {
			for _, a := range n.Status.Addresses {
				if a.Type == t {
					return a.Address
				}
			}
			return "<none>"
		}
		ni := n.Status.NodeInfo
		osImage, kernel, runtime := orUnknown(ni.OSImage), orUnknown(ni.KernelVersion), orUnknown(ni.ContainerRuntimeVersion)
		if ni.Architecture != "" {
			kernel += " (" + ni.Architecture + ")"
		}
		return []any{strings.Join(status, ","), rolesCell, since(n.CreationTimestamp, now), ni.KubeletVersion,
			address(corev1.NodeInternalIP), address(corev1.NodeExternalIP), osImage, kernel, runtime}
	})
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for key := range m {
			if !yield(key) {
				return
			}
		}
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "<unknown>"
	}
	return s
}

// resourceQuantity is kube-apiserver's ValidateResourceQuantityValue.
func resourceQuantity(name string, q resource.Quantity, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if q.Cmp(resource.Quantity{}) < 0 {
		errs = append(errs, field.Invalid(p, q.String(), isNegativeMsg))
	}
	if integerResource(name) && q.MilliValue()%1000 != 0 {
		errs = append(errs, field.Invalid(p, q, isNotIntegerMsg))
	}
	return errs
}

// integerResource reports whether a resource is counted in integers.
func integerResource(name string) bool {
	switch corev1.ResourceName(name) {
	case corev1.ResourcePods, corev1.ResourceQuotas, corev1.ResourceServices, corev1.ResourceReplicationControllers, corev1.ResourceSecrets,
		corev1.ResourceConfigMaps, corev1.ResourcePersistentVolumeClaims, corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers:
		return true
	}
	// Extended resources: domain-prefixed names outside kubernetes.io,
	// and requests.<extended>.
	n := strings.TrimPrefix(name, "requests.")
	return strings.Contains(n, "/") && !strings.Contains(n, "kubernetes.io/") && !strings.HasPrefix(n, "kubernetes.io/")
}

// addFinalizer adds a finalizer to an object that lacks it.
func addFinalizer(obj map[string]any, f string) {
	m := meta(obj)
	fs, _ := m["finalizers"].([]any)
	for _, x := range fs {
		if x == f {
			return
		}
	}
	m["finalizers"] = append(fs, f)
}

var supportedAccessModes = []string{"ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"}

// validateAccessModes checks the access modes of a volume or a claim.
func validateAccessModes(modes []corev1.PersistentVolumeAccessMode, p *field.Path, requiredDetail string) field.ErrorList {
	var errs field.ErrorList
	if len(modes) == 0 {
		errs = append(errs, field.Required(p, requiredDetail))
	}
	rwop, other := false, false
	for _, m := range modes {
		if !slices.Contains(supportedAccessModes, string(m)) {
			errs = append(errs, field.NotSupported(p, string(m), supportedAccessModes))
			continue
		}
		if m == corev1.ReadWriteOncePod {
			rwop = true
		} else {
			other = true
		}
	}
	if rwop && other {
		errs = append(errs, field.Forbidden(p, "may not use ReadWriteOncePod with other access modes"))
	}
	return errs
}

// accessModesString is kube's printers' short form of access modes.
func accessModesString(modes []corev1.PersistentVolumeAccessMode) string {
	var out []string
	for _, m := range []struct {
		mode  corev1.PersistentVolumeAccessMode
		short string
	}{{corev1.ReadWriteOnce, "RWO"}, {corev1.ReadOnlyMany, "ROX"}, {corev1.ReadWriteMany, "RWX"}, {corev1.ReadWriteOncePod, "RWOP"}} {
		if slices.Contains(modes, m.mode) {
			out = append(out, m.short)
		}
	}
	return strings.Join(out, ",")
}

const betaStorageClassAnnotation = "volume.beta.kubernetes.io/storage-class"

func setupPersistentVolume(k *kind) {
	k.returnsDeleted = true
	k.defaults = typedDefaults(func(pv *corev1.PersistentVolume) {
		if pv.Status.Phase == "" {
			pv.Status.Phase = corev1.VolumePending
		}
		if pv.Spec.PersistentVolumeReclaimPolicy == "" {
			pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
		}
		if pv.Spec.VolumeMode == nil {
			pv.Spec.VolumeMode = ptrTo(corev1.PersistentVolumeFilesystem)
		}
		if hp := pv.Spec.HostPath; hp != nil && hp.Type == nil {
			hp.Type = ptrTo(corev1.HostPathUnset)
		}
		roundUp(pv.Spec.Capacity)
	})
	// StorageObjectInUseProtection: a volume goes only once unused.
	k.strategyCreate = func(obj map[string]any) { addFinalizer(obj, "kubernetes.io/pv-protection") }
	// The strategy starts a volume Pending, at the time of its create.
	k.admit = func(s *Server, obj map[string]any) error {
		obj["status"] = map[string]any{"phase": "Pending", "lastPhaseTransitionTime": s.opts.Now().UTC().Format(time.RFC3339)}
		return nil
	}
	k.carryOver = func(obj, old map[string]any) {
		// A status write that changes the phase moves its transition time
		// (unless it sets a new one); one that keeps it keeps the time.
		phase, oldPhase := jsontree.Str(obj, "status", "phase"), jsontree.Str(old, "status", "phase")
		t, oldT := jsontree.Get(obj, "status", "lastPhaseTransitionTime"), jsontree.Get(old, "status", "lastPhaseTransitionTime")
		switch {
		case phase == oldPhase && t == nil && oldT != nil:
			jsontree.Set(obj, oldT, "status", "lastPhaseTransitionTime")
		case phase != oldPhase && (t == nil || jsontree.Equal(t, oldT)):
			jsontree.Set(obj, time.Now().UTC().Format(time.RFC3339), "status", "lastPhaseTransitionTime")
		}
	}
	k.validate = typedValidation(func(pv *corev1.PersistentVolume) field.ErrorList {
		spec := field.NewPath("spec")
		errs := validateAccessModes(pv.Spec.AccessModes, spec.Child("accessModes"), "")
		if len(pv.Spec.Capacity) == 0 {
			errs = append(errs, field.Required(spec.Child("capacity"), ""))
		}
		if _, ok := pv.Spec.Capacity[corev1.ResourceStorage]; !ok || len(pv.Spec.Capacity) > 1 {
			errs = append(errs, field.NotSupported(spec.Child("capacity"), pv.Spec.Capacity, []string{"storage"}))
		}
		for r, q := range pv.Spec.Capacity {
			if q.Cmp(resource.Quantity{}) <= 0 {
				errs = append(errs, field.Invalid(spec.Child("capacity").Key(string(r)), q.String(), isNotPositiveMsg))
			}
		}
		if p := pv.Spec.PersistentVolumeReclaimPolicy; p != "" && p != corev1.PersistentVolumeReclaimDelete && p != corev1.PersistentVolumeReclaimRecycle && p != corev1.PersistentVolumeReclaimRetain {
			errs = append(errs, field.NotSupported(spec.Child("persistentVolumeReclaimPolicy"), string(p), []string{"Delete", "Recycle", "Retain"}))
		}
		if pv.Spec.PersistentVolumeSource == (corev1.PersistentVolumeSource{}) {
			errs = append(errs, field.Required(spec, "must specify a volume type"))
		}
		return errs
	})
	sp := corev1.PersistentVolumeSpec{}.SwaggerDoc()
	k.columns = defCols(def("Capacity", "string", sp["capacity"]), def("Access Modes", "string", sp["accessModes"]),
		def("Reclaim Policy", "string", sp["persistentVolumeReclaimPolicy"]), def("Status", "string", corev1.PersistentVolumeStatus{}.SwaggerDoc()["phase"]),
		def("Claim", "string", sp["claimRef"]), def("StorageClass", "string", "StorageClass of the pv"), def("VolumeAttributesClass", "string", "VolumeAttributesClass of the pv"),
		def("Reason", "string", corev1.PersistentVolumeStatus{}.SwaggerDoc()["reason"]), ageColumn().def, wide("VolumeMode", "string", sp["volumeMode"]))
	k.cells = typedCells(func(pv *corev1.PersistentVolume, now time.Time) []any {
		claim := ""
		if r := pv.Spec.ClaimRef; r != nil {
			claim = r.Namespace + "/" + r.Name
		}
		size := pv.Spec.Capacity[corev1.ResourceStorage]
		phase := string(pv.Status.Phase)
		if pv.DeletionTimestamp != nil {
			phase = "Terminating"
		}
		class := pv.Spec.StorageClassName
		if c, ok := pv.Annotations[betaStorageClassAnnotation]; ok {
			class = c
		}
		return []any{size.String(), accessModesString(pv.Spec.AccessModes), string(pv.Spec.PersistentVolumeReclaimPolicy), phase, claim,
			class, orUnset(pv.Spec.VolumeAttributesClassName), pv.Status.Reason, since(pv.CreationTimestamp, now), orUnset((*string)(pv.Spec.VolumeMode))}
	})
}

func orUnset(s *string) string {
	if s == nil {
		return "<unset>"
	}
	return *s
}

func setupPersistentVolumeClaim(k *kind) {
	k.returnsDeleted = true
	k.admitUpdate = admitPVCResize
	k.defaults = typedDefaults(defaultPVC)
	k.strategyCreate = func(obj map[string]any) { addFinalizer(obj, "kubernetes.io/pvc-protection") }
	k.validate = typedValidation(func(c *corev1.PersistentVolumeClaim) field.ErrorList {
		return validatePVCSpec(&c.Spec, field.NewPath("spec"))
	})
	k.validateUpdate = typedUpdateValidation(func(c, old *corev1.PersistentVolumeClaim) field.ErrorList {
		// The spec of a claim is immutable, but for the volume it is
		// bound to (set once) and, once bound, its storage request.
		next, prev := c.Spec.DeepCopy(), old.Spec.DeepCopy()
		if prev.VolumeName == "" {
			prev.VolumeName = next.VolumeName
		}
		if _, annotated := old.Annotations[betaStorageClassAnnotation]; prev.StorageClassName == nil && !annotated {
			// A claim without a class may get one (retroactive default
			// StorageClass assignment).
			prev.StorageClassName = next.StorageClassName
		}
		if c.Status.Phase == corev1.ClaimBound {
			if next.Resources.Requests != nil {
				next.Resources.Requests[corev1.ResourceStorage] = old.Spec.Resources.Requests[corev1.ResourceStorage]
			}
			next.VolumeAttributesClassName = prev.VolumeAttributesClassName
		}
		var errs field.ErrorList
		if !equalSemantic(next, prev) {
			errs = append(errs, field.Forbidden(field.NewPath("spec"), "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"))
		}
		newSize, oldSize := c.Spec.Resources.Requests[corev1.ResourceStorage], old.Spec.Resources.Requests[corev1.ResourceStorage]
		statusSize := old.Status.Capacity[corev1.ResourceStorage]
		if newSize.Cmp(oldSize) < 0 && newSize.Cmp(statusSize) <= 0 {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "resources", "requests", "storage"), "field can not be less than status.capacity"))
		}
		return errs
	})
	sp, st := corev1.PersistentVolumeClaimSpec{}.SwaggerDoc(), corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()
	k.columns = defCols(def("Status", "string", st["phase"]), def("Volume", "string", sp["volumeName"]), def("Capacity", "string", st["capacity"]),
		def("Access Modes", "string", st["accessModes"]), def("StorageClass", "string", "StorageClass of the pvc"),
		def("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc"), ageColumn().def, wide("VolumeMode", "string", sp["volumeMode"]))
	k.cells = typedCells(func(c *corev1.PersistentVolumeClaim, now time.Time) []any {
		phase := string(c.Status.Phase)
		if c.DeletionTimestamp != nil {
			phase = "Terminating"
		}
		capacity, modes := "", ""
		if c.Spec.VolumeName != "" {
			modes = accessModesString(c.Status.AccessModes)
			q := c.Status.Capacity[corev1.ResourceStorage]
			capacity = q.String()
		}
		return []any{phase, c.Spec.VolumeName, capacity, modes, pvcClass(c), orUnset(c.Spec.VolumeAttributesClassName), since(c.CreationTimestamp, now), orUnset((*string)(c.Spec.VolumeMode))}
	})
}

// admitPVCResize is kube-apiserver's PersistentVolumeClaimResize admission:
// a claim's storage request grows only once bound, and only when its
// StorageClass allows volume expansion.
func admitPVCResize(s *Server, obj, old map[string]any) error {
	var c, prev corev1.PersistentVolumeClaim
	if fromMap(obj, &c) != nil || fromMap(old, &prev) != nil {
		return nil
	}
	newSize, oldSize := c.Spec.Resources.Requests[corev1.ResourceStorage], prev.Spec.Resources.Requests[corev1.ResourceStorage]
	if newSize.Cmp(oldSize) <= 0 {
		return nil
	}
	forbidden := func(msg string) error {
		return apierrors.NewForbidden(schema.GroupResource{Resource: "persistentvolumeclaims"}, c.Name, errors.New(msg))
	}
	if prev.Status.Phase != corev1.ClaimBound {
		return forbidden("Only bound persistent volume claims can be expanded")
	}
	class, oldClass := pvcClass(&c), pvcClass(&prev)
	allowed := false
	if class != "" && class == oldClass {
		if o, err := s.store.Get("storage.k8s.io/storageclasses", "", class); err == nil {
			if m, err := decodeMap(o.Data); err == nil {
				allowed, _ = m["allowVolumeExpansion"].(bool)
			}
		}
	}
	if !allowed {
		return forbidden("only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize")
	}
	return nil
}

// pvcClass is a claim's StorageClass: the beta annotation's, else its spec's.
func pvcClass(c *corev1.PersistentVolumeClaim) string {
	if a, ok := c.Annotations[betaStorageClassAnnotation]; ok {
		return a
	}
	if c.Spec.StorageClassName != nil {
		return *c.Spec.StorageClassName
	}
	return ""
}

// validatePVCSpec is kube-apiserver's claim spec validation (claims and
// StatefulSets' templates) for what controllers write: access modes and
// the storage request.
func validatePVCSpec(sp *corev1.PersistentVolumeClaimSpec, path *field.Path) field.ErrorList {
	errs := validateAccessModes(sp.AccessModes, path.Child("accessModes"), "at least 1 access mode is required")
	if sp.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(sp.Selector, metav1validation.LabelSelectorValidationOptions{}, path.Child("selector"))...)
	}
	storagePath := path.Child("resources").Key(string(corev1.ResourceStorage))
	switch q, ok := sp.Resources.Requests[corev1.ResourceStorage]; {
	case !ok:
		errs = append(errs, field.Required(storagePath, ""))
	case q.Cmp(resource.Quantity{}) <= 0:
		errs = append(errs, field.Invalid(storagePath, q.String(), isNotPositiveMsg))
	}
	if c := sp.StorageClassName; c != nil && *c != "" {
		for _, msg := range validation.IsDNS1123Subdomain(*c) {
			errs = append(errs, field.Invalid(path.Child("storageClassName"), *c, msg))
		}
	}
	if m := sp.VolumeMode; m != nil && *m != corev1.PersistentVolumeBlock && *m != corev1.PersistentVolumeFilesystem {
		errs = append(errs, field.NotSupported(path.Child("volumeMode"), string(*m), []string{"Block", "Filesystem"}))
	}
	return errs
}

func setupEndpoints(k *kind) {
	k.deprecated = "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"
	k.defaults = typedDefaults(func(e *corev1.Endpoints) {
		for i := range e.Subsets {
			for j := range e.Subsets[i].Ports {
				if p := &e.Subsets[i].Ports[j]; p.Protocol == "" {
					p.Protocol = corev1.ProtocolTCP
				}
			}
		}
	})
	k.validate = typedValidation(func(e *corev1.Endpoints) field.ErrorList {
		var errs field.ErrorList
		for i, ss := range e.Subsets {
			p := field.NewPath("subsets").Index(i)
			if len(ss.Addresses) == 0 && len(ss.NotReadyAddresses) == 0 {
				errs = append(errs, field.Required(p, "must specify `addresses` or `notReadyAddresses`"))
			}
			for _, a := range []struct {
				name  string
				addrs []corev1.EndpointAddress
			}{{"addresses", ss.Addresses}, {"notReadyAddresses", ss.NotReadyAddresses}} {
				for j, addr := range a.addrs {
					if net.ParseIP(addr.IP) == nil {
						errs = append(errs, field.Invalid(p.Child(a.name).Index(j).Child("ip"), addr.IP, "must be a valid IP address"))
					}
				}
			}
			for j, port := range ss.Ports {
				pp := p.Child("ports").Index(j)
				if len(ss.Ports) > 1 && port.Name == "" {
					errs = append(errs, field.Required(pp.Child("name"), ""))
				}
				for _, msg := range validation.IsValidPortNum(int(port.Port)) {
					errs = append(errs, field.Invalid(pp.Child("port"), int64(port.Port), msg))
				}
				switch port.Protocol {
				case "":
					errs = append(errs, field.Required(pp.Child("protocol"), ""))
				case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
				default:
					errs = append(errs, field.NotSupported(pp.Child("protocol"), string(port.Protocol), []string{"SCTP", "TCP", "UDP"}))
				}
			}
		}
		return errs
	})
	k.columns = defCols(def("Endpoints", "string", corev1.Endpoints{}.SwaggerDoc()["subsets"]), ageColumn().def)
	k.cells = typedCells(func(e *corev1.Endpoints, now time.Time) []any {
		return []any{formatEndpoints(e), since(e.CreationTimestamp, now)}
	})
}

// formatEndpoints is kube's printers': at most three host:port pairs,
// then how many more.
func formatEndpoints(e *corev1.Endpoints) string {
	if len(e.Subsets) == 0 {
		return "<none>"
	}
	const most = 3
	var list []string
	more, count := false, 0
	for _, ss := range e.Subsets {
		if len(ss.Ports) == 0 {
			count += len(ss.Addresses)
			for _, a := range ss.Addresses {
				if len(list) == most {
					more = true
					break
				}
				list = append(list, a.IP)
			}
			continue
		}
		for _, port := range ss.Ports {
			count += len(ss.Addresses)
			for _, a := range ss.Addresses {
				if len(list) == most {
					more = true
					break
				}
				list = append(list, net.JoinHostPort(a.IP, strconv.Itoa(int(port.Port))))
			}
		}
	}
	s := strings.Join(list, ",")
	if more {
		return fmt.Sprintf("%s + %d more...", s, count-most)
	}
	return s
}

func setupResourceQuota(k *kind) {
	k.returnsDeleted = true
	k.defaults = typedDefaults(func(q *corev1.ResourceQuota) {
		roundUp(q.Spec.Hard)
		roundUp(q.Status.Hard)
		roundUp(q.Status.Used)
	})
	k.validate = typedValidation(func(q *corev1.ResourceQuota) field.ErrorList {
		var errs field.ErrorList
		for _, l := range []struct {
			path *field.Path
			list corev1.ResourceList
		}{{field.NewPath("spec", "hard"), q.Spec.Hard}, {field.NewPath("status", "hard"), q.Status.Hard}, {field.NewPath("status", "used"), q.Status.Used}} {
			for _, name := range slices.Sorted(mapKeys(l.list)) {
				p := l.path.Key(string(name))
				errs = append(errs, quotaResourceName(string(name), p)...)
				errs = append(errs, resourceQuantity(string(name), l.list[name], p)...)
			}
		}
		return errs
	})
	k.columns = defCols(def("Request", "string", "Request represents a minimum amount of cpu/memory that a container may consume."),
		def("Limit", "string", "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node."), ageColumn().def)
	k.cells = typedCells(func(q *corev1.ResourceQuota, now time.Time) []any {
		names := make([]string, 0, len(q.Status.Hard))
		for n := range q.Status.Hard {
			names = append(names, string(n))
		}
		sort.Strings(names)
		var req, lim strings.Builder
		for _, n := range names {
			w := &req
			if parts := strings.Split(n, "."); len(parts) > 1 && parts[0] == "limits" {
				w = &lim
			}
			used, hard := q.Status.Used[corev1.ResourceName(n)], q.Status.Hard[corev1.ResourceName(n)]
			fmt.Fprintf(w, "%s: %s/%s, ", n, used.String(), hard.String())
		}
		return []any{strings.TrimSuffix(req.String(), ", "), strings.TrimSuffix(lim.String(), ", "), since(q.CreationTimestamp, now)}
	})
}

// quotaResourceName is kube-apiserver's check of a quota's resource name:
// a qualified name, and a standard one unless domain-prefixed.
func quotaResourceName(name string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(name) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	if len(errs) == 0 && !strings.Contains(name, "/") && !standardQuotaResource(name) {
		errs = append(errs, field.Invalid(p, name, "must be a standard resource for quota"))
	}
	return errs
}

func standardQuotaResource(name string) bool {
	switch name {
	case "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.storage", "requests.ephemeral-storage",
		"limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "resourcequotas", "services", "replicationcontrollers", "secrets",
		"persistentvolumeclaims", "configmaps", "services.nodeports", "services.loadbalancers":
		return true
	}
	return strings.HasPrefix(name, "hugepages-") || strings.HasPrefix(name, "requests.hugepages-") || strings.HasPrefix(name, "count/") ||
		strings.HasSuffix(name, ".storageclass.storage.k8s.io/requests.storage") || strings.HasSuffix(name, ".storageclass.storage.k8s.io/persistentvolumeclaims")
}

func setupLimitRange(k *kind) {
	k.defaults = typedDefaults(func(lr *corev1.LimitRange) {
		for i := range lr.Spec.Limits {
			it := &lr.Spec.Limits[i]
			if it.Type == corev1.LimitTypeContainer {
				if it.Default == nil {
					it.Default = corev1.ResourceList{}
				}
				if it.DefaultRequest == nil {
					it.DefaultRequest = corev1.ResourceList{}
				}
				for key, v := range it.Max {
					if _, ok := it.Default[key]; !ok {
						it.Default[key] = v.DeepCopy()
					}
				}
				for key, v := range it.Default {
					if _, ok := it.DefaultRequest[key]; !ok {
						it.DefaultRequest[key] = v.DeepCopy()
					}
				}
				for key, v := range it.Min {
					if _, ok := it.DefaultRequest[key]; !ok {
						it.DefaultRequest[key] = v.DeepCopy()
					}
				}
			}
			for _, l := range []corev1.ResourceList{it.Max, it.Min, it.Default, it.DefaultRequest, it.MaxLimitRequestRatio} {
				roundUp(l)
			}
		}
	})
	k.validate = typedValidation(func(lr *corev1.LimitRange) field.ErrorList {
		var errs field.ErrorList
		seen := map[corev1.LimitType]bool{}
		for i, it := range lr.Spec.Limits {
			p := field.NewPath("spec", "limits").Index(i)
			for _, msg := range validation.IsQualifiedName(string(it.Type)) {
				errs = append(errs, field.Invalid(p.Child("type"), string(it.Type), msg))
			}
			if seen[it.Type] {
				errs = append(errs, field.Duplicate(p.Child("type"), string(it.Type)))
			}
			seen[it.Type] = true
			if it.Type == corev1.LimitTypePod {
				if len(it.Default) > 0 {
					errs = append(errs, field.Forbidden(p.Child("default"), "may not be specified when `type` is 'Pod'"))
				}
				if len(it.DefaultRequest) > 0 {
					errs = append(errs, field.Forbidden(p.Child("defaultRequest"), "may not be specified when `type` is 'Pod'"))
				}
			}
			for name, min := range it.Min {
				if max, ok := it.Max[name]; ok && min.Cmp(max) > 0 {
					errs = append(errs, field.Invalid(p.Child("min").Key(string(name)), min, fmt.Sprintf("min value %s is greater than max value %s", min.String(), max.String())))
				}
			}
		}
		return errs
	})
	k.columns = []column{createdAtColumn()}
}

func setupReplicationController(k *kind) {
	k.orphanByDefault = true
	k.scale.selectorMap = true
	k.defaults = typedDefaults(func(rc *corev1.ReplicationController) {
		var tl map[string]string
		if rc.Spec.Template != nil {
			tl = rc.Spec.Template.Labels
		}
		if tl != nil {
			if len(rc.Spec.Selector) == 0 {
				rc.Spec.Selector = tl
			}
			if len(rc.Labels) == 0 {
				rc.Labels = tl
			}
		}
		if rc.Spec.Replicas == nil {
			rc.Spec.Replicas = ptrTo[int32](1)
		}
		if rc.Spec.Template != nil {
			defaultPodSpec(&rc.Spec.Template.Spec)
		}
	})
	k.validate = typedValidation(func(rc *corev1.ReplicationController) field.ErrorList {
		spec := field.NewPath("spec")
		sp := &rc.Spec
		errs := nonNegative(int64(sp.MinReadySeconds), spec.Child("minReadySeconds"))
		if labels.Set(sp.Selector).AsSelector().Empty() {
			errs = append(errs, field.Required(spec.Child("selector"), ""))
		}
		if sp.Replicas == nil {
			errs = append(errs, field.Required(spec.Child("replicas"), ""))
		} else {
			errs = append(errs, nonNegative(int64(*sp.Replicas), spec.Child("replicas"))...)
		}
		tp := spec.Child("template")
		if sp.Template == nil {
			return append(errs, field.Required(tp, ""))
		}
		if s := labels.Set(sp.Selector).AsSelector(); !s.Empty() && !s.Matches(labels.Set(sp.Template.Labels)) {
			errs = append(errs, field.Invalid(tp.Child("metadata", "labels"), sp.Template.Labels, "`selector` does not match template `labels`"))
		}
		errs = append(errs, validatePodTemplate(sp.Template, tp)...)
		if sp.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
			errs = append(errs, field.NotSupported(tp.Child("spec", "restartPolicy"), string(sp.Template.Spec.RestartPolicy), []string{"Always"}))
		}
		if sp.Template.Spec.ActiveDeadlineSeconds != nil {
			errs = append(errs, field.Forbidden(tp.Child("spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in ReplicationController is not Supported"))
		}
		st := field.NewPath("status")
		errs = append(errs, nonNegative(int64(rc.Status.Replicas), st.Child("replicas"))...)
		errs = append(errs, nonNegative(int64(rc.Status.FullyLabeledReplicas), st.Child("fullyLabeledReplicas"))...)
		errs = append(errs, nonNegative(int64(rc.Status.ReadyReplicas), st.Child("readyReplicas"))...)
		errs = append(errs, nonNegative(int64(rc.Status.AvailableReplicas), st.Child("availableReplicas"))...)
		errs = append(errs, nonNegative(rc.Status.ObservedGeneration, st.Child("observedGeneration"))...)
		const msg = "cannot be greater than status.replicas"
		if rc.Status.FullyLabeledReplicas > rc.Status.Replicas {
			errs = append(errs, field.Invalid(st.Child("fullyLabeledReplicas"), int64(rc.Status.FullyLabeledReplicas), msg))
		}
		if rc.Status.ReadyReplicas > rc.Status.Replicas {
			errs = append(errs, field.Invalid(st.Child("readyReplicas"), int64(rc.Status.ReadyReplicas), msg))
		}
		if rc.Status.AvailableReplicas > rc.Status.Replicas {
			errs = append(errs, field.Invalid(st.Child("availableReplicas"), int64(rc.Status.AvailableReplicas), msg))
		}
		if rc.Status.AvailableReplicas > rc.Status.ReadyReplicas {
			errs = append(errs, field.Invalid(st.Child("availableReplicas"), int64(rc.Status.AvailableReplicas), "cannot be greater than readyReplicas"))
		}
		return errs
	})
	sp, st := corev1.ReplicationControllerSpec{}.SwaggerDoc(), corev1.ReplicationControllerStatus{}.SwaggerDoc()
	k.columns = defCols(def("Desired", "integer", sp["replicas"]), def("Current", "integer", st["replicas"]), def("Ready", "integer", st["readyReplicas"]),
		ageColumn().def, containersCol, imagesCol, wide("Selector", "string", sp["selector"]))
	k.cells = typedCells(func(rc *corev1.ReplicationController, now time.Time) []any {
		var cs []corev1.Container
		if rc.Spec.Template != nil {
			cs = rc.Spec.Template.Spec.Containers
		}
		names, images := containerCells(cs)
		return []any{int64(deref(rc.Spec.Replicas)), int64(rc.Status.Replicas), int64(rc.Status.ReadyReplicas), since(rc.CreationTimestamp, now), names, images, labels.FormatLabels(rc.Spec.Selector)}
	})
}
