package controllerutil

import (
	"errors"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

const testFinalizer = "widget.example.com/cleanup"

func TestValidateFinalizerName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"example.com/finalizer", true},
		{"widget.example.com/cleanup-1", true},
		{"kubernetes", true},
		{"orphan", true},
		{"foregroundDeletion", true},
		{"cleanup", false},                                // unqualified: the API server warns or rejects
		{"", false},                                       // empty
		{"example.com/", false},                           // empty name part
		{"/cleanup", false},                               // empty prefix
		{"Example_COM/x", false},                          // the prefix is not a DNS subdomain
		{"a/b/c", false},                                  // two slashes
		{"example.com/-x", false},                         // the name part starts with '-'
		{"example.com/x y", false},                        // a space
		{"example.com/" + strings.Repeat("x", 64), false}, // name part > 63
		{"example.com/" + strings.Repeat("x", 63), true},
	} {
		err := ValidateFinalizerName(tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("ValidateFinalizerName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidFinalizerName) {
			t.Errorf("ValidateFinalizerName(%q) = %v, does not wrap ErrInvalidFinalizerName", tc.name, err)
		}
	}
}

func deleting(o metav1.Object) metav1.Object {
	now := metav1.Now()
	o.SetDeletionTimestamp(&now)
	return o
}

func withFinalizers(o metav1.Object, fs ...string) metav1.Object {
	o.SetFinalizers(fs)
	return o
}

func unstructuredCM(ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

func TestAddFinalizer(t *testing.T) {
	for _, tc := range []struct {
		desc    string
		obj     metav1.Object
		name    string
		changed bool
		errIs   error // nil: no error, unless errAny
		errAny  bool
		want    []string
	}{
		{desc: "typed, none yet", obj: &corev1.ConfigMap{}, name: testFinalizer, changed: true, want: []string{testFinalizer}},
		{desc: "typed, another one", obj: withFinalizers(&corev1.ConfigMap{}, "a.io/x"), name: testFinalizer, changed: true, want: []string{"a.io/x", testFinalizer}},
		{desc: "typed, already there", obj: withFinalizers(&corev1.ConfigMap{}, testFinalizer), name: testFinalizer, want: []string{testFinalizer}},
		{desc: "unstructured, none yet", obj: unstructuredCM("ns", "a"), name: testFinalizer, changed: true, want: []string{testFinalizer}},
		{desc: "unstructured, already there", obj: withFinalizers(unstructuredCM("ns", "a"), testFinalizer), name: testFinalizer, want: []string{testFinalizer}},
		{desc: "metadata only", obj: &metav1.PartialObjectMetadata{}, name: testFinalizer, changed: true, want: []string{testFinalizer}},
		{desc: "being deleted", obj: deleting(&corev1.ConfigMap{}), name: testFinalizer, errIs: ErrBeingDeleted},
		{desc: "being deleted, unstructured", obj: deleting(withFinalizers(unstructuredCM("ns", "a"), "a.io/x")), name: testFinalizer, errIs: ErrBeingDeleted, want: []string{"a.io/x"}},
		{desc: "being deleted, already there", obj: deleting(withFinalizers(&corev1.ConfigMap{}, testFinalizer)), name: testFinalizer, want: []string{testFinalizer}},
		{desc: "unqualified name", obj: &corev1.ConfigMap{}, name: "cleanup", errIs: ErrInvalidFinalizerName},
		{desc: "empty name", obj: &corev1.ConfigMap{}, name: "", errIs: ErrInvalidFinalizerName},
		{desc: "nil", obj: nil, name: testFinalizer, errAny: true},
		{desc: "nil pointer", obj: (*corev1.ConfigMap)(nil), name: testFinalizer, errAny: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			changed, err := AddFinalizer(tc.obj, tc.name)
			switch {
			case tc.errIs != nil && !errors.Is(err, tc.errIs):
				t.Fatalf("err = %v, want %v", err, tc.errIs)
			case tc.errAny && err == nil:
				t.Fatal("no error")
			case tc.errIs == nil && !tc.errAny && err != nil:
				t.Fatalf("err = %v", err)
			}
			if changed != tc.changed {
				t.Errorf("changed = %v, want %v", changed, tc.changed)
			}
			if isNil(tc.obj) {
				return
			}
			if got := tc.obj.GetFinalizers(); !slices.Equal(got, tc.want) {
				t.Errorf("finalizers = %q, want %q", got, tc.want)
			}
			if ContainsFinalizer(tc.obj, tc.name) != slices.Contains(tc.want, tc.name) {
				t.Errorf("ContainsFinalizer disagrees with %q", tc.obj.GetFinalizers())
			}
		})
	}
}

