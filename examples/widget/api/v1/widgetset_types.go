package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WidgetTemplate is the Widget a WidgetSet makes copies of.
type WidgetTemplate struct {
	// Labels and annotations of the Widgets.
	// +optional
	Metadata WidgetTemplateMeta `json:"metadata,omitempty"`
	// Spec of the Widgets.
	Spec WidgetSpec `json:"spec"`
}

// WidgetTemplateMeta is the metadata a WidgetSet gives its Widgets.
type WidgetTemplateMeta struct {
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// WidgetSetSpec is how many Widgets a WidgetSet wants, and of what kind.
type WidgetSetSpec struct {
	// Replicas is the number of Widgets, named <set>-0 … <set>-<replicas-1>.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	// +kubebuilder:default=1
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Template is the Widget each replica is made from.
	Template WidgetTemplate `json:"template"`
}

// WidgetSetStatus counts the set's Widgets.
type WidgetSetStatus struct {
	// Replicas is how many Widgets the set has.
	// +optional
	Replicas int32 `json:"replicas"`
	// ReadyReplicas is how many of them are Running.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas"`
	// ObservedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// WidgetSet keeps a number of Widgets made from a template.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas
// +kubebuilder:resource:scope=Namespaced
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type WidgetSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WidgetSetSpec   `json:"spec"`
	Status WidgetSetStatus `json:"status,omitempty"`
}

// WidgetSetList is a list of WidgetSets.
//
// +kubebuilder:object:root=true
type WidgetSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WidgetSet `json:"items"`
}
