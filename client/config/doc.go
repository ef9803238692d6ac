// Package config finds the API server a program talks to and returns its
// client configuration (*rest.Config), as kubectl and controller-runtime's
// GetConfig do, with client-go's clientcmd reading the kubeconfig files.
//
//	fs := flag.CommandLine
//	flags := config.RegisterFlags(fs) // --kubeconfig, --context
//	flag.Parse()
//	cfg, err := config.Load(flags.Options())
//
// [Load] looks in these places, in order, and uses the first that answers
// (controller-runtime's precedence):
//
//  1. Options.Kubeconfig (--kubeconfig): that file alone; it must exist.
//  2. $KUBECONFIG, a list of files separated by the OS's path-list
//     separator (":" on Unix): the files that exist are merged as kubectl
//     merges them — for each cluster, user and context name, and for
//     current-context, the first file that sets it wins. Home is then not
//     read.
//  3. In-cluster, when $KUBECONFIG is not set: $KUBERNETES_SERVICE_HOST and
//     $KUBERNETES_SERVICE_PORT name the server, and the pod's service-account
//     directory holds its token (re-read from the file as the kubelet rotates
//     it) and the cluster's CA (ca.crt).
//  4. ~/.kube/config.
//
// If $KUBECONFIG names no file that exists, the in-cluster configuration is
// tried after it, as clientcmd does. Options.Context (--context) picks a
// context of the kubeconfig instead of its current-context; the in-cluster
// configuration has no contexts and ignores it, as controller-runtime does.
// A configuration without a QPS gets QPS -1: no client-side rate limit, as
// controller-runtime's, relying on the server's API priority and fairness.
//
// When no place answers, the error wraps [ErrNotFound] and lists each place
// tried and why it did not answer. Other errors (a file that does not
// parse, a context that does not exist) name the file or context.
//
// Nothing here is global: the environment, the home directory and the
// service-account directory are Options fields (defaults: the process's),
// and RegisterFlags registers on the FlagSet it is given.
package config
