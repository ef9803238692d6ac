package apiserver

import (
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"kloop.dev/kloop/apiserver/internal/jsontree"
)

// Defaulting of built-in kinds, applied to every decoded request body
// (create, update, patch result), as kube-apiserver's scheme defaulters do
// on decoding. These follow the v1.37 defaulters of core/v1 and apps/v1
// for the fields clients meet (pods and pod templates, services, secrets,
// deployments, replica sets); exotic volume sources are left as sent.

func ptrTo[T any](v T) *T { return &v }

func defaultPod(p *corev1.Pod) {
	if g := p.Spec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		p.Spec.TerminationGracePeriodSeconds = ptrTo[int64](1)
	}
	// Requests default to limits, on pods only (not on templates).
	for _, cs := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
		for i := range cs {
			r := &cs[i].Resources
			if r.Limits == nil {
				continue
			}
			if r.Requests == nil {
				r.Requests = corev1.ResourceList{}
			}
			for name, q := range r.Limits {
				if _, ok := r.Requests[name]; !ok {
					r.Requests[name] = q.DeepCopy()
				}
			}
		}
	}
	if p.Spec.EnableServiceLinks == nil {
		p.Spec.EnableServiceLinks = ptrTo(corev1.DefaultEnableServiceLinks)
	}
	if p.Spec.HostNetwork {
		for _, cs := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
			for i := range cs {
				for j := range cs[i].Ports {
					if cs[i].Ports[j].HostPort == 0 {
						cs[i].Ports[j].HostPort = cs[i].Ports[j].ContainerPort
					}
				}
			}
		}
	}
	defaultPodSpec(&p.Spec)
	// Keep podIP and podIPs in sync.
	st := &p.Status
	switch {
	case st.PodIP != "" && len(st.PodIPs) == 0:
		st.PodIPs = []corev1.PodIP{{IP: st.PodIP}}
	case st.PodIP == "" && len(st.PodIPs) > 0:
		st.PodIP = st.PodIPs[0].IP
	case st.PodIP != "" && st.PodIPs[0].IP != st.PodIP:
		st.PodIPs = []corev1.PodIP{{IP: st.PodIP}}
	}
}

// defaultPodSpec applies the defaults of pod specs, in pods and templates.
func defaultPodSpec(s *corev1.PodSpec) {
	if s.ServiceAccountName == "" {
		s.ServiceAccountName = s.DeprecatedServiceAccount
	}
	s.DeprecatedServiceAccount = s.ServiceAccountName
	if s.DNSPolicy == "" {
		s.DNSPolicy = corev1.DNSClusterFirst
	}
	if s.RestartPolicy == "" {
		s.RestartPolicy = corev1.RestartPolicyAlways
	}
	if s.SecurityContext == nil {
		s.SecurityContext = &corev1.PodSecurityContext{}
	}
	if s.TerminationGracePeriodSeconds == nil {
		s.TerminationGracePeriodSeconds = ptrTo[int64](corev1.DefaultTerminationGracePeriodSeconds)
	}
	if s.SchedulerName == "" {
		s.SchedulerName = corev1.DefaultSchedulerName
	}
	for i := range s.Volumes {
		defaultVolume(&s.Volumes[i])
	}
	for i := range s.InitContainers {
		defaultContainer(&s.InitContainers[i])
	}
	for i := range s.Containers {
		defaultContainer(&s.Containers[i])
	}
	for i := range s.EphemeralContainers {
		c := corev1.Container(s.EphemeralContainers[i].EphemeralContainerCommon)
		defaultContainer(&c)
		s.EphemeralContainers[i].EphemeralContainerCommon = corev1.EphemeralContainerCommon(c)
	}
}

func defaultContainer(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		if imageTag(c.Image) == "latest" {
			c.ImagePullPolicy = corev1.PullAlways
		} else {
			c.ImagePullPolicy = corev1.PullIfNotPresent
		}
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	for i := range c.Env {
		if vf := c.Env[i].ValueFrom; vf != nil {
			if vf.FieldRef != nil && vf.FieldRef.APIVersion == "" {
				vf.FieldRef.APIVersion = "v1"
			}
			if vf.FileKeyRef != nil && vf.FileKeyRef.Optional == nil {
				vf.FileKeyRef.Optional = ptrTo(false)
			}
		}
	}
	roundUp(c.Resources.Limits)
	roundUp(c.Resources.Requests)
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		if p == nil {
			continue
		}
		if p.TimeoutSeconds == 0 {
			p.TimeoutSeconds = 1
		}
		if p.PeriodSeconds == 0 {
			p.PeriodSeconds = 10
		}
		if p.SuccessThreshold == 0 {
			p.SuccessThreshold = 1
		}
		if p.FailureThreshold == 0 {
			p.FailureThreshold = 3
		}
		defaultHTTPGet(p.HTTPGet)
		if p.GRPC != nil && p.GRPC.Service == nil {
			p.GRPC.Service = ptrTo("")
		}
	}
	if l := c.Lifecycle; l != nil {
		for _, h := range []*corev1.LifecycleHandler{l.PostStart, l.PreStop} {
			if h != nil {
				defaultHTTPGet(h.HTTPGet)
			}
		}
	}
}

func defaultHTTPGet(h *corev1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = corev1.URISchemeHTTP
	}
}

// roundUp rounds quantities up to milli precision, as kube-apiserver does.
func roundUp(l corev1.ResourceList) {
	for name, q := range l {
		q.RoundUp(resource.Milli)
		l[name] = q
	}
}

// imageTag returns the tag of an image reference: "latest" when it has
// neither tag nor digest, "" when it has only a digest.
func imageTag(image string) string {
	name, digest, hasDigest := strings.Cut(image, "@")
	_ = digest
	slash := strings.LastIndexByte(name, '/')
	if i := strings.LastIndexByte(name, ':'); i > slash {
		return name[i+1:]
	}
	if hasDigest {
		return ""
	}
	return "latest"
}

func defaultVolume(v *corev1.Volume) {
	vs := &v.VolumeSource
	if *vs == (corev1.VolumeSource{}) {
		vs.EmptyDir = &corev1.EmptyDirVolumeSource{}
	}
	if vs.HostPath != nil && vs.HostPath.Type == nil {
		vs.HostPath.Type = ptrTo(corev1.HostPathUnset)
	}
	if vs.Secret != nil && vs.Secret.DefaultMode == nil {
		vs.Secret.DefaultMode = ptrTo(corev1.SecretVolumeSourceDefaultMode)
	}
	if vs.ConfigMap != nil && vs.ConfigMap.DefaultMode == nil {
		vs.ConfigMap.DefaultMode = ptrTo(corev1.ConfigMapVolumeSourceDefaultMode)
	}
	if d := vs.DownwardAPI; d != nil {
		if d.DefaultMode == nil {
			d.DefaultMode = ptrTo(corev1.DownwardAPIVolumeSourceDefaultMode)
		}
		for i := range d.Items {
			if f := d.Items[i].FieldRef; f != nil && f.APIVersion == "" {
				f.APIVersion = "v1"
			}
		}
	}
	if p := vs.Projected; p != nil {
		if p.DefaultMode == nil {
			p.DefaultMode = ptrTo(corev1.ProjectedVolumeSourceDefaultMode)
		}
		for i := range p.Sources {
			src := &p.Sources[i]
			if src.DownwardAPI != nil {
				for j := range src.DownwardAPI.Items {
					if f := src.DownwardAPI.Items[j].FieldRef; f != nil && f.APIVersion == "" {
						f.APIVersion = "v1"
					}
				}
			}
			if t := src.ServiceAccountToken; t != nil && t.ExpirationSeconds == nil {
				t.ExpirationSeconds = ptrTo[int64](3600)
			}
		}
	}
}

