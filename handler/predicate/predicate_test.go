package predicate

import (
	"testing"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kloop.dev/kloop/handler"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type meta struct {
	gen    int64
	rv     string
	labels map[string]string
	ann    map[string]string
}

func obj(m meta) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a",
		Generation: m.gen, ResourceVersion: m.rv, Labels: m.labels, Annotations: m.ann}}
}

var nilObj *corev1.ConfigMap

// verdicts is what a predicate says to create, update, delete and generic.
type verdicts [4]bool

func check(t *testing.T, p Predicate, o handler.Object, upd handler.UpdateEvent, want verdicts) {
	t.Helper()
	got := verdicts{
		p.Create(handler.CreateEvent{Object: o}),
		p.Update(upd),
		p.Delete(handler.DeleteEvent{Object: o}),
		p.Generic(handler.GenericEvent{Object: o}),
	}
	if got != want {
		t.Fatalf("create/update/delete/generic = %v, want %v", got, want)
	}
	// Allow agrees with the methods.
	evs := []handler.Event{handler.CreateEvent{Object: o}, upd, handler.DeleteEvent{Object: o}, handler.GenericEvent{Object: o}}
	for i, e := range evs {
		if Allow(e, p) != want[i] {
			t.Fatalf("Allow(%T) = %v, want %v", e, !want[i], want[i])
		}
	}
}

func TestChangedPredicates(t *testing.T) {
	base := meta{gen: 1, rv: "10", labels: map[string]string{"app": "web"}, ann: map[string]string{"a": "1"}}
	with := func(f func(*meta)) handler.Object {
		m := base
		f(&m)
		return obj(m)
	}
	old := obj(base)
	statusOnly := with(func(m *meta) { m.rv = "11" })
	specChange := with(func(m *meta) { m.gen, m.rv = 2, "11" })
	labelChange := with(func(m *meta) { m.rv, m.labels = "11", map[string]string{"app": "db"} })
	labelAdded := with(func(m *meta) { m.rv, m.labels = "11", map[string]string{"app": "web", "tier": "1"} })
	annChange := with(func(m *meta) { m.rv, m.ann = "11", nil })
	resync := obj(base)
	emptyLabels := obj(meta{labels: map[string]string{}})
	nilLabels := obj(meta{})

	type tc struct {
		name     string
		old, new handler.Object
		want     bool
	}
	tests := []struct {
		pred  Predicate
		cases []tc
	}{
		{GenerationChanged{}, []tc{
			{"status-only update dropped", old, statusOnly, false},
			{"spec change passes", old, specChange, true},
			{"label change dropped", old, labelChange, false},
			{"resync dropped", old, resync, false},
			{"nil old", nil, specChange, false},
			{"nil new", old, nil, false},
			{"typed nil old", nilObj, specChange, false},
		}},
		{ResourceVersionChanged{}, []tc{
			{"any write passes", old, statusOnly, true},
			{"resync dropped", old, resync, false},
			{"nil old", nil, statusOnly, false},
			{"typed nil new", old, nilObj, false},
		}},
		{LabelChanged{}, []tc{
			{"label value change", old, labelChange, true},
			{"label added", old, labelAdded, true},
			{"status-only", old, statusOnly, false},
			{"annotation change", old, annChange, false},
			{"nil and empty labels are equal", nilLabels, emptyLabels, false},
			{"nil new", old, nil, false},
		}},
		{AnnotationChanged{}, []tc{
			{"annotation removed", old, annChange, true},
			{"label change", old, labelChange, false},
			{"spec change", old, specChange, false},
			{"nil old", nilObj, annChange, false},
		}},
	}
	for _, tt := range tests {
		for _, c := range tt.cases {
			t.Run(fmtName(tt.pred)+"/"+c.name, func(t *testing.T) {
				// Create, delete and generic always pass, even with no object.
				check(t, tt.pred, c.new, handler.UpdateEvent{ObjectOld: c.old, ObjectNew: c.new}, verdicts{true, c.want, true, true})
			})
		}
	}
}

func fmtName(p Predicate) string {
	switch p.(type) {
	case GenerationChanged:
		return "GenerationChanged"
	case ResourceVersionChanged:
		return "ResourceVersionChanged"
	case LabelChanged:
		return "LabelChanged"
	case AnnotationChanged:
		return "AnnotationChanged"
	}
	return "?"
}

