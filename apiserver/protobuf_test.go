package apiserver_test

import (
	"context"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"kloop.dev/kloop/apiserver/apiservertest"
)

const protobufType = "application/vnd.kubernetes.protobuf"

// contentTypes records the media types of the answers a client got.
type contentTypes struct {
	mu  sync.Mutex
	got map[string]int // media type -> answers
}

// protobufConfig returns env's config with protobuf requests and answers
// preferred, as kube-controller-manager configures its clients, recording
// the answers' media types in ct.
func protobufConfig(env *apiservertest.Env, ct *contentTypes) *rest.Config {
	cfg := env.Config()
	cfg.ContentType = protobufType
	cfg.AcceptContentTypes = protobufType + ",application/json"
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(r)
			if err == nil {
				mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
				ct.mu.Lock()
				if ct.got == nil {
					ct.got = map[string]int{}
				}
				ct.got[mt]++
				ct.mu.Unlock()
			}
			return resp, err
		})
	})
	return cfg
}

// onlyProtobuf fails unless every answer recorded was protobuf.
func (c *contentTypes) onlyProtobuf(t *testing.T) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.got) != 1 || c.got[protobufType] == 0 {
		t.Errorf("answers by media type: %v, want protobuf only", c.got)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// protobufCase is one kind's round of writes and reads through a typed
// client: create, get, list, update, patch, delete, and the watch events
// they make.
type protobufCase[T runtime.Object] struct {
	create func(ctx context.Context, o T, opts metav1.CreateOptions) (T, error)
	get    func(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	update func(ctx context.Context, o T, opts metav1.UpdateOptions) (T, error)
	patch  func(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub ...string) (T, error)
	delete func(ctx context.Context, name string, opts metav1.DeleteOptions) error
	list   func(ctx context.Context, opts metav1.ListOptions) (int, string, error)
	watch  func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	// obj is the object created; change changes it for the update.
	obj    T
	change func(T)
}

func (c protobufCase[T]) run(t *testing.T, ctx context.Context) {
	t.Helper()
	created, err := c.create(ctx, c.obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	m := metaOf(t, created)
	if m.GetUID() == "" || m.GetResourceVersion() == "" {
		t.Fatalf("create answered %+v", created)
	}
	w, err := c.watch(ctx, metav1.ListOptions{ResourceVersion: m.GetResourceVersion(), FieldSelector: "metadata.name=" + m.GetName()})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()
	got, err := c.get(ctx, m.GetName(), metav1.GetOptions{})
	if err != nil || !equality.Semantic.DeepEqual(got, created) {
		t.Fatalf("get: %v\n got %+v\nwant %+v", err, got, created)
	}
	if n, rv, err := c.list(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + m.GetName()}); err != nil || n != 1 || rv == "" {
		t.Fatalf("list: %v, %d items at %q", err, n, rv)
	}
	c.change(got)
	updated, err := c.update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	// A stale update: 409, with kube's reason and details.
	_, err = c.update(ctx, got, metav1.UpdateOptions{})
	checkStatusError(t, "stale update", err, metav1.StatusReasonConflict, m.GetName())
	patched, err := c.patch(ctx, m.GetName(), types.MergePatchType, []byte(`{"metadata":{"annotations":{"patched":"yes"}}}`), metav1.PatchOptions{})
	if err != nil || metaOf(t, patched).GetAnnotations()["patched"] != "yes" {
		t.Fatalf("patch: %v %+v", err, patched)
	}
	if err := c.delete(ctx, m.GetName(), metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	_, err = c.get(ctx, m.GetName(), metav1.GetOptions{})
	checkStatusError(t, "get after delete", err, metav1.StatusReasonNotFound, m.GetName())
	_, err = c.create(ctx, c.obj, metav1.CreateOptions{})
	if err == nil {
		_, err = c.create(ctx, c.obj, metav1.CreateOptions{})
		checkStatusError(t, "create twice", err, metav1.StatusReasonAlreadyExists, m.GetName())
	}
	var events []string
	for ev := range w.ResultChan() {
		if ev.Type == watch.Error {
			t.Fatalf("watch error %+v", ev.Object)
		}
		if reflect.TypeOf(ev.Object) != reflect.TypeOf(created) {
			t.Fatalf("watch event of %T, want %T", ev.Object, created)
		}
		o := metaOf(t, ev.Object)
		events = append(events, fmt.Sprintf("%s@%v", ev.Type, o.GetResourceVersion() == metaOf(t, updated).GetResourceVersion()))
		if len(events) == 3 {
			break
		}
	}
	if want := "[MODIFIED@true MODIFIED@false DELETED@false]"; fmt.Sprint(events) != want {
		// A pod's deletion may take an update (its deletionTimestamp) first.
		if !strings.HasPrefix(fmt.Sprint(events), "[MODIFIED@true MODIFIED@false MODIFIED@false") {
			t.Fatalf("watch events %v, want %s", events, want)
		}
	}
}

func metaOf(t *testing.T, o runtime.Object) metav1.Object {
	t.Helper()
	m, ok := o.(metav1.Object)
	if !ok {
		t.Fatalf("%T has no metadata", o)
	}
	return m
}

// checkStatusError checks that err is the StatusError of reason about
// object name, decoded with its details.
func checkStatusError(t *testing.T, what string, err error, reason metav1.StatusReason, name string) {
	t.Helper()
	se, ok := err.(*apierrors.StatusError)
	if !ok {
		t.Fatalf("%s: %T %v, want a *errors.StatusError", what, err, err)
	}
	if st := se.ErrStatus; st.Reason != reason || st.Details == nil || st.Details.Name != name || st.Status != metav1.StatusFailure {
		t.Fatalf("%s: %+v, want reason %s about %q", what, st, reason, name)
	}
}

// Typed clients that send protobuf and prefer it in answers, as
// kube-controller-manager's do, get protobuf answers for everything they
// ask of built-in kinds — objects, lists, watch events, errors — on both
// servers.
func TestProtobufTypedClients(t *testing.T) {
	forEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		var ct contentTypes
		cs, err := kubernetes.NewForConfig(protobufConfig(env, &ct))
		if err != nil {
			t.Fatal(err)
		}
		ctx := ctxT(t)
		ns := env.Namespace
		list := func(n int, rv string) (int, string) { return n, rv }
		now := metav1.NewTime(time.Now().Truncate(time.Second))
		t.Run("configmaps", func(t *testing.T) {
			c := cs.CoreV1().ConfigMaps(ns)
			protobufCase[*corev1.ConfigMap]{create: c.Create, get: c.Get, update: c.Update, patch: c.Patch, delete: c.Delete, watch: c.Watch,
				list: func(ctx context.Context, o metav1.ListOptions) (int, string, error) {
					l, err := c.List(ctx, o)
					if err != nil {
						return 0, "", err
					}
					n, rv := list(len(l.Items), l.ResourceVersion)
					return n, rv, nil
				},
				obj:    &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Labels: map[string]string{"a": "b"}}, Data: map[string]string{"k": "v"}, BinaryData: map[string][]byte{"b": {0, 1, 255}}},
				change: func(o *corev1.ConfigMap) { o.Data["k"] = "w" },
			}.run(t, ctx)
		})
		t.Run("pods", func(t *testing.T) {
			c := cs.CoreV1().Pods(ns)
			protobufCase[*corev1.Pod]{create: c.Create, get: c.Get, update: c.Update, patch: c.Patch, delete: c.Delete, watch: c.Watch,
				list: func(ctx context.Context, o metav1.ListOptions) (int, string, error) {
					l, err := c.List(ctx, o)
					if err != nil {
						return 0, "", err
					}
					return len(l.Items), l.ResourceVersion, nil
				},
				obj: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27",
					Ports:     []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}},
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("64Mi")}}}}}},
				change: func(o *corev1.Pod) { o.Labels = map[string]string{"x": "y"} },
			}.run(t, ctx)
		})
		t.Run("deployments", func(t *testing.T) {
			c := cs.AppsV1().Deployments(ns)
			protobufCase[*appsv1.Deployment]{create: c.Create, get: c.Get, update: c.Update, patch: c.Patch, delete: c.Delete, watch: c.Watch,
				list: func(ctx context.Context, o metav1.ListOptions) (int, string, error) {
					l, err := c.List(ctx, o)
					if err != nil {
						return 0, "", err
					}
					return len(l.Items), l.ResourceVersion, nil
				},
				obj: &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d"}, Spec: appsv1.DeploymentSpec{
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "d"}},
					Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromString("50%"))}},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "d"}}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27"}}}}}},
				change: func(o *appsv1.Deployment) { o.Spec.Replicas = ptr.To[int32](3) },
			}.run(t, ctx)
		})
		t.Run("leases", func(t *testing.T) {
			c := cs.CoordinationV1().Leases(ns)
			protobufCase[*coordinationv1.Lease]{create: c.Create, get: c.Get, update: c.Update, patch: c.Patch, delete: c.Delete, watch: c.Watch,
				list: func(ctx context.Context, o metav1.ListOptions) (int, string, error) {
					l, err := c.List(ctx, o)
					if err != nil {
						return 0, "", err
					}
					return len(l.Items), l.ResourceVersion, nil
				},
				obj: &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("me"),
					LeaseDurationSeconds: ptr.To[int32](15), AcquireTime: &metav1.MicroTime{Time: now.Add(123456 * time.Microsecond)}, RenewTime: &metav1.MicroTime{Time: now.Time}}},
				change: func(o *coordinationv1.Lease) { o.Spec.LeaseTransitions = ptr.To[int32](1) },
			}.run(t, ctx)
		})
		t.Run("events", func(t *testing.T) {
			c := cs.CoreV1().Events(ns)
			protobufCase[*corev1.Event]{create: c.Create, get: c.Get, update: c.Update, patch: c.Patch, delete: c.Delete, watch: c.Watch,
				list: func(ctx context.Context, o metav1.ListOptions) (int, string, error) {
					l, err := c.List(ctx, o)
					if err != nil {
						return 0, "", err
					}
					return len(l.Items), l.ResourceVersion, nil
				},
				obj: &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e"}, InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Name: "cm", Namespace: ns},
					Reason: "Tested", Message: "m", Type: corev1.EventTypeNormal, Count: 1, FirstTimestamp: now, LastTimestamp: now, Source: corev1.EventSource{Component: "test"}},
				change: func(o *corev1.Event) { o.Count = 2 },
			}.run(t, ctx)
		})
		t.Run("events.k8s.io", func(t *testing.T) {
			c := cs.EventsV1().Events(ns)
			protobufCase[*eventsv1.Event]{create: c.Create, get: c.Get, update: c.Update, patch: c.Patch, delete: c.Delete, watch: c.Watch,
				list: func(ctx context.Context, o metav1.ListOptions) (int, string, error) {
					l, err := c.List(ctx, o)
					if err != nil {
						return 0, "", err
					}
					return len(l.Items), l.ResourceVersion, nil
				},
				obj: &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e2"}, EventTime: metav1.MicroTime{Time: now.Add(5 * time.Microsecond)}, Regarding: corev1.ObjectReference{Kind: "ConfigMap", Name: "cm", Namespace: ns},
					Reason: "Tested", Note: "n", Type: "Normal", Action: "Test", ReportingController: "kloop.dev/test", ReportingInstance: "i"},
				change: func(o *eventsv1.Event) { o.Labels = map[string]string{"x": "y"} },
			}.run(t, ctx)
		})
		t.Run("rbac", func(t *testing.T) {
			roles := cs.RbacV1().Roles(ns)
			protobufCase[*rbacv1.Role]{create: roles.Create, get: roles.Get, update: roles.Update, patch: roles.Patch, delete: roles.Delete, watch: roles.Watch,
				list: func(ctx context.Context, o metav1.ListOptions) (int, string, error) {
					l, err := roles.List(ctx, o)
					if err != nil {
						return 0, "", err
					}
					return len(l.Items), l.ResourceVersion, nil
				},
				obj:    &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}}},
				change: func(o *rbacv1.Role) { o.Rules[0].Verbs = append(o.Rules[0].Verbs, "watch") },
			}.run(t, ctx)
			bindings := cs.RbacV1().RoleBindings(ns)
			protobufCase[*rbacv1.RoleBinding]{create: bindings.Create, get: bindings.Get, update: bindings.Update, patch: bindings.Patch, delete: bindings.Delete, watch: bindings.Watch,
				list: func(ctx context.Context, o metav1.ListOptions) (int, string, error) {
					l, err := bindings.List(ctx, o)
					if err != nil {
						return 0, "", err
					}
					return len(l.Items), l.ResourceVersion, nil
				},
				obj: &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "rb"}, RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "view"},
					Subjects: []rbacv1.Subject{{Kind: "User", Name: "alice", APIGroup: "rbac.authorization.k8s.io"}}},
				change: func(o *rbacv1.RoleBinding) {
					o.Subjects = append(o.Subjects, rbacv1.Subject{Kind: "ServiceAccount", Name: "default", Namespace: ns})
				},
			}.run(t, ctx)
		})
		// 422: an invalid object, with its causes.
		_, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "Bad_Name"}}, metav1.CreateOptions{})
		checkStatusError(t, "invalid create", err, metav1.StatusReasonInvalid, "Bad_Name")
		if causes := err.(*apierrors.StatusError).ErrStatus.Details.Causes; len(causes) != 1 || causes[0].Field != "metadata.name" || causes[0].Type != metav1.CauseTypeFieldValueInvalid {
			t.Fatalf("invalid create: causes %+v", causes)
		}
		ct.onlyProtobuf(t)
	})
}

