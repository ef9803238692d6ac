package apiext

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func namedCRD(name, group, plural, singular, kind string, short ...string) *CustomResourceDefinition {
	c := &CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: CustomResourceDefinitionSpec{Group: group, Names: CustomResourceDefinitionNames{
			Plural: plural, Singular: singular, Kind: kind, ListKind: kind + "List", ShortNames: short,
		}},
	}
	return c
}

func TestAcceptNames(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	existing := namedCRD("widgets.example.com", "example.com", "widgets", "widget", "Widget", "wd")
	if !AcceptNames(existing, nil, now) {
		t.Fatal("first CRD not established")
	}
	tests := []struct {
		name        string
		crd         *CustomResourceDefinition
		established bool
		reason      string
		message     string
	}{
		{"other group may reuse names", namedCRD("widgets.other.io", "other.io", "widgets", "widget", "Widget", "wd"), true, "NoConflicts", "no conflicts found"},
		{"plural conflict", namedCRD("wd.example.com", "example.com", "wd", "gadget", "Gadget"), false, "PluralConflict", `"wd" is already in use`},
		{"kind conflict", namedCRD("gadgets.example.com", "example.com", "gadgets", "gadget", "Widget"), false, "ListKindConflict", `"WidgetList" is already in use`},
		{"short names conflict", namedCRD("gadgets.example.com", "example.com", "gadgets", "gadget", "Gadget", "wd", "widget"), false, "ShortNamesConflict", `["wd" is already in use, "widget" is already in use]`},
		{"no conflict", namedCRD("gadgets.example.com", "example.com", "gadgets", "gadget", "Gadget", "gd"), true, "NoConflicts", "no conflicts found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := AcceptNames(tt.crd, []*CustomResourceDefinition{existing}, now)
			c := FindCondition(tt.crd, NamesAccepted)
			if got != tt.established || c == nil || c.Reason != tt.reason || c.Message != tt.message {
				t.Fatalf("established %v, condition %+v", got, c)
			}
			e := FindCondition(tt.crd, Established)
			if e == nil || (e.Status == ConditionTrue) != tt.established {
				t.Fatalf("Established condition %+v", e)
			}
			if tt.established && tt.crd.Status.AcceptedNames.Plural != tt.crd.Spec.Names.Plural {
				t.Fatalf("accepted names %+v", tt.crd.Status.AcceptedNames)
			}
		})
	}
	// Re-accepting its own names (an update) is not a conflict, and passing
	// itself among the others changes nothing.
	if !AcceptNames(existing, []*CustomResourceDefinition{existing}, now) {
		t.Fatal("own names conflict")
	}
	// An established CRD that asks for a taken name keeps serving its old names.
	existing.Spec.Names.ShortNames = []string{"gd"}
	other := namedCRD("gadgets.example.com", "example.com", "gadgets", "gadget", "Gadget", "gd")
	AcceptNames(other, nil, now)
	if !AcceptNames(existing, []*CustomResourceDefinition{other}, now) || FindCondition(existing, NamesAccepted).Status != ConditionFalse ||
		existing.Status.AcceptedNames.ShortNames[0] != "wd" {
		t.Fatalf("status %+v", existing.Status)
	}
	if AcceptNames(nil, nil, now) {
		t.Fatal("nil accepted")
	}
}