func TestAddFinalizerDoesNotAlias(t *testing.T) {
	fs := make([]string, 1, 4)
	fs[0] = "a.io/x"
	a := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Finalizers: fs}}
	b := a.DeepCopy()
	b.Finalizers = fs // a shallow copy sharing the array
	if _, err := AddFinalizer(a, "a.io/y"); err != nil {
		t.Fatal(err)
	}
	if _, err := AddFinalizer(b, "b.io/z"); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Finalizers, []string{"a.io/x", "a.io/y"}) || !slices.Equal(b.Finalizers, []string{"a.io/x", "b.io/z"}) {
		t.Fatalf("a %q, b %q", a.Finalizers, b.Finalizers)
	}
}

func TestRemoveFinalizer(t *testing.T) {
	for _, tc := range []struct {
		desc    string
		obj     metav1.Object
		changed bool
		want    []string
	}{
		{desc: "typed, only one", obj: withFinalizers(&corev1.ConfigMap{}, testFinalizer), changed: true, want: []string{}},
		{desc: "typed, among others, twice", obj: withFinalizers(&corev1.ConfigMap{}, "a.io/x", testFinalizer, "b.io/y", testFinalizer), changed: true, want: []string{"a.io/x", "b.io/y"}},
		{desc: "typed, absent", obj: withFinalizers(&corev1.ConfigMap{}, "a.io/x"), want: []string{"a.io/x"}},
		{desc: "typed, none", obj: &corev1.ConfigMap{}, want: nil},
		{desc: "being deleted", obj: deleting(withFinalizers(&corev1.ConfigMap{}, testFinalizer, "a.io/x")), changed: true, want: []string{"a.io/x"}},
		{desc: "unstructured", obj: withFinalizers(unstructuredCM("ns", "a"), testFinalizer, "a.io/x"), changed: true, want: []string{"a.io/x"}},
		{desc: "unstructured, absent", obj: unstructuredCM("ns", "a"), want: nil},
		{desc: "nil", obj: nil},
		{desc: "nil pointer", obj: (*corev1.ConfigMap)(nil)},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := RemoveFinalizer(tc.obj, testFinalizer); got != tc.changed {
				t.Errorf("changed = %v, want %v", got, tc.changed)
			}
			if isNil(tc.obj) {
				if ContainsFinalizer(tc.obj, testFinalizer) {
					t.Error("a nil object contains a finalizer")
				}
				return
			}
			if got := tc.obj.GetFinalizers(); len(got) != len(tc.want) || !slices.Equal(got, tc.want) {
				t.Errorf("finalizers = %q, want %q", got, tc.want)
			}
			if ContainsFinalizer(tc.obj, testFinalizer) {
				t.Error("still contains the finalizer")
			}
		})
	}
}

// owner objects for the owner-reference tests.
func widgetOwner(ns, name, uid string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("example.com/v1")
	u.SetKind("Widget")
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetUID(types.UID(uid))
	return u
}

func deploymentOwner(ns, name, uid string) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)}}
}

func ownedCM(ns string, refs ...metav1.OwnerReference) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "child", OwnerReferences: refs}}
}

func ref(apiVersion, kind, name, uid string, controller bool) metav1.OwnerReference {
	r := metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid)}
	if controller {
		r.Controller, r.BlockOwnerDeletion = new(true), new(true)
	}
	return r
}

