// Package rbac is the embedded API server's authorizer: Kubernetes RBAC
// (Roles, ClusterRoles, RoleBindings, ClusterRoleBindings) evaluated as
// kube-apiserver's RBAC authorizer evaluates it, with its error texts.
//
//   - [RuleAllows] is kube's rule match: verbs, API groups, resources with
//     their subresources ("pods/log", "*/scale"), resourceNames, and
//     non-resource URLs (a trailing "*" is a prefix).
//   - A [Policy] is an immutable snapshot of the RBAC objects, built by
//     [NewPolicy]: [Policy.Authorize] decides a request, with kube's reasons
//     ("RBAC: allowed by ClusterRoleBinding ..."; the resolution errors of
//     bindings whose role is missing); [Policy.RulesFor] lists a user's
//     rules in a namespace (SelfSubjectRulesReview, escalation checks). It
//     is safe for concurrent use; the server swaps snapshots atomically.
//   - [Covers] and [EscalationError] are the escalation check of role
//     writes (kube's ConfirmNoEscalation): the rules a user grants must be
//     covered by the rules the user holds.
//   - [Aggregate] computes the rules of a ClusterRole with an
//     aggregationRule (kube-controller-manager's clusterrole-aggregation
//     controller).
//   - [BootstrapClusterRoles] and [BootstrapClusterRoleBindings] are the
//     default roles of kube-apiserver v1.37 that clients and controllers
//     meet: cluster-admin, admin, edit and view (aggregated from the
//     system:aggregate-to-* roles), system:discovery, system:basic-user,
//     system:public-info-viewer, system:monitoring, system:auth-delegator,
//     system:service-account-issuer-discovery, and their bindings.
package rbac
