package apiservertest_test

import (
	"context"
	"fmt"
	"strings"

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

// Inject faults into one client's requests — here a controller's — and
// check what the server answered in its record. The administrator's
// requests (the checker's) are not touched.
func ExampleFaults() {
	srv, err := apiservertest.New(apiservertest.Options{})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	// The controller authenticates as a user of its own.
	if err := srv.AddUser("controller-token", apiservertest.UserInfo{Name: "controller", Groups: []string{"system:masters"}}); err != nil {
		panic(err)
	}
	ctrlCfg := srv.Config()
	ctrlCfg.BearerToken = "controller-token"
	ctrl, err := kubernetes.NewForConfig(ctrlCfg)
	if err != nil {
		panic(err)
	}
	admin, err := kubernetes.NewForConfig(srv.Config())
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	faults := srv.Faults()
	rec := faults.Record(apiservertest.RecordOptions{})
	controller := faults.For(apiservertest.User("controller"))

	cm, err := admin.CoreV1().ConfigMaps("default").Create(ctx,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Data: map[string]string{"v": "1"}}, metav1.CreateOptions{})
	if err != nil {
		panic(err)
	}

	// The controller's next update of a ConfigMap gets 409 Conflict.
	if _, err := controller.Fail(apiservertest.Match{Verb: "update", Resource: "configmaps"}, 1, apiservertest.Conflict); err != nil {
		panic(err)
	}
	cm.Data["v"] = "2"
	_, err = ctrl.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{})
	fmt.Println("first update:", err)
	cm, err = ctrl.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{})
	fmt.Println("second update:", err)

	// The controller's view goes stale: it reads the ConfigMap as it was
	// at its create, the administrator reads the present.
	var created int64
	for _, r := range rec.Requests(apiservertest.Match{Verb: "create", Name: "app"}) {
		fmt.Sscan(r.ResourceVersion, &created)
	}
	stale, err := controller.StaleReads(created)
	if err != nil {
		panic(err)
	}
	old, _ := ctrl.CoreV1().ConfigMaps("default").Get(ctx, "app", metav1.GetOptions{})
	now, _ := admin.CoreV1().ConfigMaps("default").Get(ctx, "app", metav1.GetOptions{})
	fmt.Println("stale:", old.Data["v"], "present:", now.Data["v"])
	stale.Release()

	for _, r := range rec.Requests(apiservertest.Match{Client: apiservertest.User("controller")}) {
		fault, _, _ := strings.Cut(r.Fault, "(")
		fmt.Println(strings.TrimSpace(fmt.Sprintln(r.Verb, r.Name, r.Code, fault)))
	}
	// Output:
	// first update: Operation cannot be fulfilled on configmaps "app": the object has been modified; please apply your changes to the latest version and try again
	// second update: <nil>
	// stale: 1 present: 2
	// update app 409 Fail
	// update app 200
	// get app 200 StaleReads
}
