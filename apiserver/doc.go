// Package apiserver is kloop's embedded API server: an in-process server that
// speaks the Kubernetes REST and watch protocol (JSON, YAML and, for built-in
// kinds, protobuf, in requests and answers alike), so that kubectl, client-go
// and controller-runtime use it as they would a cluster. It starts no other
// process (start-up time: README.md) and keeps everything in memory, or
// with Options.DataDir in a directory across restarts ([storage]).
//
// It serves namespaces, configmaps, secrets, events (core/v1 and
// events.k8s.io/v1, one storage), serviceaccounts, pods, services,
// deployments, replicasets, leases, customresourcedefinitions, roles,
// clusterroles, rolebindings and clusterrolebindings, the other kinds a
// controller commonly watches or writes (statefulsets, daemonsets, jobs,
// cronjobs, nodes, persistent volumes and claims, endpointslices, ingresses,
// horizontalpodautoscalers, webhook configurations, certificate signing
// requests, ...: kinds.go), and the custom resources of every CRD as soon
// as the CRD's create returns.
//
// Layout, one file per concern:
//
//	server.go     Server, New, Start/Serve, kubeconfig, TLS
//	limits.go     what one request may hold: its timeouts, its connection when refused
//	conns.go      the bound on open connections; inflight.go on requests served at once
//	authn.go      users: bearer tokens (Options.Token, Options.Users, AddUser), the token file format
//	satoken.go    ServiceAccount tokens: TokenRequest (bound to Pods, Secrets, Nodes), their authentication
//	selfservice.go what kube-apiserver creates for itself: the system namespaces, the kubernetes
//	              Service, its Endpoints and EndpointSlice
//	authz.go      authorization of every request (kube-apiserver's request attributes, 403s)
//	impersonate.go the Impersonate-* headers, checked as kube-apiserver's constrained impersonation
//	rbac.go       the RBAC kinds, the bootstrap roles, ClusterRole aggregation, escalation checks
//	router.go     path parsing (kube-apiserver's RequestInfo rules) and dispatch
//	registry.go   the served kinds and their hooks
//	kinds.go      the table of built-in kinds, one row each; their behaviour per API group in
//	              builtin.go (the first ones) and kinds_<group>.go (defaults, strategies,
//	              validation, columns)
//	resource.go   get and list (selectors.go: label and field selectors)
//	create.go     create, update.go update, delete.go delete, with kube-apiserver's metadata rules
//	write.go      what writes share: the stored form, validation; write_decode.go request
//	              bodies, write_options.go a write's options and warnings
//	patch.go      JSON, merge and strategic merge patch (patchlimits.go: the work a patch may
//	              ask for); scale.go the /scale subresource
//	watch.go      chunked watch streams (JSON, protobuf): bookmarks, watch-list, 410 Expired
//	table.go      Table output for kubectl get
//	discovery.go  /version, /api, /apis, aggregated discovery
//	crd.go        serving CustomResourceDefinitions; crdstrategy.go their defaults,
//	              validation and warnings, crschema.go the schema work of custom
//	              resource writes (pruning, defaulting, validation, CEL rules), both
//	              with kube-apiserver's libraries; crdconvert.go their conversion
//	              webhooks, admission.go admission webhooks, webhookcall.go the
//	              calls of webhooks
//	persist.go    Options.DataDir: the credentials kept, what New rebuilds from stored objects, Close
//	lifecycle.go  around writes: the kinds' hooks called, namespace and CRD deletion (with
//	              kube's namespace controller's conditions)
//	controllers.go what kube-controller-manager does beside kube-apiserver: every namespace's
//	              default ServiceAccount and kube-root-ca.crt, and the garbage collector, run
//	              while the server serves; inprocess.go their in-process clients
//	events.go     conversion between the two Event APIs
//	openapi.go    /openapi/v2 and /openapi/v3 from the served kinds
//	protobuf.go   request bodies by Content-Type: JSON, YAML, protobuf of built-in kinds
//	negotiate.go  the encoding of answers by Accept, as kube-apiserver negotiates it
//	protobuf_encode.go answers in protobuf (protobuf_answers.go: lists, watch events)
//	reviews.go    access, identity and token reviews (kubectl auth can-i, kubectl auth whoami)
//	podconnect.go pods' log, exec, attach and portforward (no kubelet to reach)
//	ipalloc.go    Service cluster IPs
//	defaults.go   defaulting of built-ins (pods and templates, services, ...) and pod admission
//	fasttyped.go  one-pass decoding of built-in bodies already in their Go type's form
//	decoded.go    the decoded form of recently written objects, for their next update
//	              (shared, never written: the tests check it, see Options.decodedMutation)
//	validation.go kind validation of ConfigMaps, Secrets, Services, Namespaces, Deployments
//	object.go     objects as JSON maps: decoding, metadata, resourceVersions
//	intercept.go  the hooks of fault injection (apiservertest.Faults): an Interceptor of
//	              authenticated requests, reads as of an older revision, per-resource compaction
//
// Below it, internal/jsontree reads, writes, compares, decodes and encodes
// JSON trees (the form objects are handled in) as the standard packages
// do, faster; internal/typed tells from a JSON tree alone that a body is
// already in its Go type's form (for fasttyped.go); internal/pbenc encodes
// the JSON of a built-in kind in protobuf without decoding it into its Go
// type (for protobuf answers); internal/jsonpatch
// applies JSON and merge patches as json-patch.v4 (kube-apiserver's
// library) does, with a bound on copies and in linear time;
// internal/openapi builds the OpenAPI documents; internal/rbac evaluates
// RBAC (the authorizer's policy, escalation checks, aggregation, kube's
// bootstrap roles); internal/garbagecollector follows ownerReferences as
// kube-controller-manager's collector does (Background, Foreground and
// Orphan deletions, dependents of absent owners, invalid references), on
// kloop's informer, work queue and controller packages; internal/inproc lets
// the server's controllers reach its API without a network.
// CustomResourceDefinitions and custom resources are
// handled by kube-apiserver's own libraries (k8s.io/apiextensions-apiserver:
// crdstrategy.go, crschema.go).
//
// Semantics follow kube-apiserver: one global revision is every object's
// resourceVersion; updates with a stale resourceVersion get 409 Conflict and
// updates without one are unconditional (but for leases, CRDs and custom
// resources, which need one); metadata.generation moves on spec
// changes; the status subresource splits writes of spec and status;
// finalizers hold deleted objects (deletionTimestamp) until they are
// removed; errors are metav1.Status bodies with kube-apiserver's reasons and
// codes and messages. The differential suite in the conformance
// subpackage compares all of this with kube-apiserver v1.37.2, response by
// response. Admission webhooks (the stored webhook configurations:
// admission.go) and the conversion webhooks of CRDs (crdconvert.go) are
// called (webhookcall.go).
//
// While it serves, the server runs what kube-controller-manager runs beside
// kube-apiserver that clients see as API semantics (Options.DisableControllers
// turns it off): every namespace's default ServiceAccount and kube-root-ca.crt
// ConfigMap, and garbage collection — a Background delete's dependents go
// after their owner, a Foreground delete keeps the owner (its
// foregroundDeletion finalizer) until its blocking dependents are gone, an
// Orphan delete (its orphan finalizer) removes the owner's reference from its
// dependents first; Options.GarbageCollector configures it, and
// Server.GarbageCollectorStats reads its counters.
//
// Every request needs a bearer token (401 otherwise; the scheme in any
// case). Options.Token authenticates kloop-admin, in system:masters,
// allowed everything unchecked; Options.Users (ReadTokenFile reads
// kube-apiserver's --token-auth-file format) and Server.AddUser add users,
// each in system:authenticated, who may do what RBAC gives them: the
// Roles, ClusterRoles and bindings stored in the server, kube-apiserver's
// default ones included (cluster-admin, admin, edit and view aggregated,
// system:discovery, system:basic-user, system:public-info-viewer, ...).
// Every request is authorized before anything but its timeout parameter is
// read, with kube-apiserver's attributes (verb, resource and subresource,
// namespace, name; a path for the others) and its 403 Forbidden; writes of roles and bindings are
// checked for escalation; the Impersonate-User, -Group, -Uid and -Extra-*
// headers act as another user when the requester may impersonate it; the
// access reviews (SelfSubjectAccessReview, SelfSubjectRulesReview,
// SubjectAccessReview, LocalSubjectAccessReview), SelfSubjectReview and
// TokenReview answer from the same data. With Options.TLS the server uses a
// self-signed certificate and can write a kubeconfig that kubectl uses as
// is.
//
// The server is meant to be left running for many clients, so what a client
// can hold is bounded (Options; the defaults are kube-apiserver's where it
// has the limit): a request is refused on its headers, before its body is
// read, and a refused or unauthenticated client keeps no connection; the
// TLS handshake and the headers must arrive within ReadHeaderTimeout, a
// body and its response within RequestTimeout (watches and pods' log,
// exec, attach and portforward excepted), and an idle connection is closed
// after IdleTimeout. At most MaxConnections connections are open: past it
// the longest idle one makes room, or the new one is refused. At most
// MaxRequestsInFlight read-only and MaxMutatingRequestsInFlight mutating
// requests are served at once, and MaxWatches long-running ones; past them
// a request gets kube-apiserver's 429 with Retry-After: 1. A body over
// MaxRequestBytes (3 MiB) gets 413. apiserver/README.md tables every limit
// beside kube-apiserver's.
package apiserver
