package garbagecollector

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func ref(kind, name, uid string) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: kind, Name: name, UID: types.UID(uid)}
}

func dep(name, ns string, owners ...metav1.OwnerReference) *node {
	return &node{identity: objectRef{APIVersion: "v1", Kind: "ConfigMap", Name: name, Namespace: ns, UID: types.UID("uid-" + name)}, owners: owners}
}

func names(ns []*node) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.identity.Name)
	}
	slices.Sort(out)
	return out
}

func TestPartitionDependents(t *testing.T) {
	owner := objectRef{APIVersion: "v1", Kind: "ConfigMap", Name: "o", UID: "u", Namespace: "a"}
	clusterOwner := objectRef{APIVersion: "v1", Kind: "Namespace", Name: "o", UID: "u"}
	for _, tc := range []struct {
		name               string
		owner              objectRef
		deps               []*node
		matching, nonmatch []string
	}{
		{"same coordinates and namespace", owner, []*node{dep("d", "a", ref("ConfigMap", "o", "u"))}, []string{"d"}, nil},
		{"other namespace", owner, []*node{dep("d", "b", ref("ConfigMap", "o", "u"))}, nil, []string{"d"}},
		{"other kind", owner, []*node{dep("d", "a", ref("Secret", "o", "u"))}, nil, []string{"d"}},
		{"other name", owner, []*node{dep("d", "a", ref("ConfigMap", "x", "u"))}, nil, []string{"d"}},
		{"both references", owner, []*node{dep("d", "a", ref("ConfigMap", "o", "u"), ref("Secret", "o", "u"))}, []string{"d"}, []string{"d"}},
		{"cluster-scoped owner, any namespace", clusterOwner, []*node{dep("d", "a", ref("Namespace", "o", "u")), dep("e", "", ref("Namespace", "o", "u"))}, []string{"d", "e"}, nil},
		{"other uid is no reference", owner, []*node{dep("d", "a", ref("ConfigMap", "o", "v"))}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, n := partitionDependents(tc.deps, tc.owner)
			if got := names(m); !slices.Equal(got, tc.matching) {
				t.Errorf("matching %v, want %v", got, tc.matching)
			}
			if got := names(n); !slices.Equal(got, tc.nonmatch) {
				t.Errorf("nonmatching %v, want %v", got, tc.nonmatch)
			}
		})
	}
}

func TestAlternateIdentity(t *testing.T) {
	absent := objectRef{APIVersion: "v1", Kind: "ConfigMap", Name: "o", UID: "u", Namespace: "a"}
	for _, tc := range []struct {
		name   string
		absent objectRef
		deps   []*node
		want   string // "" for none
	}{
		{"none", absent, []*node{dep("d", "a", ref("ConfigMap", "o", "u"))}, ""},
		{"other kind", absent, []*node{dep("d", "a", ref("Secret", "o", "u"))}, "v1/Secret a/o"},
		{"other namespace", absent, []*node{dep("d", "b", ref("ConfigMap", "o", "u"))}, "v1/ConfigMap b/o"},
		{"the first following the absent one", absent, []*node{dep("d", "a", ref("ConfigMap", "p", "u")), dep("e", "a", ref("ConfigMap", "n", "u"))}, "v1/ConfigMap a/p"},
		{"else the first", absent, []*node{dep("d", "a", ref("ConfigMap", "m", "u")), dep("e", "a", ref("ConfigMap", "n", "u"))}, "v1/ConfigMap a/m"},
		{"cluster-scoped absent: same kind loses its namespace", objectRef{APIVersion: "v1", Kind: "Namespace", Name: "o", UID: "u"},
			[]*node{dep("d", "a", ref("Namespace", "p", "u"))}, "v1/Namespace /p"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := alternateIdentity(tc.deps, tc.absent)
			s := ""
			if got != nil {
				s = fmt.Sprintf("%s/%s %s/%s", got.APIVersion, got.Kind, got.Namespace, got.Name)
			}
			if s != tc.want {
				t.Errorf("got %q, want %q", s, tc.want)
			}
		})
	}
}

