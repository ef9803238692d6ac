// Command kloop is kloop's command-line tool. Each subcommand is one entry
// of the table in main.go:
//
//	kloop apiserver [--addr 127.0.0.1:0] [--kubeconfig-out PATH] [--token T] [--tls=true] [--token-auth-file FILE] [--crds PATH]... [--data-dir DIR] [--fault-api 127.0.0.1:PORT] [-v]
//
// runs the embedded API server until SIGINT or SIGTERM, printing where it
// listens and writing a kubeconfig kubectl uses as is. Its token (kubeconfig
// user kloop-admin) may do anything; --token-auth-file adds the users of a
// file in kube-apiserver's --token-auth-file format, who may do what the
// server's RBAC objects allow; --crds creates the CustomResourceDefinitions
// of a file or directory (YAML or JSON) before serving (updating those a
// data directory holds); --data-dir keeps the server's objects, its
// resourceVersion counter and watch history, its token and its serving
// certificate in a directory across restarts, so that with the same
// --addr a kubeconfig written before a restart still works and clients
// resume their watches (every write is on disk before it is
// acknowledged; a second server on the directory is refused); --fault-api
// serves apiservertest's fault injection as a small JSON API on a loopback
// address (refused on any other), for tests not written in Go (its
// requests need the server's token; see apiservertest.Faults.Handler); -v
// logs every request as kube-apiserver's httplog does; the server's limits
// have flags of their own (kloop apiserver -h).
//
//	kloop cloud [--addr 127.0.0.1:0] [--provision-delay D] [--visibility-delay D] [--rate-limit QPS] [--burst N] [--retry-after D] [--failure-rate F] [--seed N] [--state-file FILE] [-v]
//
// runs the local cloud of the Widget operator (package
// kloop.dev/kloop/examples/cloud) until SIGINT or SIGTERM, printing its
// URL: asynchronous instances, idempotent creates by client token, tags,
// eventually consistent describes, throttling and injected failures, each
// set by its flag; --state-file keeps the instances across restarts.
//
//	kloop version
//
// prints kloop's version (its module version, or the commit it was built
// from), the Go toolchain, the Kubernetes API the embedded server follows
// and the versions of the Kubernetes libraries kloop is built on.
package main
