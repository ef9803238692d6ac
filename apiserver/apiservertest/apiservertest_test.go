package apiservertest_test

import (
	"context"
	"fmt"
	"testing"

	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"kloop.dev/kloop/apiserver/apiservertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestNewServer(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts apiservertest.Options
	}{
		{"defaults", apiservertest.Options{}},
		{"fixed token", apiservertest.Options{Token: "secret"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := apiservertest.NewServer(t, tc.opts)
			// The kubeconfig works as is.
			cfg, err := clientcmd.BuildConfigFromFlags("", srv.Kubeconfig())
			if err != nil {
				t.Fatal(err)
			}
			cs, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			nss, err := cs.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(nss.Items) != 4 {
				t.Fatalf("%d namespaces, want 4", len(nss.Items))
			}
			// Without the token: 401.
			anon := srv.Config()
			anon.BearerToken = ""
			acs, err := kubernetes.NewForConfig(anon)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := acs.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{}); err == nil || !isUnauthorized(err) {
				t.Fatalf("anonymous list: %v", err)
			}
		})
	}
}

func isUnauthorized(err error) bool {
	return err != nil && (fmt.Sprint(err) == "Unauthorized" || fmt.Sprint(err) == "the server has asked for the client to provide credentials")
}
