// Package apiservertest starts an API server for a test: kloop's embedded
// one, the way net/http/httptest starts an HTTP server, or a real
// kube-apiserver with etcd.
//
//	srv := apiservertest.NewServer(t, apiservertest.Options{})
//	clientset, err := kubernetes.NewForConfig(srv.Config())
//	// kubectl --kubeconfig srv.Kubeconfig() ...
//
// Code without a testing.TB (an Example, a TestMain, a benchmark harness)
// starts one with New and stops it with Close, as with httptest.NewServer:
//
//	srv, err := apiservertest.New(apiservertest.Options{})
//	defer srv.Close()
//
// The embedded server listens on a random port of 127.0.0.1 with TLS (a
// self-signed certificate that Config and the kubeconfig trust), requires
// its bearer token (which both carry), starts in process (no binary, no etcd)
// and stops when the test ends (NewServer) or at Close (New). Config has no
// client-side rate limit (QPS -1).
//
// # Both servers
//
// An integration test written against an [Env] runs unchanged on both
// targets:
//
//	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
//		cs, _ := kubernetes.NewForConfig(env.Config())
//		cs.CoreV1().ConfigMaps(env.Namespace).Create(...)
//	})
//
// "embedded" gets a fresh embedded server; "real" gets kube-apiserver
// (KubernetesVersion) with etcd (EtcdVersion), built from the Go module
// proxy by hack/realk8s.sh, started once per test binary on first use (a
// few seconds) and stopped when the binary exits. Every Env has a fresh
// namespace of its own; on the real server cluster-scoped objects and
// resourceVersions are shared by the tests of the binary. Without the
// binaries the real subtests skip with a loud message;
// KLOOP_REQUIRE_REAL_K8S=1 (set by .ci/run) makes that a failure, and
// KLOOP_TEST_TARGETS restricts the targets. [Env.Compact] compacts the
// history (etcd's, or the embedded store's) so that old resourceVersions
// get 410 Gone.
//
// # Identities
//
// Config is the administrator's (kloop-admin, in system:masters). To test
// code under the permissions its RBAC manifests give it, [Env.ConfigFor]
// returns a configuration authenticating as any user (name, UID, groups)
// and [Env.ServiceAccountConfig] as a ServiceAccount (created if missing),
// on either server; [Env.KubeconfigFor] writes a kubeconfig for one of them
// (kubectl as that user; kubectl --as works with Kubeconfig too). They
// authenticate for real, not by impersonation: on the embedded server with
// a token of their own (apiserver.Server.AddUser), on the real one with a
// client certificate signed by the CA it trusts (users: its token file is
// fixed once it runs) or a TokenRequest token (ServiceAccounts). The one
// visible difference: kube-apiserver gives a certificate's user the extra
// attribute authentication.kubernetes.io/credential-id (its fingerprint),
// which kubectl auth whoami shows, and certificates carry no other extra
// attributes (ConfigFor refuses them on the real server). kube-apiserver's
// RBAC follows its objects through informers, a moment after their writes:
// a test polls (a SelfSubjectAccessReview, kubectl auth can-i) before
// relying on a new binding; the embedded server applies it before the write
// returns.
//
// Options.CRDPaths (files and directories of CRDs, as envtest's
// CRDDirectoryPaths) are installed on both targets before the Env is
// handed out; InstallCRDs installs CRDs of a test's own on any server and
// waits until they are usable. ServiceAccountConfig's tokens come from the
// TokenRequest API on both.
//
// Env.InstallWebhooks, as envtest's WebhookInstallOptions, installs
// webhook configurations (kubebuilder's config/webhook manifests) and
// points them, and the conversion of named CRDs, at a webhook server on a
// free loopback port with a certificate of the test's: the webhook.Options
// it returns make a manager (manager.Options.Webhook) serve them, on both
// targets.
//
// # Faults
//
// [Server.Faults] (and [Env.Faults], which skips the test on the real
// kube-apiserver: faults are the embedded server's alone) injects faults
// into the requests of one client — a user ([User]), a bearer token
// ([Token], [ClientOf] a configuration) — so that a test perturbs the
// controller under test and not the checker that watches it:
//
//	faults := env.Faults()
//	rec := faults.Record(apiservertest.RecordOptions{})
//	ctrl := faults.For(apiservertest.User("controller"))
//	ctrl.Fail(apiservertest.Match{Verb: "update", Resource: "configmaps"}, 2, apiservertest.Conflict)
//	hold := ctrl.HoldWatches() // the controller's informer lags …
//	hold.Release()             // … and catches up
//
// Each fault is a [Fault]: it ends when released, when its count is spent,
// or after [Fault.ReleaseAfter]; [Fault.Hits] counts what it did. The
// faults, each an ordinary method of [ClientFaults]:
//
//   - DropWatches ends the client's open watches now (it resumes from its
//     last resourceVersion); ExpireWatches answers its next watches with
//     410 Gone (it relists); [Faults.CompactResource] compacts one
//     resource's history to a revision, for every client.
//   - DelayWatches delays its watch events by a duration; HoldWatches
//     holds them until released (a lagging view; its requests are still
//     answered at once).
//   - StaleReads serves its GETs, LISTs and its watches' initial events as
//     of an older revision, and holds its watch events after that revision
//     until released: a stale API server, as Sieve makes one of the API
//     servers of an HA cluster.
//   - Fail answers its next n requests matching a verb, resource,
//     namespace and name with 409, 429 or 503 (with Retry-After if asked),
//     500, or 504, at once or after the request was served and its write
//     committed ([TimeoutAfterCommit]: an ambiguous outcome).
//   - ReorderInitialEvents, DuplicateEvents and DropBookmarks change its
//     watch streams within what a client must survive. kube's watch
//     protocol sends each change once, in resourceVersion order, and
//     promises no order among the initial events of a watch (they are the
//     state at a revision), no periodic bookmark at all, and the
//     initial-events-end bookmark of sendInitialEvents. So: the initial
//     events come reversed (a client that builds its state from them ends
//     with the same state); every object event comes twice, the copy at
//     the same resourceVersion (what a client sees again on every relist
//     and resync, and a resumed watch can tell by comparing
//     resourceVersions, KEP-5504: beyond the protocol on one stream, on
//     purpose, to catch clients that act once per event); periodic
//     bookmarks are dropped, the initial-events-end one never. No fault
//     resends a change older than the resourceVersion a watch starts
//     from: kube's API promises the changes after it, and a correct
//     client need not compare resourceVersions to stay correct.
//
// Faults compose. Sieve's unobserved state — a controller that never sees
// an intermediate state — is HoldWatches, the changes, CompactResource,
// DropWatches, then Release: the client finds its position compacted,
// relists, and sees the end state only. Its stale state is StaleReads
// while the client relists (ExpireWatches, DropWatches): an informer that
// takes the older list goes back in time (client-go's does; kloop's
// refuses a list older than its position).
//
// The record ([Faults.Record]) keeps every request the server answered —
// time, user, verb, object, the resourceVersion sent and the one
// answered, the server's revision, the code, the fault that answered —
// the newest [DefaultRecordSize] of them (RecordOptions.Size, or a
// callback for all); [Record.Requests], [Record.Count] and [Record.Wait]
// query it with a [Match]. It is what a test checks its invariants
// against. A server that never called Faults pays nothing for any of
// this (the hooks of apiserver.Server.SetInterceptor cost one atomic load
// per request); once called, every authenticated request looks up the
// faults in effect, and every watch passes through a writer that can
// hold its events.
//
// The real server is kube-apiserver with the kube-controller-manager
// controllers that make API semantics — garbage collection, namespace
// deletion, the default ServiceAccount and the kube-root-ca.crt ConfigMap of
// every namespace, ServiceAccount token Secrets — each under its
// ServiceAccount (--use-service-account-credentials), as the embedded server
// runs its own; nothing schedules or runs Pods, no other controller runs
// (ClusterRole aggregation: the aggregated bootstrap roles admin, edit and
// view get their rules once at start, as the aggregation controller would
// have given them, and later aggregation does not happen). The
// ServiceAccount admission plugin is off, RBAC on with the test user in
// system:masters, etcd compaction only through Env.Compact. Every Env's
// namespace holds its default ServiceAccount and kube-root-ca.crt when the
// test gets it (WaitForNamespaceDefaults); a namespace a test makes gets
// them a moment later, on either server.
package apiservertest
