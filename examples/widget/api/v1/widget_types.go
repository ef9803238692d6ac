package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WidgetSpec is the instance a Widget asks for.
type WidgetSpec struct {
	// Size is the instance's size.
	// +kubebuilder:validation:Enum=small;medium;large
	// +kubebuilder:default=small
	// +optional
	Size string `json:"size,omitempty"`

	// Region is where the instance runs; it cannot change.
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9-]{0,62}$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="region is immutable"
	Region string `json:"region"`

	// Tags are set on the instance, with the operator's own (keys under
	// widget.kloop.dev/, which a spec may not use).
	// +kubebuilder:validation:MaxProperties=40
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
}

// The states of a Widget.
const (
	// StatePending: the instance is being created or modified.
	StatePending = "Pending"
	// StateRunning: the instance runs at Status.Endpoint.
	StateRunning = "Running"
	// StateDeleting: the Widget is being deleted with its instance.
	StateDeleting = "Deleting"
	// StateFailed: the spec is invalid, or the instance was terminated
	// outside the operator; the Ready condition says which.
	StateFailed = "Failed"
)

// ConditionReady is the type of the condition that says whether the
// Widget's instance runs as its spec asks.
const ConditionReady = "Ready"

// WidgetStatus is what the operator last saw of the instance.
type WidgetStatus struct {
	// State is Pending, Running, Deleting or Failed.
	// +optional
	State string `json:"state,omitempty"`

	// InstanceID is the cloud instance's ID.
	// +optional
	InstanceID string `json:"instanceID,omitempty"`

	// Endpoint is where the instance serves, once running.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`

	// ObservedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Widget is an instance in the (local) cloud, owned by the cluster.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="InstanceID",type=string,JSONPath=`.status.instanceID`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WidgetSpec   `json:"spec"`
	Status WidgetStatus `json:"status,omitempty"`
}

// WidgetList is a list of Widgets.
//
// +kubebuilder:object:root=true
type WidgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Widget `json:"items"`
}
