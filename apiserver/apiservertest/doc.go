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
