package main

import (
	"context"
	"flag"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"kloop.dev/kloop/apiserver"
	"kloop.dev/kloop/internal/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestDispatch(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{nil, 2, "Commands:"},
		{[]string{"help"}, 0, "apiserver"},
		{[]string{"nope"}, 2, `unknown command "nope"`},
		{[]string{"apiserver", "--bogus"}, 2, "flag provided but not defined"},
		{[]string{"apiserver", "extra"}, 2, "unexpected arguments"},
		{[]string{"apiserver", "--tls=false", "--kubeconfig-out", "x"}, 2, "needs --tls"},
		{[]string{"apiserver", "--addr", "nonsense"}, 1, "Addr"},
		{[]string{"apiserver", "--request-timeout", "-1s"}, 1, "RequestTimeout must not be negative"},
		{[]string{"apiserver", "--read-header-timeout", "-1s"}, 1, "ReadHeaderTimeout must not be negative"},
		{[]string{"apiserver", "--idle-timeout", "-1s"}, 1, "IdleTimeout must not be negative"},
		{[]string{"apiserver", "--max-connections", "-1"}, 1, "MaxConnections must be positive"},
		{[]string{"apiserver", "--max-requests-inflight", "-1"}, 1, "MaxRequestsInFlight must be positive"},
		{[]string{"apiserver", "--max-mutating-requests-inflight", "-1"}, 1, "MaxMutatingRequestsInFlight must be positive"},
		{[]string{"apiserver", "--max-watches", "-1"}, 1, "MaxWatches must be positive"},
		{[]string{"apiserver", "--history-events", "-1"}, 1, "HistoryEvents must be positive"},
		{[]string{"apiserver", "--history-age", "-1s"}, 1, "must not be negative"},
		{[]string{"apiserver", "--history-bytes", "-1Mi"}, 1, "HistoryBytes must be positive"},
		{[]string{"apiserver", "--history-bytes", "1.5"}, 2, "not a whole number of bytes"},
		{[]string{"apiserver", "--history-bytes", "lots"}, 2, "invalid value"},
		{[]string{"apiserver", "--token-auth-file", "/nonexistent/tokens.csv"}, 1, "token file"},
		{[]string{"apiserver", "--data-dir", "/dev/null/kloop"}, 1, "data directory"},
		{[]string{"apiserver", "--fault-api", "0.0.0.0:0"}, 2, "not a loopback address"},
		{[]string{"apiserver", "--fault-api", ":0"}, 2, "not a loopback address"},
		{[]string{"apiserver", "--fault-api", "10.1.2.3:80"}, 2, "not a loopback address"},
		{[]string{"apiserver", "--fault-api", "nonsense"}, 2, "missing port"},
		{[]string{"version"}, 0, "embedded kube-apiserver: v1.37.2-kloop"},
		{[]string{"version"}, 0, "k8s.io/client-go:        v0."},
		{[]string{"version", "extra"}, 2, "unexpected arguments"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errOut testutil.SyncBuffer
			code := run(context.Background(), tc.args, &out, &errOut)
			if code != tc.code || !strings.Contains(out.String()+errOut.String(), tc.out) {
				t.Fatalf("code %d (want %d), output %q, want it to contain %q", code, tc.code, out.String()+errOut.String(), tc.out)
			}
		})
	}
}

