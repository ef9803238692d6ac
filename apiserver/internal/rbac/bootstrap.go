package rbac

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The metadata kube-apiserver gives its bootstrap objects.
const (
	bootstrapLabel      = "kubernetes.io/bootstrapping"
	bootstrapLabelValue = "rbac-defaults"
)

type rules = []rbacv1.PolicyRule

// BootstrapClusterRoles returns the default ClusterRoles of kube-apiserver
// v1.37 (its bootstrap policy, with the feature gates it enables by
// default) that clients and controllers meet, new on each call. admin, edit
// and view have aggregation rules and no rules of their own: their rules
// are aggregated (see Aggregate) from the system:aggregate-to-* roles and
// each other.
func BootstrapClusterRoles() []rbacv1.ClusterRole {
	labels := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	aggregate := func(label string) *rbacv1.AggregationRule {
		return &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{label: "true"}}}}
	}
	role := func(name string, lbls map[string]string, agg *rbacv1.AggregationRule, rs rules) rbacv1.ClusterRole {
		if lbls == nil {
			lbls = map[string]string{}
		}
		lbls[bootstrapLabel] = bootstrapLabelValue
		return rbacv1.ClusterRole{
			TypeMeta:        metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
			ObjectMeta:      metav1.ObjectMeta{Name: name, Labels: lbls, Annotations: map[string]string{rbacv1.AutoUpdateAnnotationKey: "true"}},
			Rules:           rs,
			AggregationRule: agg,
		}
	}
	return []rbacv1.ClusterRole{
		role("cluster-admin", nil, nil, rules{
			{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
			{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
		}),
		role("system:discovery", nil, nil, rules{
			{Verbs: []string{"get"}, NonResourceURLs: []string{"/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz", "/version", "/version/"}},
		}),
		role("system:monitoring", nil, nil, rules{
			{Verbs: []string{"get"}, NonResourceURLs: []string{"/flagz", "/healthz", "/healthz/*", "/livez", "/livez/*", "/metrics", "/metrics/slis", "/readyz", "/readyz/*", "/statusz"}},
			{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"nodes/metrics"}},
		}),
		role("system:basic-user", nil, nil, rules{
			{Verbs: []string{"create"}, APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"selfsubjectaccessreviews", "selfsubjectrulesreviews"}},
			{Verbs: []string{"create"}, APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"selfsubjectreviews"}},
		}),
		role("system:public-info-viewer", nil, nil, rules{
			{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz", "/livez", "/readyz", "/version", "/version/"}},
		}),
		role("admin", nil, aggregate("rbac.authorization.k8s.io/aggregate-to-admin"), nil),
		role("edit", labels("rbac.authorization.k8s.io/aggregate-to-admin", "true"), aggregate("rbac.authorization.k8s.io/aggregate-to-edit"), nil),
		role("view", labels("rbac.authorization.k8s.io/aggregate-to-edit", "true"), aggregate("rbac.authorization.k8s.io/aggregate-to-view"), nil),
		role("system:aggregate-to-admin", labels("rbac.authorization.k8s.io/aggregate-to-admin", "true"), nil, rules{
			{Verbs: []string{"create"}, APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"localsubjectaccessreviews"}},
			{Verbs: []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}, APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"rolebindings", "roles"}},
		}),
		role("system:aggregate-to-edit", labels("rbac.authorization.k8s.io/aggregate-to-edit", "true"), nil, rules{
			{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets", "services/proxy"}},
			{Verbs: []string{"impersonate"}, APIGroups: []string{""}, Resources: []string{"serviceaccounts"}},
			{Verbs: []string{"create", "delete", "deletecollection", "patch", "update"}, APIGroups: []string{""}, Resources: []string{"pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"}},
			{Verbs: []string{"create"}, APIGroups: []string{""}, Resources: []string{"pods/eviction"}},
			{Verbs: []string{"create", "delete", "deletecollection", "patch", "update"}, APIGroups: []string{""}, Resources: []string{"configmaps", "persistentvolumeclaims", "replicationcontrollers", "replicationcontrollers/scale", "secrets", "serviceaccounts", "services", "services/proxy"}},
			{Verbs: []string{"create"}, APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}},
			{Verbs: []string{"create", "delete", "deletecollection", "patch", "update"}, APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}},
			{Verbs: []string{"create", "delete", "deletecollection", "patch", "update"}, APIGroups: []string{"apps"}, Resources: []string{"daemonsets", "deployments", "deployments/rollback", "deployments/scale", "replicasets", "replicasets/scale", "statefulsets", "statefulsets/scale"}},
			{Verbs: []string{"create", "delete", "deletecollection", "patch", "update"}, APIGroups: []string{"autoscaling"}, Resources: []string{"horizontalpodautoscalers"}},
			{Verbs: []string{"create", "delete", "deletecollection", "patch", "update"}, APIGroups: []string{"batch"}, Resources: []string{"cronjobs", "jobs"}},
			{Verbs: []string{"create", "delete", "deletecollection", "patch", "update"}, APIGroups: []string{"extensions"}, Resources: []string{"daemonsets", "deployments", "deployments/rollback", "deployments/scale", "ingresses", "networkpolicies", "replicasets", "replicasets/scale", "replicationcontrollers/scale"}},
			{Verbs: []string{"create", "delete", "deletecollection", "patch", "update"}, APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}},
			{Verbs: []string{"create", "delete", "deletecollection", "patch", "update"}, APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses", "networkpolicies"}},
			{Verbs: []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}, APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}},
			{Verbs: []string{"create", "delete", "deletecollection", "patch", "update"}, APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceclaims", "resourceclaimtemplates"}},
		}),
		role("system:aggregate-to-view", labels("rbac.authorization.k8s.io/aggregate-to-view", "true"), nil, rules{
			{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"configmaps", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status", "pods", "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts", "services", "services/status"}},
			{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"bindings", "limitranges", "namespaces/status", "pods/log", "pods/status", "replicationcontrollers/status", "resourcequotas", "resourcequotas/status"}},
			{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"namespaces"}},
			{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}},
			{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}},
			{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{"apps"}, Resources: []string{"controllerrevisions", "daemonsets", "daemonsets/status", "deployments", "deployments/scale", "deployments/status", "replicasets", "replicasets/scale", "replicasets/status", "statefulsets", "statefulsets/scale", "statefulsets/status"}},
			{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{"autoscaling"}, Resources: []string{"horizontalpodautoscalers", "horizontalpodautoscalers/status"}},
			{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{"batch"}, Resources: []string{"cronjobs", "cronjobs/status", "jobs", "jobs/status"}},
			{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{"extensions"}, Resources: []string{"daemonsets", "daemonsets/status", "deployments", "deployments/scale", "deployments/status", "ingresses", "ingresses/status", "networkpolicies", "replicasets", "replicasets/scale", "replicasets/status", "replicationcontrollers/scale"}},
			{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets", "poddisruptionbudgets/status"}},
			{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses", "ingresses/status", "networkpolicies"}},
			{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceclaims", "resourceclaims/status", "resourceclaimtemplates"}},
		}),
		role("system:auth-delegator", nil, nil, rules{
			{Verbs: []string{"create"}, APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}},
			{Verbs: []string{"create"}, APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}},
		}),
		role("system:service-account-issuer-discovery", nil, nil, rules{
			{Verbs: []string{"get"}, NonResourceURLs: []string{"/.well-known/openid-configuration", "/.well-known/openid-configuration/", "/openid/v1/jwks", "/openid/v1/jwks/"}},
		}),
		// kube-controller-manager's own user (its shared informers), and
		// the roles of the controllers the embedded server runs as
		// kube-controller-manager does with
		// --use-service-account-credentials: each as its ServiceAccount
		// in kube-system (ControllerRoleBindings).
		role("system:kube-controller-manager", nil, nil, rules{
			eventsRule,
			{Verbs: []string{"create"}, APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}},
			{Verbs: []string{"get", "update"}, APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{"kube-controller-manager"}},
			{Verbs: []string{"create"}, APIGroups: []string{""}, Resources: []string{"secrets", "serviceaccounts"}},
			{Verbs: []string{"delete"}, APIGroups: []string{""}, Resources: []string{"secrets"}},
			{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps", "namespaces", "secrets", "serviceaccounts"}},
			{Verbs: []string{"update"}, APIGroups: []string{""}, Resources: []string{"secrets", "serviceaccounts"}},
			{Verbs: []string{"create"}, APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}},
			{Verbs: []string{"create"}, APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}},
			{Verbs: []string{"list", "watch"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
			{Verbs: []string{"create"}, APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}},
		}),
		role(ControllerRolePrefix+"generic-garbage-collector", nil, nil, rules{
			{Verbs: []string{"delete", "get", "list", "patch", "update", "watch"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
			eventsRule,
		}),
		role(ControllerRolePrefix+"namespace-controller", nil, nil, rules{
			{Verbs: []string{"delete", "get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"namespaces"}},
			{Verbs: []string{"update"}, APIGroups: []string{""}, Resources: []string{"namespaces/finalize", "namespaces/status"}},
			{Verbs: []string{"delete", "deletecollection", "get", "list", "watch"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
		}),
		role(ControllerRolePrefix+"root-ca-cert-publisher", nil, nil, rules{
			{Verbs: []string{"create", "update"}, APIGroups: []string{""}, Resources: []string{"configmaps"}},
			eventsRule,
		}),
		role(ControllerRolePrefix+"service-account-controller", nil, nil, rules{
			{Verbs: []string{"create"}, APIGroups: []string{""}, Resources: []string{"serviceaccounts"}},
			eventsRule,
		}),
	}
}

// ControllerRolePrefix starts the names of the controllers' ClusterRoles
// (and of their bindings), each bound to the ServiceAccount of the same
// name in kube-system.
const ControllerRolePrefix = "system:controller:"

// eventsRule lets a controller record Events, as kube's bootstrap policy
// gives every controller.
var eventsRule = rbacv1.PolicyRule{Verbs: []string{"create", "patch", "update"}, APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}}

// BootstrapClusterRoleBindings returns kube-apiserver's default
// ClusterRoleBindings of the roles of BootstrapClusterRoles, new on each
// call.
func BootstrapClusterRoleBindings() []rbacv1.ClusterRoleBinding {
	bind := func(name string, groups ...string) rbacv1.ClusterRoleBinding {
		b := rbacv1.ClusterRoleBinding{
			TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{bootstrapLabel: bootstrapLabelValue},
				Annotations: map[string]string{rbacv1.AutoUpdateAnnotationKey: "true"}},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		}
		for _, g := range groups {
			b.Subjects = append(b.Subjects, rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: g})
		}
		return b
	}
	return []rbacv1.ClusterRoleBinding{
		bind("cluster-admin", "system:masters"),
		bind("system:monitoring", "system:monitoring"),
		bind("system:discovery", "system:authenticated"),
		bind("system:basic-user", "system:authenticated"),
		bind("system:public-info-viewer", "system:authenticated", "system:unauthenticated"),
		bind("system:service-account-issuer-discovery", "system:serviceaccounts"),
		user(bind("system:kube-controller-manager"), "system:kube-controller-manager"),
		serviceAccount(bind(ControllerRolePrefix+"generic-garbage-collector"), "kube-system", "generic-garbage-collector"),
		serviceAccount(bind(ControllerRolePrefix+"namespace-controller"), "kube-system", "namespace-controller"),
		serviceAccount(bind(ControllerRolePrefix+"root-ca-cert-publisher"), "kube-system", "root-ca-cert-publisher"),
		serviceAccount(bind(ControllerRolePrefix+"service-account-controller"), "kube-system", "service-account-controller"),
	}
}

// user adds a user to a binding's subjects.
func user(b rbacv1.ClusterRoleBinding, name string) rbacv1.ClusterRoleBinding {
	b.Subjects = append(b.Subjects, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name})
	return b
}

// serviceAccount adds a ServiceAccount to a binding's subjects.
func serviceAccount(b rbacv1.ClusterRoleBinding, ns, name string) rbacv1.ClusterRoleBinding {
	b.Subjects = append(b.Subjects, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name})
	return b
}
