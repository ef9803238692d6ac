package apiserver_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"kloop.dev/kloop/apiserver"
)

// A user of its own token may do what RBAC gives it: here the bootstrap
// ClusterRole view, bound in one namespace.
func ExampleOptions_users() {
	srv, err := apiserver.New(apiserver.Options{Users: map[string]apiserver.UserInfo{
		"alice-token": {Name: "alice", Groups: []string{"devs"}},
	}})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- srv.Start(ctx) }()
	<-srv.Ready()

	admin, err := kubernetes.NewForConfig(srv.RESTConfig())
	if err != nil {
		panic(err)
	}
	_, err = admin.RbacV1().RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "devs-view"},
		RoleRef:    rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: "devs"}},
	}, metav1.CreateOptions{})
	if err != nil {
		panic(err)
	}

	cfg := srv.RESTConfig()
	cfg.BearerToken = "alice-token"
	alice, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		panic(err)
	}
	pods, err := alice.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	fmt.Println(len(pods.Items), err)
	_, err = alice.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	fmt.Println(apierrors.IsForbidden(err), err)

	// The administrator may act as alice (kubectl --as).
	as := srv.RESTConfig()
	as.Impersonate = rest.ImpersonationConfig{UserName: "alice", Groups: []string{"devs"}}
	asAlice, err := kubernetes.NewForConfig(as)
	if err != nil {
		panic(err)
	}
	_, err = asAlice.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
	fmt.Println(err)

	cancel()
	<-done
	// Output:
	// 0 <nil>
	// true configmaps is forbidden: User "alice" cannot create resource "configmaps" in API group "" in the namespace "default"
	// secrets is forbidden: User "alice" cannot list resource "secrets" in API group "" in the namespace "default"
}