// A client-go informer whose client prefers protobuf lists and watches in
// protobuf, on both servers.
func TestProtobufInformer(t *testing.T) {
	forEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		var ct contentTypes
		cs, err := kubernetes.NewForConfig(protobufConfig(env, &ct))
		if err != nil {
			t.Fatal(err)
		}
		testSharedInformer(t, env, cs)
		ct.onlyProtobuf(t)
	})
}

// Every built-in kind both servers serve is the same in protobuf as in
// JSON: each object of every list, decoded from either, is the same Go
// value (the list itself too). The namespace holds objects with many of
// their types' fields set first.
func TestProtobufSameAsJSON(t *testing.T) {
	forEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		ctx := ctxT(t)
		cs := clientset(t, env)
		ns := env.Namespace
		createRichObjects(t, ctx, cs, ns)
		_, lists, err := cs.Discovery().ServerGroupsAndResources()
		if err != nil {
			t.Fatal(err)
		}
		var ct contentTypes
		pbCfg := protobufConfig(env, &ct)
		compared := 0
		for _, l := range lists {
			gv, err := schema.ParseGroupVersion(l.GroupVersion)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range l.APIResources {
				if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") || !protobufScheme.Recognizes(gv.WithKind(r.Kind+"List")) {
					continue // subresources, create-only kinds, custom resources
				}
				path := "/api/" + gv.Version
				if gv.Group != "" {
					path = "/apis/" + l.GroupVersion
				}
				if r.Namespaced {
					path += "/namespaces/" + ns
				}
				path += "/" + r.Name
				jsonList := getList(t, ctx, env.Config(), path, "application/json")
				// The same revision, whatever other tests wrote since.
				rv := jsonList.(metav1.ListInterface).GetResourceVersion()
				if rv == "" {
					continue // computed at each read (componentstatuses, in a random order)
				}
				pbList := getList(t, ctx, pbCfg, path+"?resourceVersionMatch=Exact&resourceVersion="+rv, protobufType)
				if !equality.Semantic.DeepEqual(jsonList, pbList) {
					t.Errorf("%s: the protobuf list differs from the JSON one:\nprotobuf %+v\n    json %+v", path, pbList, jsonList)
				}
				compared++
			}
		}
		t.Logf("%d kinds compared", compared)
		if compared < 15 {
			t.Fatalf("compared %d kinds only", compared)
		}
		ct.onlyProtobuf(t)
	})
}