func TestLabelSelector(t *testing.T) {
	p, err := LabelSelector(metav1.LabelSelector{
		MatchLabels:      map[string]string{"app": "web"},
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"front", "back"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	match := obj(meta{labels: map[string]string{"app": "web", "tier": "front"}})
	miss := obj(meta{labels: map[string]string{"app": "web", "tier": "db"}})
	tests := []struct {
		name string
		o    handler.Object
		upd  handler.UpdateEvent
		want verdicts
	}{
		{"match", match, handler.UpdateEvent{ObjectOld: miss, ObjectNew: match}, verdicts{true, true, true, true}},
		{"miss (update judged on the new object)", miss, handler.UpdateEvent{ObjectOld: match, ObjectNew: miss}, verdicts{false, false, false, false}},
		{"nil objects", nil, handler.UpdateEvent{ObjectOld: match}, verdicts{false, false, false, false}},
		{"typed nil objects", nilObj, handler.UpdateEvent{ObjectOld: match, ObjectNew: nilObj}, verdicts{false, false, false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { check(t, p, tt.o, tt.upd, tt.want) })
	}
	all, err := LabelSelector(metav1.LabelSelector{})
	if err != nil {
		t.Fatal(err)
	}
	check(t, all, miss, handler.UpdateEvent{ObjectOld: miss, ObjectNew: miss}, verdicts{true, true, true, true})
	if _, err := LabelSelector(metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bogus"}}}); err == nil {
		t.Fatal("invalid selector accepted")
	}
	if _, err := LabelSelector(metav1.LabelSelector{MatchLabels: map[string]string{"bad key!": "x"}}); err == nil {
		t.Fatal("invalid label key accepted")
	}
}

func TestCombinators(t *testing.T) {
	yes, no := Funcs{}, Funcs{
		CreateFunc:  func(handler.CreateEvent) bool { return false },
		UpdateFunc:  func(handler.UpdateEvent) bool { return false },
		DeleteFunc:  func(handler.DeleteEvent) bool { return false },
		GenericFunc: func(handler.GenericEvent) bool { return false },
	}
	onlyCreate := Funcs{
		UpdateFunc:  func(handler.UpdateEvent) bool { return false },
		DeleteFunc:  func(handler.DeleteEvent) bool { return false },
		GenericFunc: func(handler.GenericEvent) bool { return false },
	}
	o := obj(meta{})
	upd := handler.UpdateEvent{ObjectOld: o, ObjectNew: o}
	all, none := verdicts{true, true, true, true}, verdicts{}
	tests := []struct {
		name string
		p    Predicate
		want verdicts
	}{
		{"Funcs zero passes everything", yes, all},
		{"Funcs", no, none},
		{"And()", And(), all},
		{"And(yes,yes)", And(yes, yes), all},
		{"And(yes,no)", And(yes, no), none},
		{"And(yes,onlyCreate)", And(yes, onlyCreate), verdicts{true, false, false, false}},
		{"And(nil,yes)", And(nil, yes), all},
		{"Or()", Or(), none},
		{"Or(no,no)", Or(no, no), none},
		{"Or(no,yes)", Or(no, yes), all},
		{"Or(no,onlyCreate)", Or(no, onlyCreate), verdicts{true, false, false, false}},
		{"Or(no,nil)", Or(no, nil), all},
		{"Not(yes)", Not(yes), none},
		{"Not(no)", Not(no), all},
		{"Not(onlyCreate)", Not(onlyCreate), verdicts{false, true, true, true}},
		{"Not(nil)", Not(nil), none},
		{"Not(And(no,yes))", Not(And(no, yes)), all},
		{"GenerationChanged on a resync", GenerationChanged{}, verdicts{true, false, true, true}},
		{"Or(GenerationChanged, LabelChanged) on a resync", Or(GenerationChanged{}, LabelChanged{}), verdicts{true, false, true, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { check(t, tt.p, o, upd, tt.want) })
	}
	// Allow: every predicate must pass; nil ones and none at all pass.
	if !Allow(handler.CreateEvent{Object: o}) || !Allow(handler.CreateEvent{Object: o}, nil, yes) || Allow(handler.CreateEvent{Object: o}, yes, no) {
		t.Fatal("Allow")
	}
	if !Allow(nil, no) {
		t.Fatal("an unknown event must pass")
	}
}

func TestNewFuncs(t *testing.T) {
	named := NewFuncs(func(o handler.Object) bool { return o.GetName() == "a" })
	a, b := obj(meta{}), obj(meta{})
	b.Name = "b"
	check(t, named, a, handler.UpdateEvent{ObjectOld: b, ObjectNew: a}, verdicts{true, true, true, true})
	check(t, named, b, handler.UpdateEvent{ObjectOld: a, ObjectNew: b}, verdicts{false, false, false, false})
	check(t, named, nilObj, handler.UpdateEvent{ObjectOld: a}, verdicts{false, false, false, false})
	check(t, NewFuncs(nil), b, handler.UpdateEvent{ObjectOld: a, ObjectNew: b}, verdicts{true, true, true, true})
}

func TestIsBuiltin(t *testing.T) {
	sel, err := LabelSelector(metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}})
	if err != nil {
		t.Fatal(err)
	}
	user := NewFuncs(func(handler.Object) bool { return true })
	for _, tt := range []struct {
		name string
		p    Predicate
		want bool
	}{
		{"nil", nil, true},
		{"GenerationChanged", GenerationChanged{}, true},
		{"*GenerationChanged", &GenerationChanged{}, true},
		{"ResourceVersionChanged", ResourceVersionChanged{}, true},
		{"LabelChanged", LabelChanged{}, true},
		{"AnnotationChanged", AnnotationChanged{}, true},
		{"LabelSelector", sel, true},
		{"And of built-ins", And(GenerationChanged{}, Not(LabelChanged{})), true},
		{"Or of built-ins", Or(sel, AnnotationChanged{}), true},
		{"Funcs", user, false},
		{"Funcs{}", Funcs{}, false},
		{"And with a Funcs", And(GenerationChanged{}, user), false},
		{"Or with a Funcs", Or(user), false},
		{"Not of a Funcs", Not(user), false},
	} {
		if got := IsBuiltin(tt.p); got != tt.want {
			t.Errorf("IsBuiltin(%s) = %t, want %t", tt.name, got, tt.want)
		}
	}
}
