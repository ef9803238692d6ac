package apiservertest_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"kloop.dev/kloop/apiserver/apiservertest"
)

// Start an embedded API server with no testing.TB, talk to it with
// client-go, and close it, as with httptest.NewServer.
func Example() {
	srv, err := apiservertest.New(apiservertest.Options{})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	cs, err := kubernetes.NewForConfig(srv.Config())
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	cm, err := cs.CoreV1().ConfigMaps("default").Create(ctx,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "hello"}, Data: map[string]string{"greeting": "hi"}}, metav1.CreateOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println(cm.Name, cm.Data["greeting"])
	// Output:
	// hello hi
}