func TestReferencesDiff(t *testing.T) {
	yes, no := true, false
	a, b, c := ref("ConfigMap", "a", "1"), ref("ConfigMap", "b", "2"), ref("ConfigMap", "c", "3")
	bBlocking := b
	bBlocking.BlockOwnerDeletion = &yes
	bNot := b
	bNot.BlockOwnerDeletion = &no
	added, removed, changed := referencesDiff([]metav1.OwnerReference{a, bBlocking}, []metav1.OwnerReference{bNot, c})
	if len(added) != 1 || added[0].UID != "3" || len(removed) != 1 || removed[0].UID != "1" || len(changed) != 1 || !isTrue(changed[0][0].BlockOwnerDeletion) || isTrue(changed[0][1].BlockOwnerDeletion) {
		t.Fatalf("added %v removed %v changed %v", added, removed, changed)
	}
	if a2, r2, c2 := referencesDiff([]metav1.OwnerReference{a}, []metav1.OwnerReference{a}); len(a2)+len(r2)+len(c2) != 0 {
		t.Fatalf("no change: %v %v %v", a2, r2, c2)
	}
}

func TestDeletionStartsWith(t *testing.T) {
	now := metav1.Now()
	mk := func(deleting bool, fs ...string) *metav1.PartialObjectMetadata {
		o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Finalizers: fs}}
		if deleting {
			o.DeletionTimestamp = &now
		}
		return o
	}
	const f = metav1.FinalizerDeleteDependents
	for _, tc := range []struct {
		name     string
		old, cur *metav1.PartialObjectMetadata
		want     bool
	}{
		{"first seen deleting with it", nil, mk(true, f), true},
		{"deletion starts", mk(false, f), mk(true, f), true},
		{"finalizer added while deleting", mk(true), mk(true, f), true},
		{"already so", mk(true, f), mk(true, f), false},
		{"not deleting", mk(false), mk(false, f), false},
		{"another finalizer", mk(false), mk(true, "x"), false},
	} {
		if got := deletionStartsWith(tc.old, tc.cur, f); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestRefCache(t *testing.T) {
	c := newRefCache(2)
	r := func(n string) objectRef { return objectRef{Name: n} }
	c.add(r("a"))
	c.add(r("b"))
	c.add(r("a")) // a is the most recent now
	c.add(r("c")) // b goes
	if !c.has(r("a")) || c.has(r("b")) || !c.has(r("c")) {
		t.Fatalf("a %v b %v c %v", c.has(r("a")), c.has(r("b")), c.has(r("c")))
	}
}

func TestPatches(t *testing.T) {
	yes := true
	blocking := ref("ConfigMap", "o", "u")
	blocking.BlockOwnerDeletion = &yes
	for _, tc := range []struct {
		name string
		got  []byte
		want string
	}{
		{"delete references", deleteOwnerRefsPatch("me", []types.UID{"u1", "u2"}),
			`{"metadata":{"ownerReferences":[{"$patch":"delete","uid":"u1"},{"$patch":"delete","uid":"u2"}],"uid":"me"}}`},
		{"unblock", unblockPatch("me", []metav1.OwnerReference{blocking, ref("ConfigMap", "p", "v")}),
			`{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"o","uid":"u","blockOwnerDeletion":false}],"uid":"me"}}`},
	} {
		var a, b any
		if err := json.Unmarshal(tc.got, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(tc.want), &b); err != nil {
			t.Fatal(err)
		}
		ga, _ := json.Marshal(a)
		gb, _ := json.Marshal(b)
		if string(ga) != string(gb) {
			t.Errorf("%s: %s, want %s", tc.name, tc.got, tc.want)
		}
	}
}

func TestNewOptions(t *testing.T) {
	if _, err := New(Options{}); err == nil {
		t.Fatal("New without a Config succeeded")
	}
}

func TestDeleteOptionsJSON(t *testing.T) {
	uid, rv := types.UID(`u"1`), "42"
	for _, pre := range []metav1.Preconditions{{UID: &uid, ResourceVersion: &rv}, {UID: &uid}, {}} {
		got := deleteOptions(pre, metav1.DeletePropagationForeground)
		var back metav1.DeleteOptions
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("%s: %v", got, err)
		}
		want, _ := json.Marshal(metav1.DeleteOptions{TypeMeta: metav1.TypeMeta{Kind: "DeleteOptions", APIVersion: "v1"}, Preconditions: &pre, PropagationPolicy: ptrTo(metav1.DeletePropagationForeground)})
		again, _ := json.Marshal(back)
		if string(again) != string(want) {
			t.Errorf("%s decodes to %s, want %s", got, again, want)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }
