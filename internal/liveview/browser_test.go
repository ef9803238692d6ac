package liveview_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/builder"
	"kloop.dev/kloop/client"
	"kloop.dev/kloop/controller"
	"kloop.dev/kloop/controller/controllerutil"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/internal/testcrd"
	"kloop.dev/kloop/manager"
	"kloop.dev/kloop/reconcile"
)

// chromium returns the path of a headless-capable Chromium, skipping the
// test when there is none (failing it with KLOOP_REQUIRE_CHROMIUM=1, as CI
// sets).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "/usr/bin/chromium"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("KLOOP_REQUIRE_CHROMIUM") == "1" {
		t.Fatal("no chromium in $PATH and KLOOP_REQUIRE_CHROMIUM=1 (apt-get install chromium)")
	}
	t.Skip("no chromium in $PATH: the live view's browser test skips (apt-get install chromium; KLOOP_REQUIRE_CHROMIUM=1 makes it fail instead)")
	return ""
}

// widgetReconciler keeps a ConfigMap per Widget (its color) and the
// Widget's status (its size), written only on change; the Widget named
// "ticking" writes the time into its status on every reconcile: a hot loop.
func widgetReconciler(c *client.Client) reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		var w testcrd.Widget
		if err := c.Get(ctx, req.NamespacedName, &w); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
		if w.Name == "ticking" {
			w.Status.State = "observed at " + time.Now().Format(time.RFC3339Nano)
			return reconcile.Result{}, c.Status().Update(ctx, &w)
		}
		var cm corev1.ConfigMap
		key := client.ObjectKey{Namespace: w.Namespace, Name: w.Name + "-cfg"}
		switch err := c.Get(ctx, key, &cm); {
		case apierrors.IsNotFound(err):
			cm = corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
				Data: map[string]string{"color": w.Spec.Color}}
			if err := controllerutil.SetControllerReference(&w, &cm, c.Scheme()); err != nil {
				return reconcile.Result{}, err
			}
			if err := c.Create(ctx, &cm); err != nil {
				return reconcile.Result{}, err
			}
		case err != nil:
			return reconcile.Result{}, err
		case cm.Data["color"] != w.Spec.Color:
			cm.Data = map[string]string{"color": w.Spec.Color}
			if err := c.Update(ctx, &cm); err != nil {
				return reconcile.Result{}, err
			}
		}
		if state := "size " + strconv.FormatInt(w.Spec.Size, 10); w.Status.State != state {
			w.Status.State = state
			return reconcile.Result{}, c.Status().Update(ctx, &w)
		}
		return reconcile.Result{}, nil
	})
}