func defaultService(s *corev1.Service) {
	sp := &s.Spec
	if sp.SessionAffinity == "" {
		sp.SessionAffinity = corev1.ServiceAffinityNone
	}
	if sp.SessionAffinity == corev1.ServiceAffinityNone {
		sp.SessionAffinityConfig = nil
	}
	if sp.SessionAffinity == corev1.ServiceAffinityClientIP {
		if c := sp.SessionAffinityConfig; c == nil || c.ClientIP == nil || c.ClientIP.TimeoutSeconds == nil {
			sp.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptrTo(corev1.DefaultClientIPServiceAffinitySeconds)}}
		}
	}
	if sp.Type == "" {
		sp.Type = corev1.ServiceTypeClusterIP
	}
	for i := range sp.Ports {
		p := &sp.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if p.TargetPort == intstr.FromInt32(0) || p.TargetPort == intstr.FromString("") {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
	external := sp.Type == corev1.ServiceTypeLoadBalancer || sp.Type == corev1.ServiceTypeNodePort ||
		(sp.Type == corev1.ServiceTypeClusterIP && len(sp.ExternalIPs) > 0)
	if external && sp.ExternalTrafficPolicy == "" {
		sp.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}
	if sp.InternalTrafficPolicy == nil && (sp.Type == corev1.ServiceTypeNodePort || sp.Type == corev1.ServiceTypeLoadBalancer || sp.Type == corev1.ServiceTypeClusterIP) {
		sp.InternalTrafficPolicy = ptrTo(corev1.ServiceInternalTrafficPolicyCluster)
	}
	if sp.Type == corev1.ServiceTypeLoadBalancer && sp.AllocateLoadBalancerNodePorts == nil {
		sp.AllocateLoadBalancerNodePorts = ptrTo(true)
	}
}

func defaultDeployment(d *appsv1.Deployment) {
	sp := &d.Spec
	if sp.Replicas == nil {
		sp.Replicas = ptrTo[int32](1)
	}
	if sp.Strategy.Type == "" {
		sp.Strategy.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if sp.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType {
		if sp.Strategy.RollingUpdate == nil {
			sp.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{}
		}
		ru := sp.Strategy.RollingUpdate
		if ru.MaxUnavailable == nil {
			ru.MaxUnavailable = ptrTo(intstr.FromString("25%"))
		}
		if ru.MaxSurge == nil {
			ru.MaxSurge = ptrTo(intstr.FromString("25%"))
		}
	}
	if sp.RevisionHistoryLimit == nil {
		sp.RevisionHistoryLimit = ptrTo[int32](10)
	}
	if sp.ProgressDeadlineSeconds == nil {
		sp.ProgressDeadlineSeconds = ptrTo[int32](600)
	}
	defaultPodSpec(&sp.Template.Spec)
}

// preparePodCreate is what kube-apiserver does to a new Pod after decoding:
// the registry resets the status (phase Pending, the QoS class), and
// DefaultTolerationSeconds adds 300 s NoExecute tolerations of not-ready and
// unreachable nodes. (The Priority admission plugin's priority is
// admitPodPriority's.)
func preparePodCreate(o map[string]any) {
	spec, _ := o["spec"].(map[string]any)
	if spec == nil {
		o["status"] = map[string]any{"phase": "Pending"}
		return
	}
	var ps corev1.PodSpec
	if err := fromMap(spec, &ps); err != nil {
		o["status"] = map[string]any{"phase": "Pending"}
		return // validation reports the spec
	}
	o["status"] = map[string]any{"phase": "Pending", "qosClass": string(podQOS(&ps))}
	addDefaultTolerations(spec)
}

// carryOverPod keeps, on update, what admission set on create.
func carryOverPod(obj, old map[string]any) {
	spec, _ := obj["spec"].(map[string]any)
	oldSpec, _ := old["spec"].(map[string]any)
	if spec == nil || oldSpec == nil {
		return
	}
	for _, f := range []string{"priority", "preemptionPolicy"} {
		if _, ok := spec[f]; !ok {
			if v, ok := oldSpec[f]; ok {
				spec[f] = v
			}
		}
	}
	addDefaultTolerations(spec)
}

// podGracePeriod is the grace period of a pod's deletion, as kube-apiserver's
// pod strategy computes it: the one asked for, else the pod's
// terminationGracePeriodSeconds; 0 for a pod no node runs or that ended.
func podGracePeriod(obj map[string]any, opts metav1.DeleteOptions) int64 {
	var period int64
	if p := opts.GracePeriodSeconds; p != nil {
		period = *p
	} else if _, ok := jsontree.Get(obj, "spec", "terminationGracePeriodSeconds").(int64); ok {
		period = jsontree.Int(obj, "spec", "terminationGracePeriodSeconds")
	}
	if jsontree.Str(obj, "spec", "nodeName") == "" {
		period = 0
	}
	if ph := jsontree.Str(obj, "status", "phase"); ph == "Failed" || ph == "Succeeded" {
		period = 0
	}
	if period < 0 {
		period = 1
	}
	return period
}

// addDefaultTolerations is the DefaultTolerationSeconds admission plugin.
func addDefaultTolerations(spec map[string]any) {
	tols, _ := spec["tolerations"].([]any)
	notReady, unreachable := false, false
	for _, t := range tols {
		key, effect := jsontree.Str(t, "key"), jsontree.Str(t, "effect")
		if (key == corev1.TaintNodeNotReady || key == "") && (effect == string(corev1.TaintEffectNoExecute) || effect == "") {
			notReady = true
		}
		if (key == corev1.TaintNodeUnreachable || key == "") && (effect == string(corev1.TaintEffectNoExecute) || effect == "") {
			unreachable = true
		}
	}
	tol := func(key string) any {
		return map[string]any{"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": int64(300)}
	}
	if !notReady {
		tols = append(tols, tol(corev1.TaintNodeNotReady))
	}
	if !unreachable {
		tols = append(tols, tol(corev1.TaintNodeUnreachable))
	}
	spec["tolerations"] = tols
}

// podQOS is a pod's quality of service class, from its containers' CPU and
// memory requests and limits.
func podQOS(ps *corev1.PodSpec) corev1.PodQOSClass {
	requests, limits := corev1.ResourceList{}, corev1.ResourceList{}
	guaranteed := true
	compute := []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}
	add := func(into corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) {
		if cur, ok := into[name]; ok {
			q.Add(cur)
		}
		into[name] = q
	}
	for _, c := range append(append([]corev1.Container{}, ps.InitContainers...), ps.Containers...) {
		for _, name := range compute {
			if q, ok := c.Resources.Requests[name]; ok && !q.IsZero() {
				add(requests, name, q)
			}
			q, ok := c.Resources.Limits[name]
			if ok && !q.IsZero() {
				add(limits, name, q)
			} else {
				guaranteed = false
			}
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	if guaranteed {
		for name, l := range limits {
			if r, ok := requests[name]; !ok || r.Cmp(l) != 0 {
				guaranteed = false
			}
		}
	}
	if guaranteed && len(requests) == len(limits) {
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

// defaultPVC applies the defaults of a PersistentVolumeClaim, alone or
// as a StatefulSet's template: phase Pending, volumeMode Filesystem.
func defaultPVC(c *corev1.PersistentVolumeClaim) {
	if c.Status.Phase == "" {
		c.Status.Phase = corev1.ClaimPending
	}
	if c.Spec.VolumeMode == nil {
		c.Spec.VolumeMode = ptrTo(corev1.PersistentVolumeFilesystem)
	}
	roundUp(c.Spec.Resources.Limits)
	roundUp(c.Spec.Resources.Requests)
	roundUp(c.Status.Capacity)
	roundUp(c.Status.AllocatedResources)
}