func TestAPIServerCommand(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte("dev-token,dev,dev-uid,\"devs,qa\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut testutil.SyncBuffer
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"apiserver", "--kubeconfig-out", path, "--token", "t0ken", "--token-auth-file", tokens}, &out, &errOut)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "kubeconfig written") {
		if time.Now().After(deadline) {
			t.Fatalf("no kubeconfig; stdout %q stderr %q", out.String(), errOut.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !strings.Contains(out.String(), "listening on https://127.0.0.1:") {
		t.Fatalf("stdout %q", out.String())
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("kubeconfig: %v %v", err, fi)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BearerToken != "t0ken" {
		t.Fatalf("token %q", cfg.BearerToken)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	// The token file's user is authenticated, and may do what RBAC allows.
	devCfg := rest.CopyConfig(cfg)
	devCfg.BearerToken = "dev-token"
	dev, err := kubernetes.NewForConfig(devCfg)
	if err != nil {
		t.Fatal(err)
	}
	who, err := dev.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil || who.Status.UserInfo.Username != "dev" || strings.Join(who.Status.UserInfo.Groups, ",") != "devs,qa,system:authenticated" {
		t.Fatalf("whoami as dev: %+v, %v", who, err)
	}
	if _, err := dev.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("dev reads a namespace: %v, want Forbidden", err)
	}
	cancel() // as SIGINT does through signal.NotifyContext
	if code := <-done; code != 0 {
		t.Fatalf("exit code %d, stderr %q", code, errOut.String())
	}
	if !strings.Contains(out.String(), "stopped") {
		t.Fatalf("stdout %q", out.String())
	}
}

// TestSignalShutdown runs the real main in a child process (this test
// binary, re-executed) and stops it with SIGINT.
func TestSignalShutdown(t *testing.T) {
	if os.Getenv("KLOOP_TEST_MAIN") == "1" {
		os.Args = append([]string{"kloop"}, strings.Fields(os.Getenv("KLOOP_TEST_ARGS"))...)
		main()
		return
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	cmd := exec.Command(os.Args[0], "-test.run=^TestSignalShutdown$")
	cmd.Env = append(os.Environ(), "KLOOP_TEST_MAIN=1", "KLOOP_TEST_ARGS=apiserver --kubeconfig-out "+path)
	var out testutil.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), "kubeconfig written") {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("child did not start: %q", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGINT: %v, output %q", err, out.String())
	}
	if !strings.Contains(out.String(), "kloop apiserver stopped") {
		t.Fatalf("output %q", out.String())
	}
}

func TestBytesFlag(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  bool
	}{
		{"1000", 1000, false},
		{"64Mi", 64 << 20, false},
		{"1G", 1e9, false},
		{"1.5", 0, true},
		{"lots", 0, true},
	} {
		var n int64
		err := bytesFlag{&n}.Set(tc.in)
		if (err != nil) != tc.err || n != tc.want {
			t.Errorf("%q: %d, %v; want %d, error %v", tc.in, n, err, tc.want, tc.err)
		}
	}
	n := int64(128 << 20)
	if s := (bytesFlag{&n}).String(); s != "128Mi" {
		t.Errorf("String: %q", s)
	}
}

// TestAPIServerAddressInUse checks that a taken address is named, with what
// to do.
func TestAPIServerAddressInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var out, errOut testutil.SyncBuffer
	code := run(context.Background(), []string{"apiserver", "--addr", ln.Addr().String()}, &out, &errOut)
	want := "another server listens on " + ln.Addr().String() + " (give another --addr, or 127.0.0.1:0 for any free port)"
	if code != 1 || !strings.Contains(errOut.String(), want) {
		t.Fatalf("code %d, stderr %q, want 1 and %q", code, errOut.String(), want)
	}
}

// --crds creates the CRDs of files and directories before the server is
// handed out, -v logs every request as kube-apiserver's httplog does, and
// a bad CRD file stops the command with an error naming it.
func TestAPIServerCRDsAndRequestLog(t *testing.T) {
	dir := t.TempDir()
	crd := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gizmos.cmd.kloop.dev}
spec:
  group: cmd.kloop.dev
  scope: Namespaced
  names: {plural: gizmos, singular: gizmo, kind: Gizmo}
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
`
	if err := os.WriteFile(filepath.Join(dir, "gizmos.yaml"), []byte(crd), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut testutil.SyncBuffer
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"apiserver", "-v", "--crds", dir, "--kubeconfig-out", path}, &out, &errOut)
	}()
	testutil.Eventually(t, "the kubeconfig", func() bool { return strings.Contains(out.String(), "kubeconfig written") })
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	cfg.UserAgent = "crd-test/v1"
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	gizmos := schema.GroupVersionResource{Group: "cmd.kloop.dev", Version: "v1", Resource: "gizmos"}
	if _, err := dyn.Resource(gizmos).Namespace("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("list gizmos: %v", err)
	}
	testutil.Eventually(t, "the request logged", func() bool {
		return strings.Contains(errOut.String(), `msg=HTTP verb=GET URI=/apis/cmd.kloop.dev/v1/namespaces/default/gizmos user=kloop-admin resp=200`) &&
			strings.Contains(errOut.String(), "userAgent=crd-test/v1")
	})
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit code %d, stderr %q", code, errOut.String())
	}

	if err := os.WriteFile(filepath.Join(dir, "broken.yaml"), []byte(strings.Replace(crd, "scope: Namespaced", "scope: Galaxy", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	var out2, errOut2 testutil.SyncBuffer
	if code := run(context.Background(), []string{"apiserver", "--crds", dir}, &out2, &errOut2); code == 0 || !strings.Contains(errOut2.String(), "broken.yaml, document 1") || !strings.Contains(errOut2.String(), "spec.scope") {
		t.Fatalf("a bad CRD: exit %d, stderr %q", code, errOut2.String())
	}
}

// TestAPIServerDataDir restarts `kloop apiserver --data-dir` on the same
// directory and address: the kubeconfig written by the first run works
// with the second, which has the first one's objects; a second server on
// the directory is refused.
func TestAPIServerDataDir(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	args := []string{"apiserver", "--data-dir", dir, "--addr", addr, "--kubeconfig-out", path}
	serve := func() (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		var out, errOut testutil.SyncBuffer
		done := make(chan int)
		go func() { done <- run(ctx, args, &out, &errOut) }()
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(out.String(), "kubeconfig written") {
			if time.Now().After(deadline) {
				t.Fatalf("no kubeconfig; stdout %q stderr %q", out.String(), errOut.String())
			}
			time.Sleep(5 * time.Millisecond)
		}
		return func() {
			cancel()
			if code := <-done; code != 0 {
				t.Errorf("exit code %d, stderr %q", code, errOut.String())
			}
		}
	}
	stop := serve()
	kubeconfig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	// The server's root-CA publisher writes default's kube-root-ca.crt
	// soon after the start: once it is there, the ConfigMaps' writes are
	// the test's own.
	testutil.Eventually(t, "default's kube-root-ca.crt", func() error {
		_, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return err
	})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept"}, Data: map[string]string{"k": "v"}}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var out, errOut testutil.SyncBuffer
	if code := run(ctx, []string{"apiserver", "--data-dir", dir}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "data directory in use") {
		t.Fatalf("a second server on the directory: code %d, stderr %q", code, errOut.String())
	}
	list, err := cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stop()

	stop = serve()
	defer stop()
	got, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "kept", metav1.GetOptions{})
	if err != nil || got.Data["k"] != "v" {
		t.Fatalf("the ConfigMap after the restart, with the kubeconfig of before it: %v, %v", got, err)
	}
	if again, err := os.ReadFile(path); err != nil || string(again) != string(kubeconfig) {
		t.Fatalf("the kubeconfig changed across the restart (%v)", err)
	}
	// A watch from the resourceVersion of a list before the restart gets
	// the writes after it.
	w, err := cs.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		if cm, ok := ev.Object.(*corev1.ConfigMap); !ok || ev.Type != "ADDED" || cm.Name != "after" {
			t.Fatalf("watch from %s across the restart: %s %v", list.ResourceVersion, ev.Type, ev.Object)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event from the watch across the restart")
	}
}

// TestControllerFlags: --disable-controllers and --enable-garbage-collector
// set the server's Options.
func TestControllerFlags(t *testing.T) {
	for _, tc := range []struct {
		args            []string
		disabled, gcOff bool
		wantErr         bool
	}{
		{nil, false, false, false},
		{[]string{"--disable-controllers"}, true, false, false},
		{[]string{"--enable-garbage-collector=false"}, false, true, false},
		{[]string{"--enable-garbage-collector"}, false, false, false},
		{[]string{"--enable-garbage-collector=maybe"}, false, false, true},
	} {
		fs := flag.NewFlagSet("apiserver", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var opts apiserver.Options
		controllerFlags(fs, &opts)
		err := fs.Parse(tc.args)
		if (err != nil) != tc.wantErr || err == nil && (opts.DisableControllers != tc.disabled || opts.GarbageCollector.Disabled != tc.gcOff) {
			t.Errorf("%v: %v, %+v", tc.args, err, opts)
		}
	}
}