func TestSetControllerReference(t *testing.T) {
	for _, tc := range []struct {
		desc    string
		owner   metav1.Object
		object  metav1.Object
		opts    []OwnerReferenceOption
		want    []metav1.OwnerReference // nil with an error: unchanged
		owned   bool                    // the error is an *AlreadyOwnedError
		wantErr bool
	}{
		{
			desc:  "typed owner from the scheme",
			owner: deploymentOwner("ns", "web", "u1"), object: ownedCM("ns"),
			want: []metav1.OwnerReference{ref("apps/v1", "Deployment", "web", "u1", true)},
		},
		{
			desc:  "unstructured owner from its TypeMeta",
			owner: widgetOwner("ns", "w1", "u1"), object: ownedCM("ns"),
			want: []metav1.OwnerReference{ref("example.com/v1", "Widget", "w1", "u1", true)},
		},
		{
			desc:  "unstructured object",
			owner: deploymentOwner("ns", "web", "u1"), object: unstructuredCM("ns", "child"),
			want: []metav1.OwnerReference{ref("apps/v1", "Deployment", "web", "u1", true)},
		},
		{
			desc:  "cluster-scoped owner of a namespaced object",
			owner: &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "admin", UID: "u1"}}, object: ownedCM("ns"),
			want: []metav1.OwnerReference{ref("rbac.authorization.k8s.io/v1", "ClusterRole", "admin", "u1", true)},
		},
		{
			desc:  "WithBlockOwnerDeletion(false)",
			owner: deploymentOwner("ns", "web", "u1"), object: ownedCM("ns"), opts: []OwnerReferenceOption{WithBlockOwnerDeletion(false)},
			want: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "u1", Controller: new(true), BlockOwnerDeletion: new(false)}},
		},
		{
			desc:  "same owner again: updated in place (new UID, new version)",
			owner: widgetOwner("ns", "w1", "u2"), object: ownedCM("ns", ref("a.io/v1", "Other", "o", "u9", false), ref("example.com/v1beta1", "Widget", "w1", "u1", true)),
			want: []metav1.OwnerReference{ref("a.io/v1", "Other", "o", "u9", false), ref("example.com/v1", "Widget", "w1", "u2", true)},
		},
		{
			desc:  "plain reference to the same owner becomes the controller",
			owner: widgetOwner("ns", "w1", "u1"), object: ownedCM("ns", ref("example.com/v1", "Widget", "w1", "u1", false)),
			want: []metav1.OwnerReference{ref("example.com/v1", "Widget", "w1", "u1", true)},
		},
		{
			desc:  "another controller: AlreadyOwned",
			owner: widgetOwner("ns", "w1", "u1"), object: ownedCM("ns", ref("apps/v1", "Deployment", "web", "u0", true)),
			owned: true, wantErr: true,
		},
		{
			desc:  "same name, other kind is another controller",
			owner: widgetOwner("ns", "web", "u1"), object: ownedCM("ns", ref("apps/v1", "Deployment", "web", "u0", true)),
			owned: true, wantErr: true,
		},
		{desc: "cross-namespace owner", owner: deploymentOwner("other", "web", "u1"), object: ownedCM("ns"), wantErr: true},
		{desc: "namespaced owner of a cluster-scoped object", owner: deploymentOwner("ns", "web", "u1"), object: &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "r"}}, wantErr: true},
		{desc: "owner without UID", owner: deploymentOwner("ns", "web", ""), object: ownedCM("ns"), wantErr: true},
		{desc: "owner without name", owner: deploymentOwner("ns", "", "u1"), object: ownedCM("ns"), wantErr: true},
		{desc: "unstructured owner without kind", owner: func() metav1.Object { u := widgetOwner("ns", "w", "u1"); u.SetKind(""); return u }(), object: ownedCM("ns"), wantErr: true},
		{desc: "typed owner not in the scheme", owner: &notRegistered{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "x", UID: "u1"}}, object: ownedCM("ns"), wantErr: true},
		{desc: "nil owner", owner: nil, object: ownedCM("ns"), wantErr: true},
		{desc: "nil object", owner: deploymentOwner("ns", "web", "u1"), object: (*corev1.ConfigMap)(nil), wantErr: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			var before []metav1.OwnerReference
			if !isNil(tc.object) {
				before = slices.Clone(tc.object.GetOwnerReferences())
			}
			err := SetControllerReference(tc.owner, tc.object, nil, tc.opts...)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			var owned *AlreadyOwnedError
			if errors.As(err, &owned) != tc.owned {
				t.Fatalf("err = %v (%T), want AlreadyOwnedError %v", err, err, tc.owned)
			}
			if owned != nil && (owned.Owner.Kind != "Deployment" || owned.Name != "child" || !strings.Contains(err.Error(), "Deployment web")) {
				t.Errorf("AlreadyOwnedError = %+v: %v", owned, err)
			}
			if isNil(tc.object) {
				return
			}
			want := tc.want
			if tc.wantErr {
				want = before
			}
			if got := tc.object.GetOwnerReferences(); !equalRefs(got, want) {
				t.Errorf("owner references\n got %s\nwant %s", refsString(got), refsString(want))
			}
			if !tc.wantErr && !HasControllerReference(tc.object) {
				t.Error("HasControllerReference is false")
			}
		})
	}
}