// TestBrowser opens the live view in headless Chromium while a workload
// runs: the page loads and goes live, its totals move between two
// readings, a Widget's timeline lists its reconciles with their triggers,
// the hot-looping Widget is flagged, and a screenshot of the page is
// written ($KLOOP_ARTIFACTS, else the test's temporary directory).
func TestBrowser(t *testing.T) {
	exe := chromium(t)
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		scheme := runtime.NewScheme()
		if err := clientgoscheme.AddToScheme(scheme); err != nil {
			t.Fatal(err)
		}
		testcrd.AddToScheme(scheme)
		if err := testcrd.Install(ctx, env.Config()); err != nil {
			t.Fatal(err)
		}
		mgr, err := manager.New(env.Config(), manager.Options{
			LiveViewBindAddress: "127.0.0.1:0",
			Cache:               informer.FactoryOptions{Scheme: scheme, DefaultNamespaces: []string{env.Namespace}},
			FieldOwner:          "widget-controller",
		})
		if err != nil {
			t.Fatal(err)
		}
		c := mgr.Client()
		err = builder.ControllerManagedBy(mgr).Named("widget").
			For(&testcrd.Widget{}).Owns(&corev1.ConfigMap{}).
			WithOptions(controller.Options{MaxConcurrentReconciles: 2,
				HotLoop: controller.HotLoopOptions{SlowDown: 100 * time.Millisecond}}).
			Complete(widgetReconciler(c))
		if err != nil {
			t.Fatal(err)
		}
		mctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- mgr.Start(mctx) }()
		defer func() {
			stop()
			if err := <-done; err != nil {
				t.Errorf("manager: %v", err)
			}
		}()
		<-mgr.Started()

		// The workload: ten Widgets and the ticking one, then a spec
		// change every 20 ms, until the test ends.
		const widgets = 10
		for i := range widgets {
			w := &testcrd.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: fmt.Sprint("w-", i)},
				Spec: testcrd.WidgetSpec{Color: "red", Size: 1}}
			if err := c.Create(ctx, w); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Create(ctx, &testcrd.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "ticking"}}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wctx, stopWork := context.WithCancel(ctx)
		defer func() { stopWork(); wg.Wait() }()
		wg.Go(func() {
			for i := 0; wctx.Err() == nil; i++ {
				var w testcrd.Widget
				key := client.ObjectKey{Namespace: env.Namespace, Name: fmt.Sprint("w-", i%widgets)}
				if err := c.Get(wctx, key, &w); err == nil {
					w.Spec.Size++
					w.Spec.Color = []string{"red", "green", "blue"}[i%3]
					_ = c.Update(wctx, &w) // a conflict is retried with the next round
				}
				select {
				case <-wctx.Done():
				case <-time.After(20 * time.Millisecond):
				}
			}
		})

		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
			chromedp.WindowSize(1400, 1800))
		actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
		defer cancelAlloc()
		bctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
		defer cancelBrowser()

		url := "http://" + mgr.LiveViewAddr().String() + "/"
		if err := chromedp.Do(bctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(`#pipeline .stage`))); err != nil {
			t.Fatalf("loading %s: %v", url, err)
		}
		text := func(sel chromedp.CSS) string {
			t.Helper()
			s, err := chromedp.Run(bctx, chromedp.Text(sel))
			if err != nil {
				t.Fatalf("reading %s: %v", sel, err)
			}
			return s
		}
		if status := text(`#status`); status != "live" {
			t.Errorf("status %q, want live", status)
		}

		read := func() (events, reconciles int) {
			t.Helper()
			e, r := text(`#total-events`), text(`#total-reconciles`)
			ev, err1 := strconv.Atoi(e)
			rc, err2 := strconv.Atoi(r)
			if err1 != nil || err2 != nil {
				t.Fatalf("the totals are not numbers: %q, %q", e, r)
			}
			return ev, rc
		}
		e1, r1 := read()
		time.Sleep(2500 * time.Millisecond)
		e2, r2 := read()
		t.Logf("totals: events %d → %d, reconciles %d → %d", e1, e2, r1, r2)
		if e2 <= e1 || r2 <= r1 {
			t.Errorf("the figures did not move while the workload ran: events %d → %d, reconciles %d → %d", e1, e2, r1, r2)
		}

		// The ticking Widget is flagged; w-3's timeline lists its
		// reconciles and their triggers.
		if err := chromedp.Do(bctx,
			chromedp.WaitVisible(chromedp.CSS(`#objects tr[data-name="ticking"] .flag.hot`)),
			chromedp.Click(chromedp.CSS(`#objects tr[data-name="w-3"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#timeline .entry[data-type="Reconciled"] .trigger`)),
		); err != nil {
			t.Fatalf("selecting w-3: %v", err)
		}
		objects, timeline := text(`#objects`), text(`#timeline`)
		for _, want := range []string{"reconcile", "→ enqueue", "Widget.example.com " + env.Namespace + "/w-3", "success", "wrote "} {
			if !strings.Contains(timeline, want) {
				t.Errorf("w-3's timeline lacks %q:\n%s", want, timeline)
			}
		}
		if !strings.Contains(objects, "hot loop") {
			t.Errorf("the objects do not flag the hot loop:\n%s", objects)
		}

		shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(90)) // JPEG
		if err != nil {
			t.Fatal(err)
		}
		dir := os.Getenv("KLOOP_ARTIFACTS")
		if dir == "" {
			dir = t.TempDir()
		} else if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "liveview-"+strings.ReplaceAll(t.Name(), "/", "-")+".jpg")
		if err := os.WriteFile(path, shot, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s (%d bytes)", path, len(shot))
	})
}
