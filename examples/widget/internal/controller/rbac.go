package controller

// The permissions of the operator, for controller-gen's rbac generator.
//
// +kubebuilder:rbac:groups=example.kloop.dev,resources=widgets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=example.kloop.dev,resources=widgets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=example.kloop.dev,resources=widgets/finalizers,verbs=update
// +kubebuilder:rbac:groups=example.kloop.dev,resources=widgetsets,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=example.kloop.dev,resources=widgetsets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=example.kloop.dev,resources=widgetsets/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
