package apiserver_test

import (
	"context"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
	"k8s.io/client-go/kubernetes"

	"kloop.dev/kloop/apiserver"
	"kloop.dev/kloop/apiserver/apiservertest"
)

func TestMain(m *testing.M) {
	if os.Getenv(crashChildEnv) != "" {
		os.Exit(crashChild()) // a server for TestCrashLosesNoAcknowledgedWrite to kill
	}
	goleak.VerifyTestMain(m)
}

// forEachTarget is apiservertest.ForEachTarget with the embedded server
// checking its decoded-object cache (apiserver.CheckDecodedCache), as
// every server of these tests does: tests start servers through it,
// startTarget, onTargets or embedded.
func forEachTarget(t *testing.T, opts apiservertest.Options, f func(t *testing.T, env *apiservertest.Env)) {
	t.Helper()
	apiservertest.ForEachTarget(t, apiserver.CheckDecodedCache(t, opts), f)
}

// startTarget is apiservertest.Start with the decoded-cache check on.
func startTarget(t *testing.T, target apiservertest.Target, opts apiservertest.Options) *apiservertest.Env {
	t.Helper()
	return apiservertest.Start(t, target, apiserver.CheckDecodedCache(t, opts))
}

// onTargets runs f on every target (forEachTarget) with a clientset for
// it; opts apply to the embedded server only.
func onTargets(t *testing.T, opts apiservertest.Options, f func(t *testing.T, env *apiservertest.Env, cs kubernetes.Interface)) {
	t.Helper()
	forEachTarget(t, opts, func(t *testing.T, env *apiservertest.Env) {
		f(t, env, clientset(t, env))
	})
}

func clientset(t *testing.T, env *apiservertest.Env) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// embedded starts an embedded server alone, for tests of its own knobs.
func embedded(t *testing.T, opts apiservertest.Options) (*apiservertest.Env, kubernetes.Interface) {
	t.Helper()
	env := startTarget(t, apiservertest.Embedded, opts)
	return env, clientset(t, env)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