// Two controllers: the second one to claim an object gets an
// AlreadyOwnedError, the first one can claim it again (idempotent).
func TestSetControllerReferenceTwoControllers(t *testing.T) {
	a, b := widgetOwner("ns", "a", "ua"), widgetOwner("ns", "b", "ub")
	child := ownedCM("ns")
	if HasControllerReference(child) {
		t.Fatal("HasControllerReference on a fresh object")
	}
	if err := SetControllerReference(a, child, nil); err != nil {
		t.Fatal(err)
	}
	err := SetControllerReference(b, child, nil)
	var owned *AlreadyOwnedError
	if !errors.As(err, &owned) || owned.Owner.Name != "a" {
		t.Fatalf("second controller: %v", err)
	}
	if err := SetControllerReference(a, child, nil); err != nil {
		t.Fatal(err)
	}
	// b may still be a plain owner.
	if err := SetOwnerReference(b, child, nil); err != nil {
		t.Fatal(err)
	}
	want := []metav1.OwnerReference{ref("example.com/v1", "Widget", "a", "ua", true), ref("example.com/v1", "Widget", "b", "ub", false)}
	if !equalRefs(child.OwnerReferences, want) {
		t.Fatalf("got %s", refsString(child.OwnerReferences))
	}
	if got := metav1.GetControllerOf(child); got == nil || got.Name != "a" {
		t.Fatalf("controller %v", got)
	}
}

func TestSetOwnerReference(t *testing.T) {
	for _, tc := range []struct {
		desc    string
		owner   metav1.Object
		object  metav1.Object
		opts    []OwnerReferenceOption
		want    []metav1.OwnerReference
		wantErr bool
	}{
		{desc: "typed", owner: deploymentOwner("ns", "web", "u1"), object: ownedCM("ns"), want: []metav1.OwnerReference{ref("apps/v1", "Deployment", "web", "u1", false)}},
		{desc: "beside a controller", owner: deploymentOwner("ns", "web", "u1"), object: ownedCM("ns", ref("example.com/v1", "Widget", "w", "u0", true)),
			want: []metav1.OwnerReference{ref("example.com/v1", "Widget", "w", "u0", true), ref("apps/v1", "Deployment", "web", "u1", false)}},
		{desc: "replaces the same owner's reference", owner: deploymentOwner("ns", "web", "u2"), object: ownedCM("ns", ref("apps/v1", "Deployment", "web", "u1", true)),
			want: []metav1.OwnerReference{ref("apps/v1", "Deployment", "web", "u2", false)}},
		{desc: "with block", owner: deploymentOwner("ns", "web", "u1"), object: ownedCM("ns"), opts: []OwnerReferenceOption{WithBlockOwnerDeletion(true)},
			want: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "u1", BlockOwnerDeletion: new(true)}}},
		{desc: "cross-namespace", owner: deploymentOwner("a", "web", "u1"), object: ownedCM("b"), wantErr: true},
		{desc: "nil object", owner: deploymentOwner("a", "web", "u1"), object: nil, wantErr: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			err := SetOwnerReference(tc.owner, tc.object, nil, tc.opts...)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if got := tc.object.GetOwnerReferences(); !equalRefs(got, tc.want) {
				t.Errorf("owner references\n got %s\nwant %s", refsString(got), refsString(tc.want))
			}
		})
	}
}

