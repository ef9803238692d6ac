package manager_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/builder"
	"kloop.dev/kloop/client"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/internal/liveview"
	"kloop.dev/kloop/internal/testutil"
	"kloop.dev/kloop/manager"
	"kloop.dev/kloop/reconcile"
)

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("GET %s: %v: %s", url, err, b)
		}
	}
	return resp.StatusCode
}

// TestLiveView: with LiveViewBindAddress, the manager serves the live view,
// whose figures count the informer's events and the controller's
// reconciles, and whose timeline of an object lists its reconciles with
// the events that triggered them and the writes they made. Off by
// default.
func TestLiveView(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		off, err := manager.New(env.Config(), manager.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if off.Observer() != nil {
			t.Error("a manager without a live view has an Observer")
		}
		mgr, err := manager.New(env.Config(), manager.Options{LiveViewBindAddress: "127.0.0.1:0",
			Cache: informer.FactoryOptions{DefaultNamespaces: []string{env.Namespace}}})
		if err != nil {
			t.Fatal(err)
		}
		c := mgr.Client()
		r := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			var cm corev1.ConfigMap
			if err := c.Get(ctx, req.NamespacedName, &cm); err != nil || cm.Annotations["seen"] == "yes" {
				return reconcile.Result{}, client.IgnoreNotFound(err)
			}
			if cm.Annotations == nil {
				cm.Annotations = map[string]string{}
			}
			cm.Annotations["seen"] = "yes"
			return reconcile.Result{}, c.Update(ctx, &cm)
		})
		if err := builder.ControllerManagedBy(mgr).Named("annotate").For(&corev1.ConfigMap{}).Complete(r); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- mgr.Start(ctx) }()
		defer func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("manager: %v", err)
			}
		}()
		<-mgr.Started()
		base := "http://" + mgr.LiveViewAddr().String()
		for i := range 3 {
			if err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: fmt.Sprint("lv-", i)}}); err != nil {
				t.Fatal(err)
			}
		}
		var tl liveview.TimelineAnswer
		testutil.Eventually(t, "lv-0's timeline: its creation's reconcile and the one its own update triggered", func() bool {
			url := fmt.Sprintf("%s/timeline?controller=annotate&namespace=%s&name=lv-0", base, env.Namespace)
			return getJSON(t, url, &tl) == http.StatusOK && len(tl.Entries) >= 2
		})
		first := tl.Entries[0]
		if first.Type != "Reconciled" || first.Result != "success" || first.TriggersTotal < 1 || (first.Triggers[0].Type != "Create" && first.Triggers[0].Type != "InitialList") ||
			len(first.Writes) != 1 || first.Writes[0].Name != "lv-0" || first.Writes[0].ResourceVersion == "" {
			t.Errorf("the first entry %+v", first)
		}
		second := tl.Entries[1]
		if second.Triggers[len(second.Triggers)-1].ResourceVersion != first.Writes[0].ResourceVersion {
			t.Errorf("the second reconcile's triggers %+v are not the first one's write at rv %s", second.Triggers, first.Writes[0].ResourceVersion)
		}

		var v liveview.View
		testutil.Eventually(t, "the figures count the events and reconciles", func() bool {
			if getJSON(t, base+"/stats", &v) != http.StatusOK || len(v.Controllers) != 1 {
				return false
			}
			var events uint64
			for _, in := range v.Informers {
				events += in.Events
			}
			return events >= 6 && v.Controllers[0].Name == "annotate" && v.Controllers[0].ReconcilesTotal >= 6 && v.Controllers[0].Workers == 1
		})
		// The namespace's kube-root-ca.crt is reconciled too: the figures
		// above may count it before every lv-i is done.
		var objs []liveview.ObjectSummary
		testutil.Eventually(t, "/objects lists lv-0, lv-1 and lv-2, each reconciled twice", func() error {
			if code := getJSON(t, base+"/objects", &objs); code != http.StatusOK {
				return fmt.Errorf("GET /objects: %d", code)
			}
			seen := map[string]bool{}
			for _, o := range objs {
				seen[o.Name] = o.Controller == "annotate" && o.Namespace == env.Namespace && o.Reconciles >= 2
			}
			for i := range 3 {
				if !seen[fmt.Sprint("lv-", i)] {
					return fmt.Errorf("objects lack lv-%d, twice reconciled: %+v", i, objs)
				}
			}
			return nil
		})
	})
}

// TestLiveViewStreamEndsAtShutdown: an open /events stream, which never
// goes idle, does not hold the manager's shutdown: the stream ends and
// Start returns.
func TestLiveViewStreamEndsAtShutdown(t *testing.T) {
	srv := apiservertest.NewServer(t, apiservertest.Options{}) // the shutdown is the manager's: one target
	mgr, err := manager.New(srv.Config(), manager.Options{LiveViewBindAddress: "127.0.0.1:0", GracefulShutdownTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	<-mgr.Started()
	resp, err := http.Get("http://" + mgr.LiveViewAddr().String() + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 512)
	if n, err := resp.Body.Read(buf); err != nil || !strings.HasPrefix(string(buf[:n]), "event: stats\n") {
		t.Fatalf("first frame %q, %v", buf[:n], err)
	}
	began := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Start did not return with a live view stream open")
	}
	if _, err := io.ReadAll(resp.Body); err != nil {
		t.Logf("the stream ended with %v", err)
	}
	t.Logf("stopped in %s", time.Since(began).Round(time.Millisecond))
}
