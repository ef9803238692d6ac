package informer

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"

	"kloop.dev/kloop/cache"
	"kloop.dev/kloop/reflector"
	"kloop.dev/kloop/workqueue"
)

// realisticPod returns a Pod as a Deployment's ReplicaSet makes it and the
// kubelet reports it, with the managedFields of both writers.
func realisticPod(i int) *corev1.Pod {
	ns := fmt.Sprintf("team-%d", i%20)
	rs := fmt.Sprintf("web-%d-7d9f8c6b5", i%50)
	fields := func(n int) []byte {
		var b strings.Builder
		b.WriteString(`{"f:metadata":{"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"`)
		b.WriteString(fmt.Sprintf("%08d", i%50))
		b.WriteString(`\"}":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:env":{".":{}`)
		for j := range n {
			fmt.Fprintf(&b, `,"k:{\"name\":\"VAR_%d\"}":{".":{},"f:name":{},"f:value":{}}`, j)
		}
		b.WriteString(`},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:ports":{".":{},"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:name":{},"f:protocol":{}}},"f:readinessProbe":{".":{},"f:failureThreshold":{},"f:httpGet":{".":{},"f:path":{},"f:port":{},"f:scheme":{}},"f:periodSeconds":{},"f:successThreshold":{},"f:timeoutSeconds":{}},"f:resources":{".":{},"f:limits":{".":{},"f:cpu":{},"f:memory":{}},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{},"f:volumeMounts":{".":{},"k:{\"mountPath\":\"/etc/config\"}":{".":{},"f:mountPath":{},"f:name":{}}}}},"f:dnsPolicy":{},"f:enableServiceLinks":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{},"f:volumes":{".":{},"k:{\"name\":\"config\"}":{".":{},"f:configMap":{".":{},"f:defaultMode":{},"f:name":{}},"f:name":{}}}}}`)
		return []byte(b.String())
	}
	status := []byte(`{"f:status":{"f:conditions":{"k:{\"type\":\"ContainersReady\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Initialized\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"PodReadyToStartContainers\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Ready\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}},"f:containerStatuses":{},"f:hostIP":{},"f:hostIPs":{},"f:phase":{},"f:podIP":{},"f:podIPs":{".":{},"k:{\"ip\":\"10.244.1.5\"}":{".":{},"f:ip":{}}},"f:startTime":{}}}`)
	now := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	var env []corev1.EnvVar
	for j := range 12 {
		env = append(env, corev1.EnvVar{Name: fmt.Sprintf("VAR_%d", j), Value: fmt.Sprintf("value-%d", j)})
	}
	cond := func(t corev1.PodConditionType) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now}
	}
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("%s-%05d", rs, i), GenerateName: rs + "-", Namespace: ns,
			UID: types.UID("5c1f3b9e-1d2a-4e5f-9a8b-" + fmt.Sprintf("%012d", i)), ResourceVersion: fmt.Sprint(1000 + i),
			CreationTimestamp: now,
			Labels:            map[string]string{"app": "web", "pod-template-hash": "7d9f8c6b5", "app.kubernetes.io/part-of": "shop"},
			Annotations:       map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z", "prometheus.io/scrape": "true"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs,
				UID: types.UID("0c6d2e1f-0000-4000-8000-" + fmt.Sprintf("%012d", i%50)), Controller: ptr(true), BlockOwnerDeletion: ptr(true)}},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &now, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: fields(12)}},
				{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &now, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: status}, Subresource: "status"},
			},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "web", Image: "registry.example.com/shop/web:1.42.0", Env: env,
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				Resources: corev1.ResourceRequirements{
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
				},
				VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/config"}, {Name: "kube-api-access-abcde", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstrFrom(8080), Scheme: corev1.URISchemeHTTP}},
					TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3},
				TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile, ImagePullPolicy: corev1.PullIfNotPresent,
			}},
			Volumes:       []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"}}}}},
			RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst, ServiceAccountName: "default",
			NodeName: fmt.Sprintf("node-%d", i%100), SchedulerName: "default-scheduler",
			Tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(300))}},
		},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			Conditions: []corev1.PodCondition{cond("PodReadyToStartContainers"), cond(corev1.PodInitialized), cond(corev1.PodReady), cond(corev1.ContainersReady), cond(corev1.PodScheduled)},
			HostIP:     "10.0.0.7", PodIP: fmt.Sprintf("10.244.%d.%d", i/250%250, i%250), StartTime: &now,
			PodIPs: []corev1.PodIP{{IP: fmt.Sprintf("10.244.%d.%d", i/250%250, i%250)}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "web", Ready: true, Image: "registry.example.com/shop/web:1.42.0",
				ImageID:     "registry.example.com/shop/web@sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945",
				ContainerID: "containerd://" + fmt.Sprintf("%064d", i), Started: ptr(true),
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}},
			QOSClass: corev1.PodQOSBurstable,
		},
	}
}