func TestRemoveOwnerReference(t *testing.T) {
	child := ownedCM("ns", ref("apps/v1", "Deployment", "web", "u1", true), ref("example.com/v1", "Widget", "web", "u2", false))
	changed, err := RemoveOwnerReference(deploymentOwner("ns", "web", "u1"), child, nil)
	if err != nil || !changed {
		t.Fatalf("changed %v, err %v", changed, err)
	}
	if want := []metav1.OwnerReference{ref("example.com/v1", "Widget", "web", "u2", false)}; !equalRefs(child.OwnerReferences, want) {
		t.Fatalf("got %s", refsString(child.OwnerReferences))
	}
	if HasControllerReference(child) {
		t.Fatal("the controller reference is still there")
	}
	changed, err = RemoveOwnerReference(deploymentOwner("ns", "web", "u1"), child, nil)
	if err != nil || changed {
		t.Fatalf("second remove: changed %v, err %v", changed, err)
	}
	if _, err := RemoveOwnerReference(nil, child, nil); err == nil {
		t.Fatal("nil owner: no error")
	}
}

// A scheme passed in is used, and a type registered under two kinds needs
// its TypeMeta to choose.
func TestOwnerKindFromScheme(t *testing.T) {
	scheme := runtime.NewScheme()
	scheme.AddKnownTypeWithName(schema.GroupVersionKind{Group: "meta.k8s.io", Version: "v1", Kind: "Thing"}, &notRegistered{})
	owner := &notRegistered{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "t", UID: "u1"}}
	child := ownedCM("ns")
	if err := SetControllerReference(owner, child, scheme); err != nil {
		t.Fatal(err)
	}
	if got := child.OwnerReferences[0]; got.APIVersion != "meta.k8s.io/v1" || got.Kind != "Thing" {
		t.Fatalf("got %s", refsString(child.OwnerReferences))
	}

	two := runtime.NewScheme()
	two.AddKnownTypeWithName(schema.GroupVersionKind{Group: "a.io", Version: "v1", Kind: "Thing"}, &notRegistered{})
	two.AddKnownTypeWithName(schema.GroupVersionKind{Group: "b.io", Version: "v1", Kind: "Thing"}, &notRegistered{})
	if err := SetControllerReference(owner, ownedCM("ns"), two); err == nil {
		t.Fatal("ambiguous kind: no error")
	}
	owner.SetGroupVersionKind(schema.GroupVersionKind{Group: "b.io", Version: "v1", Kind: "Thing"})
	child = ownedCM("ns")
	if err := SetControllerReference(owner, child, two); err != nil {
		t.Fatal(err)
	}
	if got := child.OwnerReferences[0]; got.APIVersion != "b.io/v1" {
		t.Fatalf("got %s", refsString(child.OwnerReferences))
	}
}

// notRegistered is a typed object in no scheme by default.
type notRegistered struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

func (n *notRegistered) DeepCopyObject() runtime.Object {
	out := *n
	n.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

func equalRefs(a, b []metav1.OwnerReference) bool {
	return len(a) == len(b) && refsString(a) == refsString(b)
}

func refsString(refs []metav1.OwnerReference) string {
	var b strings.Builder
	for _, r := range refs {
		b.WriteString(r.APIVersion + " " + r.Kind + " " + r.Name + " " + string(r.UID))
		for _, p := range []*bool{r.Controller, r.BlockOwnerDeletion} {
			switch {
			case p == nil:
				b.WriteString(" nil")
			case *p:
				b.WriteString(" true")
			default:
				b.WriteString(" false")
			}
		}
		b.WriteString("; ")
	}
	return b.String()
}
