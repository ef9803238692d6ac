package apiext

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSetCondition(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	crd := &CustomResourceDefinition{}
	tests := []struct {
		name     string
		cond     CustomResourceDefinitionCondition
		now      metav1.Time
		wantTime metav1.Time
		wantLen  int
	}{
		{"add", CustomResourceDefinitionCondition{Type: NamesAccepted, Status: ConditionTrue, Reason: "NoConflicts"}, t0, t0, 1},
		{"add second", CustomResourceDefinitionCondition{Type: Established, Status: ConditionFalse, Reason: "Installing"}, t0, t0, 2},
		{"same status keeps time", CustomResourceDefinitionCondition{Type: NamesAccepted, Status: ConditionTrue, Reason: "Again"}, t1, t0, 2},
		{"status change moves time", CustomResourceDefinitionCondition{Type: Established, Status: ConditionTrue, Reason: "InitialNamesAccepted"}, t1, t1, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			SetCondition(crd, tt.cond, tt.now)
			got := FindCondition(crd, tt.cond.Type)
			if got == nil || got.Status != tt.cond.Status || got.Reason != tt.cond.Reason || !got.LastTransitionTime.Equal(&tt.wantTime) || len(crd.Status.Conditions) != tt.wantLen {
				t.Fatalf("condition %+v (len %d)", got, len(crd.Status.Conditions))
			}
		})
	}
	if !IsEstablished(crd) {
		t.Fatal("not established")
	}
	if FindCondition(crd, Terminating) != nil || FindCondition(nil, Established) != nil {
		t.Fatal("found a missing condition")
	}
	SetCondition(nil, CustomResourceDefinitionCondition{}, t0)
}
