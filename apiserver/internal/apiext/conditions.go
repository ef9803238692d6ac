package apiext

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FindCondition returns the condition of type t, or nil.
func FindCondition(crd *CustomResourceDefinition, t CustomResourceDefinitionConditionType) *CustomResourceDefinitionCondition {
	if crd == nil {
		return nil
	}
	for i := range crd.Status.Conditions {
		if crd.Status.Conditions[i].Type == t {
			return &crd.Status.Conditions[i]
		}
	}
	return nil
}

// SetCondition sets c on crd as kube-apiserver's controllers do: a new
// condition is appended with LastTransitionTime now; an existing one takes
// c's status, reason and message, and LastTransitionTime moves to now only
// when the status changes (or was never set).
func SetCondition(crd *CustomResourceDefinition, c CustomResourceDefinitionCondition, now metav1.Time) {
	if crd == nil {
		return
	}
	existing := FindCondition(crd, c.Type)
	if existing == nil {
		c.LastTransitionTime = now
		crd.Status.Conditions = append(crd.Status.Conditions, c)
		return
	}
	if existing.Status != c.Status || existing.LastTransitionTime.IsZero() {
		existing.LastTransitionTime = now
	}
	existing.Status, existing.Reason, existing.Message = c.Status, c.Reason, c.Message
}