func ptr[T any](v T) *T { return &v }

// listServer serves one JSON list of objects at /api/v1/pods and holds
// watches open until the client goes away.
func listServer(b *testing.B, n int) (*rest.Config, func()) {
	b.Helper()
	items := make([]json.RawMessage, n)
	for i := range n {
		data, err := json.Marshal(realisticPod(i))
		if err != nil {
			b.Fatal(err)
		}
		items[i] = data
	}
	body, err := json.Marshal(map[string]any{"kind": "PodList", "apiVersion": "v1", "metadata": map[string]string{"resourceVersion": "100000"}, "items": items})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(body))/float64(n), "json-B/obj")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") == "true" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	tr := &http.Transport{}
	cfg := &rest.Config{Host: srv.URL, Transport: tr}
	return cfg, func() {
		tr.CloseIdleConnections()
		srv.CloseClientConnections()
		srv.Close()
	}
}

func heapInUse() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkLiveHeapPerPod lists 10,000 realistic Pods (≈ 7 KB of JSON each,
// with managedFields) from an HTTP server through the whole informer (REST
// decode, FIFO, cache) and reports the live heap per cached Pod and the time
// to synced per Pod; "raw" keeps managedFields and interns nothing (what
// client-go's informer caches by default).
func BenchmarkLiveHeapPerPod(b *testing.B) {
	const n = 10_000
	cfg, stop := listServer(b, n)
	defer stop()
	for _, mode := range []struct {
		name       string
		keep, noIn bool
	}{{"lean", false, false}, {"raw", true, true}, {"strip-only", false, true}} {
		b.Run(mode.name, func(b *testing.B) {
			var perObj, perSync float64
			for range b.N {
				before := heapInUse()
				lw, err := reflector.NewRESTListerWatcher[*corev1.Pod](cfg, schema.GroupVersionResource{Version: "v1", Resource: "pods"}, "", reflector.RESTOptions[*corev1.Pod]{})
				if err != nil {
					b.Fatal(err)
				}
				inf, err := New[*corev1.Pod](lw, Options[*corev1.Pod]{KeepManagedFields: mode.keep, DisableInterning: mode.noIn,
					Reflector: reflector.Options{DisableWatchList: true, PageSize: -1}})
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error)
				t0 := time.Now()
				go func() { done <- inf.Run(ctx) }()
				if err := inf.WaitForCacheSync(ctx); err != nil {
					b.Fatal(err)
				}
				perSync += float64(time.Since(t0).Nanoseconds()) / n
				if inf.Len() != n {
					b.Fatalf("%d cached", inf.Len())
				}
				after := heapInUse()
				perObj += float64(after-before) / n
				cancel()
				<-done
				runtime.KeepAlive(inf)
			}
			b.ReportMetric(perObj/float64(b.N), "live-B/obj")
			b.ReportMetric(perSync/float64(b.N), "sync-ns/obj")
		})
	}
}