// protobufScheme is client-go's scheme with the CRD kinds.
var protobufScheme = func() *runtime.Scheme {
	sc := runtime.NewScheme()
	utilruntime.Must(scheme.AddToScheme(sc))
	utilruntime.Must(apiextensionsv1.AddToScheme(sc))
	return sc
}()

// getList lists path accepting only accept, and decodes the answer with
// client-go's scheme (consistent reads: a list at the latest revision).
func getList(t *testing.T, ctx context.Context, cfg *rest.Config, path, accept string) runtime.Object {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	cfg.AcceptContentTypes = accept
	cfg.ContentType = accept
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(protobufScheme).WithoutConversion()
	cfg.GroupVersion = nil
	rc, err := rest.UnversionedRESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p, query, _ := strings.Cut(path, "?")
	req := rc.Get().AbsPath(p)
	if query != "" {
		q, err := url.ParseQuery(query)
		if err != nil {
			t.Fatal(err)
		}
		for k, vs := range q {
			req = req.Param(k, vs[0])
		}
	}
	res := req.Do(ctx)
	var ctype string
	res.ContentType(&ctype)
	obj, err := res.Get()
	if err != nil {
		t.Fatalf("%s in %s: %v", path, accept, err)
	}
	if mt, _, _ := mime.ParseMediaType(ctype); mt != accept {
		t.Fatalf("%s: answered in %s, want %s", path, ctype, accept)
	}
	obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	return obj
}

