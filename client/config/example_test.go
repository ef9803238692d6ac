package config_test

import (
	"context"
	"flag"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/client/config"
)

// A program registers --kubeconfig and --context and loads the
// configuration they name (else $KUBECONFIG, in-cluster, ~/.kube/config).
// Here the kubeconfig is the one an embedded API server writes.
func Example() {
	srv, err := apiservertest.New(apiservertest.Options{})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	fs := flag.NewFlagSet("operator", flag.ContinueOnError)
	flags := config.RegisterFlags(fs)
	if err := fs.Parse([]string{"--kubeconfig", srv.Kubeconfig()}); err != nil {
		panic(err)
	}
	cfg, err := config.Load(flags.Options())
	if err != nil {
		panic(err)
	}

	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		panic(err)
	}
	ns, err := cs.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println(ns.Name, ns.Status.Phase)
	// Output:
	// default Active
}