// BenchmarkEventsToQueue measures update events through the informer —
// FIFO, cache update, per-handler buffer — to handlers that each enqueue the
// object's key in their own workqueue drained by one worker, over 10,000
// cached Pods, with 1 and 10 handlers. Each op is one event; allocs/op and
// B/op are per event (all handlers together).
func BenchmarkEventsToQueue(b *testing.B) {
	for _, handlers := range []int{1, 10} {
		b.Run(fmt.Sprintf("handlers=%d", handlers), func(b *testing.B) { benchEvents(b, handlers) })
	}
}

func benchEvents(b *testing.B, handlers int) {
	const n = 10_000
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = realisticPod(i)
		pods[i].ManagedFields = nil
	}
	srv := newFakeServer()
	// The same objects are pushed again and again: no transform may
	// change them once cached (the lean transform's cost is in the
	// reflector's decode, measured by BenchmarkLiveHeapPerPod).
	inf, err := New[*corev1.Pod](srv, Options[*corev1.Pod]{KeepManagedFields: true, DisableInterning: true,
		Reflector: reflector.Options{DisableWatchList: true}})
	if err != nil {
		b.Fatal(err)
	}
	var handled atomic.Int64
	var queues []*workqueue.Queue[string]
	for range handlers {
		q, err := workqueue.New(workqueue.Options[string]{})
		if err != nil {
			b.Fatal(err)
		}
		queues = append(queues, q)
		enqueue := func(p *corev1.Pod) {
			q.Add(cache.Key(p))
			handled.Add(1)
		}
		if _, err := inf.AddHandler(HandlerFuncs[*corev1.Pod]{
			AddFunc:    func(p *corev1.Pod, _ bool) { enqueue(p) },
			UpdateFunc: func(_, p *corev1.Pod) { enqueue(p) },
			DeleteFunc: func(d Deleted[*corev1.Pod]) { q.Add(d.Key); handled.Add(1) },
		}, HandlerOptions{ResyncPeriod: NoResync}); err != nil {
			b.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- inf.Run(ctx) }()
	workers := make(chan struct{}, handlers)
	for _, q := range queues {
		go func() {
			defer func() { workers <- struct{}{} }()
			for {
				k, shutdown := q.Get()
				if shutdown {
					return
				}
				q.Done(k)
			}
		}()
	}
	if err := inf.WaitForCacheSync(ctx); err != nil {
		b.Fatal(err)
	}
	for _, p := range pods {
		if err := inf.s.fifo.Add(p); err != nil {
			b.Fatal(err)
		}
	}
	total := int64(n * handlers)
	for handled.Load() < total {
		runtime.Gosched()
	}
	handled.Store(0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := inf.s.fifo.Update(pods[i%n]); err != nil {
			b.Fatal(err)
		}
	}
	total = int64(b.N * handlers)
	for handled.Load() < total {
		runtime.Gosched()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	cancel()
	<-done
	for _, q := range queues {
		q.ShutDown()
	}
	for range handlers {
		<-workers
	}
}

func intstrFrom(i int) intstr.IntOrString { return intstr.FromInt32(int32(i)) }

// BenchmarkInternListed: interning the objects of an initial list (nothing
// cached yet), ConfigMaps shaped as the bench module's Widget CR: two
// labels, a dozen data entries whose values repeat across objects. Each
// object comes with its own copy of every string, as decoded. ns/op is per
// object.
func BenchmarkInternListed(b *testing.B) {
	const n = 10_000
	fresh := func() []Object {
		objs := make([]Object, n)
		for i := range objs {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("widget-%d", i), Namespace: fmt.Sprintf("team-%d", i%20),
				Labels: map[string]string{strings.Clone("app"): strings.Clone("widgets"), strings.Clone("team"): fmt.Sprintf("team-%d", i%20)},
			}, Data: map[string]string{}}
			for p := range 12 {
				cm.Data[fmt.Sprintf("parameter-%02d", p)] = fmt.Sprintf("a-moderately-long-value-%d-%d", p, i%5)
			}
			objs[i] = cm
		}
		return objs
	}
	l := newLean(false, false, false, nil, nil)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		objs := fresh()
		b.StartTimer()
		for _, o := range objs {
			l.intern(o, nil, false)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/object")
}
