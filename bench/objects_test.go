package bench

import (
	"encoding/json"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// makePod returns a realistic Pod of a Deployment's ReplicaSet: two
// containers with env, probes, resources and mounts, projected service
// account volume, status with conditions, and managedFields from three
// managers, as kube-apiserver returns it (≈ 9 KB of JSON).
func makePod(i int) *corev1.Pod {
	app := "app-" + strconv.Itoa(i%50)
	env := make([]corev1.EnvVar, 0, 16)
	for e := range 14 {
		env = append(env, corev1.EnvVar{Name: fmt.Sprintf("SETTING_%02d", e), Value: fmt.Sprintf("value-%d-for-%s", e, app)})
	}
	env = append(env, corev1.EnvVar{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}})
	container := func(name, image string, port int32) corev1.Container {
		return corev1.Container{
			Name: name, Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
			Args:  []string{"--port=" + strconv.Itoa(int(port)), "--log-level=info", "--metrics-addr=:9090"},
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: port, Protocol: corev1.ProtocolTCP}, {Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP}},
			Env:   env,
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("512Mi")},
			},
			VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/config"}, {Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}},
			LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(port), Scheme: corev1.URISchemeHTTP}},
				InitialDelaySeconds: 10, TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(port), Scheme: corev1.URISchemeHTTP}},
				TimeoutSeconds: 1, PeriodSeconds: 5, SuccessThreshold: 1, FailureThreshold: 3},
			TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		}
	}
	hash := "7d9f8b6c5" + strconv.Itoa(i%7)
	name := app + "-" + hash + "-" + strconv.Itoa(100000+i)
	ts := metav1.Unix(1_700_000_000+int64(i), 0)
	pod := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, GenerateName: app + "-" + hash + "-", Namespace: "team-" + strconv.Itoa(i%20),
			UID:               types.UID(fmt.Sprintf("8f1c2a3b-%04x-4d5e-8f90-%012x", i%65536, i)),
			ResourceVersion:   strconv.Itoa(1000 + i),
			CreationTimestamp: ts,
			Labels:            map[string]string{"app": app, "pod-template-hash": hash, "app.kubernetes.io/name": app, "app.kubernetes.io/part-of": "shop", "tier": "backend", "version": "v1.4.2"},
			Annotations:       map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-11-01T10:00:00Z", "prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
			OwnerReferences:   []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-" + hash, UID: types.UID(fmt.Sprintf("rs-%08d", i%50)), Controller: ptr(true), BlockOwnerDeletion: ptr(true)}},
		},
		Spec: corev1.PodSpec{
			Containers:         []corev1.Container{container("server", "registry.example.com/shop/"+app+":v1.4.2", 8080), container("sidecar", "registry.example.com/infra/proxy:v2.1.0", 15001)},
			Volumes:            []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: app + "-config"}, DefaultMode: ptr(int32(420))}}}, {Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr(int64(3607))}}, {ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}}}, DefaultMode: ptr(int32(420))}}}},
			RestartPolicy:      corev1.RestartPolicyAlways,
			DNSPolicy:          corev1.DNSClusterFirst,
			ServiceAccountName: "default", NodeName: "node-" + strconv.Itoa(i%100),
			SchedulerName: "default-scheduler", TerminationGracePeriodSeconds: ptr(int64(30)),
			Tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(300))}, {Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(300))}},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, HostIP: "10.0." + strconv.Itoa(i%100) + ".1", PodIP: fmt.Sprintf("10.244.%d.%d", i%250, i%200), StartTime: &ts, QOSClass: corev1.PodQOSBurstable,
			Conditions: []corev1.PodCondition{{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: ts}, {Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: ts}, {Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: ts}, {Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: ts}},
			ContainerStatuses: []corev1.ContainerStatus{
				{Name: "server", Ready: true, Image: "registry.example.com/shop/" + app + ":v1.4.2", ImageID: "registry.example.com/shop/" + app + "@sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945", ContainerID: fmt.Sprintf("containerd://%064x", i), Started: ptr(true), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: ts}}},
				{Name: "sidecar", Ready: true, Image: "registry.example.com/infra/proxy:v2.1.0", ImageID: "registry.example.com/infra/proxy@sha256:9a3ecbe5ed12ab4d8e11ba873c2f11161202b9454f53cda18c2baa0c0354bb5f", ContainerID: fmt.Sprintf("containerd://%064x", i+1), Started: ptr(true), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: ts}}},
			},
		},
	}
	pod.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &ts, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: fieldsV1(pod.Spec.Containers, true)}},
		{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &ts, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:conditions":{"k:{\"type\":\"ContainersReady\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Initialized\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Ready\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}},"f:containerStatuses":{},"f:hostIP":{},"f:phase":{},"f:podIP":{},"f:podIPs":{".":{},"k:{\"ip\":\"10.244.1.1\"}":{".":{},"f:ip":{}}},"f:startTime":{}}}`)}, Subresource: "status"},
	}
	return pod
}

// fieldsV1 renders a managedFields set for the containers, as kube-apiserver
// records it for the manager that created the pod.
func fieldsV1(cs []corev1.Container, withMeta bool) []byte {
	containers := map[string]any{}
	for _, c := range cs {
		env := map[string]any{".": map[string]any{}}
		for _, e := range c.Env {
			env[`k:{"name":"`+e.Name+`"}`] = map[string]any{".": map[string]any{}, "f:name": map[string]any{}, "f:value": map[string]any{}}
		}
		containers[`k:{"name":"`+c.Name+`"}`] = map[string]any{
			".": map[string]any{}, "f:args": map[string]any{}, "f:env": env, "f:image": map[string]any{}, "f:imagePullPolicy": map[string]any{},
			"f:livenessProbe": map[string]any{".": map[string]any{}, "f:failureThreshold": map[string]any{}, "f:httpGet": map[string]any{".": map[string]any{}, "f:path": map[string]any{}, "f:port": map[string]any{}, "f:scheme": map[string]any{}}},
			"f:name":          map[string]any{}, "f:resources": map[string]any{".": map[string]any{}, "f:limits": map[string]any{}, "f:requests": map[string]any{}},
		}
	}
	m := map[string]any{"f:spec": map[string]any{"f:containers": containers, "f:dnsPolicy": map[string]any{}, "f:restartPolicy": map[string]any{}}}
	if withMeta {
		m["f:metadata"] = map[string]any{"f:generateName": map[string]any{}, "f:labels": map[string]any{".": map[string]any{}, "f:app": map[string]any{}, "f:pod-template-hash": map[string]any{}}, "f:ownerReferences": map[string]any{}}
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

func ptr[T any](v T) *T { return &v }

// Widget is a custom resource with a ≈ 2 KB spec, decoded into a Go struct
// as controllers do with their own kinds.
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WidgetSpec   `json:"spec"`
	Status            WidgetStatus `json:"status,omitempty"`
}

type WidgetSpec struct {
	Size       int               `json:"size"`
	Color      string            `json:"color"`
	Replicas   int32             `json:"replicas"`
	Tags       []string          `json:"tags,omitempty"`
	Parameters map[string]string `json:"parameters,omitempty"`
	Endpoints  []WidgetEndpoint  `json:"endpoints,omitempty"`
}

type WidgetEndpoint struct {
	Name    string `json:"name"`
	URL     string `json:"url"`
	Port    int32  `json:"port"`
	Weight  int32  `json:"weight"`
	Enabled bool   `json:"enabled"`
}

type WidgetStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

type WidgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Widget `json:"items"`
}

var widgetGV = schema.GroupVersion{Group: "example.com", Version: "v1"}

func (w *Widget) DeepCopyObject() runtime.Object {
	b, err := json.Marshal(w)
	if err != nil {
		panic(err)
	}
	out := &Widget{}
	if err := json.Unmarshal(b, out); err != nil {
		panic(err)
	}
	return out
}

func (l *WidgetList) DeepCopyObject() runtime.Object {
	b, err := json.Marshal(l)
	if err != nil {
		panic(err)
	}
	out := &WidgetList{}
	if err := json.Unmarshal(b, out); err != nil {
		panic(err)
	}
	return out
}

func makeWidget(i int) *Widget {
	w := &Widget{
		TypeMeta: metav1.TypeMeta{APIVersion: widgetGV.String(), Kind: "Widget"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "widget-" + strconv.Itoa(i), Namespace: "team-" + strconv.Itoa(i%20), Generation: 1,
			UID: types.UID(fmt.Sprintf("9e1c2a3b-%04x-4d5e-8f90-%012x", i%65536, i)), ResourceVersion: strconv.Itoa(1000 + i),
			CreationTimestamp: metav1.Unix(1_700_000_000+int64(i), 0),
			Labels:            map[string]string{"app": "widgets", "team": "team-" + strconv.Itoa(i%20)},
		},
		Spec: WidgetSpec{Size: i % 10, Color: []string{"red", "blue", "green"}[i%3], Replicas: 3,
			Tags: []string{"alpha", "beta", "gamma", "delta"}, Parameters: map[string]string{}},
	}
	for p := range 12 {
		w.Spec.Parameters[fmt.Sprintf("parameter-%02d", p)] = fmt.Sprintf("a-moderately-long-value-%d-%d", p, i%5)
	}
	for e := range 8 {
		w.Spec.Endpoints = append(w.Spec.Endpoints, WidgetEndpoint{Name: fmt.Sprintf("endpoint-%d", e), URL: fmt.Sprintf("https://backend-%d.team-%d.svc.cluster.local/api/v1/widgets", e, i%20), Port: 8443, Weight: int32(10 * e), Enabled: e%2 == 0})
	}
	return w
}