// createRichObjects creates in ns objects of many kinds with many of their
// fields set: what TestProtobufSameAsJSON compares in both encodings.
func createRichObjects(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns string) {
	t.Helper()
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	check := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	labels := map[string]string{"app": "rich", "tier": "web"}
	podSpec := corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init", Image: "busybox:1.36", Command: []string{"sh", "-c", "true"}}},
		Containers: []corev1.Container{{
			Name: "c", Image: "nginx:1.27", Args: []string{"-g", "daemon off;"}, WorkingDir: "/srv",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 80, Protocol: corev1.ProtocolTCP}},
			Env: []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
				{Name: "CM", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "rich"}, Key: "k", Optional: ptr.To(true)}}}},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
				Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1.5"), corev1.ResourceMemory: resource.MustParse("2Gi")}},
			VolumeMounts:   []corev1.VolumeMount{{Name: "data", MountPath: "/data", ReadOnly: true}},
			LivenessProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}}, InitialDelaySeconds: 3, PeriodSeconds: 10},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}}},
			SecurityContext: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000), AllowPrivilegeEscalation: ptr.To(false),
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			ImagePullPolicy: corev1.PullIfNotPresent,
		}},
		Volumes:       []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("64Mi"))}}}},
		NodeSelector:  map[string]string{"disk": "ssd"},
		Tolerations:   []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpEqual, Value: "v", Effect: corev1.TaintEffectNoSchedule}},
		Affinity:      &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 50, PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"rich"}}}}, TopologyKey: "kubernetes.io/hostname"}}}}},
		RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst, TerminationGracePeriodSeconds: ptr.To[int64](45),
		ServiceAccountName: "rich", Hostname: "h", Subdomain: "s", Priority: nil,
	}
	check(cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "rich", Labels: labels, Annotations: map[string]string{"note": "ü ✓"}, Finalizers: []string{"example.com/hold"}},
		Data: map[string]string{"k": "v", "multi": "a\nb\n"}, BinaryData: map[string][]byte{"bin": {0, 1, 2, 255}}, Immutable: ptr.To(false)}, metav1.CreateOptions{}))
	check(cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "rich", Labels: labels}, Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"password": []byte("s3cret")}, StringData: map[string]string{"user": "me"}}, metav1.CreateOptions{}))
	check(cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "rich"}, AutomountServiceAccountToken: ptr.To(false),
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull"}}}, metav1.CreateOptions{}))
	check(cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "rich", Labels: labels,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "rich", UID: "0b4e5b2e-0000-4000-8000-000000000001", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(false)}}},
		Spec: podSpec}, metav1.CreateOptions{}))
	check(cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "rich", Labels: labels}, Spec: corev1.ServiceSpec{
		Selector: labels, Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP}, {Name: "dns", Port: 53, TargetPort: intstr.FromInt32(5353), Protocol: corev1.ProtocolUDP}},
		SessionAffinity: corev1.ServiceAffinityClientIP, SessionAffinityConfig: &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](600)}}}}, metav1.CreateOptions{}))
	check(cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "rich", Labels: labels, Annotations: map[string]string{"a": "b"}}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels}, MinReadySeconds: 5, RevisionHistoryLimit: ptr.To[int32](3), ProgressDeadlineSeconds: ptr.To[int32](120),
		Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromString("50%")), MaxUnavailable: ptr.To(intstr.FromInt32(0))}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec}}}, metav1.CreateOptions{}))
	check(cs.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rich", Labels: labels}, Spec: appsv1.ReplicaSetSpec{
		Replicas: ptr.To[int32](0), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"rs": "rich"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"rs": "rich"}}, Spec: podSpec}}}, metav1.CreateOptions{}))
	check(cs.CoordinationV1().Leases(ns).Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "rich"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("me"),
		LeaseDurationSeconds: ptr.To[int32](15), AcquireTime: &metav1.MicroTime{Time: now.Add(123456 * time.Microsecond)}, RenewTime: &metav1.MicroTime{Time: now.Add(time.Microsecond)}, LeaseTransitions: ptr.To[int32](4)}}, metav1.CreateOptions{}))
	check(cs.CoreV1().Events(ns).Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "rich"}, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "rich", Namespace: ns, FieldPath: "spec.containers{c}"},
		Reason: "Tested", Message: "m", Type: corev1.EventTypeWarning, Count: 3, FirstTimestamp: now, LastTimestamp: now, Source: corev1.EventSource{Component: "test", Host: "h"},
		Series: &corev1.EventSeries{Count: 2, LastObservedTime: metav1.MicroTime{Time: now.Add(7 * time.Microsecond)}}, EventTime: metav1.MicroTime{Time: now.Add(3 * time.Microsecond)},
		ReportingController: "kloop.dev/test", ReportingInstance: "i", Action: "Test"}, metav1.CreateOptions{}))
	check(cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "rich"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"", "apps"}, Resources: []string{"pods", "deployments/scale"}, Verbs: []string{"get", "update"}, ResourceNames: []string{"a"}}}}, metav1.CreateOptions{}))
	check(cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "rich"}, RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "rich"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "rich", Namespace: ns}, {Kind: "Group", Name: "devs", APIGroup: "rbac.authorization.k8s.io"}}}, metav1.CreateOptions{}))
	t.Cleanup(func() {
		// The ConfigMap's finalizer would keep the namespace.
		_, _ = cs.CoreV1().ConfigMaps(ns).Patch(context.Background(), "rich", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
}
