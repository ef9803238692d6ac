package operator_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/examples/cloud"
	"kloop.dev/kloop/examples/cloud/cloudclient"
	examplev1 "kloop.dev/kloop/examples/widget/api/v1"
	"kloop.dev/kloop/examples/widget/operator"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/internal/testutil"
	"kloop.dev/kloop/manager"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// AddToManager wires both controllers: a WidgetSet's Widget runs.
func TestAddToManager(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{CRDPaths: []string{"../config/crd/bases"}}, func(t *testing.T, env *apiservertest.Env) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		quiet := slog.New(slog.DiscardHandler)
		cl, err := cloud.New(cloud.Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		cloudDone := make(chan error, 1)
		go func() { cloudDone <- cl.Start(ctx) }()
		defer func() { cancel(); <-cloudDone }()
		cc, err := cloudclient.New(cl.URL(), cloudclient.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s := runtime.NewScheme()
		if err := errors.Join(clientgoscheme.AddToScheme(s), examplev1.AddToScheme(s)); err != nil {
			t.Fatal(err)
		}
		mgr, err := manager.New(env.Config(), manager.Options{Logger: quiet,
			Cache: informer.FactoryOptions{Scheme: s, DefaultNamespaces: []string{env.Namespace}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := operator.AddToManager(mgr, cc, operator.Options{Workers: 2}); err != nil {
			t.Fatal(err)
		}
		mgrDone := make(chan error, 1)
		go func() { mgrDone <- mgr.Start(ctx) }()
		defer func() { cancel(); <-mgrDone }()

		one := int32(1)
		set := &examplev1.WidgetSet{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "s"},
			Spec: examplev1.WidgetSetSpec{Replicas: &one, Template: examplev1.WidgetTemplate{Spec: examplev1.WidgetSpec{Region: "local-1"}}}}
		if err := mgr.Client().Create(ctx, set); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, "s-0 Running", func() bool {
			var w examplev1.Widget
			err := mgr.Client().Uncached().Get(ctx, types.NamespacedName{Namespace: env.Namespace, Name: "s-0"}, &w)
			return err == nil && w.Status.State == examplev1.StateRunning
		})
		if n := cl.Stats().Live; n != 1 {
			t.Errorf("%d live instances", n)
		}
	})
}

func TestAddToManagerRejectsBadOptions(t *testing.T) {
	srv := apiservertest.NewServer(t, apiservertest.Options{})
	mgr, err := manager.New(srv.Config(), manager.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	cc, err := cloudclient.New("http://127.0.0.1:1", cloudclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := operator.AddToManager(mgr, cc, operator.Options{Workers: -1}); err == nil {
		t.Error("Workers -1 accepted")
	}
	if err := operator.AddToManager(mgr, nil, operator.Options{}); err == nil {
		t.Error("a nil cloud client accepted")
	}
}
