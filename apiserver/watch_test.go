package apiserver_test

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"kloop.dev/kloop/apiserver/apiservertest"
)

// TestWatchNoGapsUnderConcurrentWriters starts watches from various
// revisions while writers update objects, and checks each watcher sees every
// change after its start exactly once, in order.
func TestWatchNoGapsUnderConcurrentWriters(t *testing.T) {
	onTargets(t, apiservertest.Options{}, testWatchNoGapsUnderConcurrentWriters)
}

func testWatchNoGapsUnderConcurrentWriters(t *testing.T, env *apiservertest.Env, cs kubernetes.Interface) {
	ctx := ctxT(t)
	cms := cs.CoreV1().ConfigMaps(env.Namespace)
	const writers, perWriter, watchers = 4, 60, 4
	start, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	written := map[string]bool{} // resourceVersions written
	for i := range writers {
		wg.Go(func() {
			name := fmt.Sprintf("w%d", i)
			cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{}}, metav1.CreateOptions{})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			written[cm.ResourceVersion] = true
			mu.Unlock()
			for j := range perWriter {
				if cm.Data == nil {
					cm.Data = map[string]string{}
				}
				cm.Data["n"] = strconv.Itoa(j)
				if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				written[cm.ResourceVersion] = true
				mu.Unlock()
			}
		})
	}
	total := writers * (perWriter + 1)
	results := make([][]string, watchers)
	var wwg sync.WaitGroup
	for i := range watchers {
		wwg.Go(func() {
			w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: start.ResourceVersion})
			if err != nil {
				t.Error(err)
				return
			}
			defer w.Stop()
			for ev := range w.ResultChan() {
				cm, ok := ev.Object.(*corev1.ConfigMap)
				if !ok {
					t.Errorf("unexpected event %v %T", ev.Type, ev.Object)
					return
				}
				results[i] = append(results[i], cm.ResourceVersion)
				if len(results[i]) == total {
					return
				}
			}
		})
	}
	wg.Wait()
	wwg.Wait()
	for i, revs := range results {
		if len(revs) != total {
			t.Fatalf("watcher %d saw %d events, want %d", i, len(revs), total)
		}
		seen := map[string]bool{}
		prev := int64(0)
		for _, rv := range revs {
			n, _ := strconv.ParseInt(rv, 10, 64)
			if n <= prev || seen[rv] || !written[rv] {
				t.Fatalf("watcher %d: revision %s out of order, duplicated or unknown", i, rv)
			}
			seen[rv], prev = true, n
		}
	}
}

func TestWatchListAndSelectors(t *testing.T) {
	onTargets(t, apiservertest.Options{}, testWatchListAndSelectors)
}

func testWatchListAndSelectors(t *testing.T, env *apiservertest.Env, cs kubernetes.Interface) {
	ctx := ctxT(t)
	cms := cs.CoreV1().ConfigMaps(env.Namespace)
	for _, n := range []string{"a", "b"} {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Watch-list: the current state as ADDED, then a bookmark ending it.
	w, err := cms.Watch(ctx, metav1.ListOptions{SendInitialEvents: ptr.To(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for ev := range w.ResultChan() {
		cm := ev.Object.(*corev1.ConfigMap)
		got = append(got, string(ev.Type)+":"+cm.Name)
		if ev.Type == watch.Bookmark {
			if cm.Annotations[metav1.InitialEventsAnnotationKey] != "true" || cm.ResourceVersion == "" {
				t.Fatalf("initial-events-end bookmark: %+v", cm.ObjectMeta)
			}
			break
		}
	}
	w.Stop()
	if fmt.Sprint(got) != "[ADDED:a ADDED:b ADDED:kube-root-ca.crt BOOKMARK:]" {
		t.Fatalf("watch-list events %v", got)
	}
	// A selector on a watch: objects entering and leaving it are ADDED and DELETED.
	cur, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sel, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: cur.ResourceVersion, LabelSelector: "team=a"})
	if err != nil {
		t.Fatal(err)
	}
	defer sel.Stop()
	for _, labels := range []string{`{"team":"a"}`, `{"team":"a","x":"y"}`, `{"team":"b"}`} {
		if _, err := cms.Patch(ctx, "a", types.MergePatchType, []byte(`{"metadata":{"labels":`+labels+`}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var seen []watch.EventType
	for len(seen) < 3 {
		ev := <-sel.ResultChan()
		if ev.Type != watch.Bookmark {
			seen = append(seen, ev.Type)
		}
	}
	if fmt.Sprint(seen) != "[ADDED MODIFIED DELETED]" {
		t.Fatalf("selector watch: %v", seen)
	}
	// Invalid combinations.
	if _, err := cms.Watch(ctx, metav1.ListOptions{SendInitialEvents: ptr.To(true)}); !apierrors.IsInvalid(err) {
		t.Fatalf("sendInitialEvents without NotOlderThan: %v", err)
	}
}

// Periodic bookmarks carry the current revision, moved by writes elsewhere.
// Embedded only: it needs the embedded server's BookmarkInterval (the real
// server sends them about once a minute).
func TestWatchPeriodicBookmarks(t *testing.T) {
	env, cs := embedded(t, apiservertest.Options{BookmarkInterval: 50 * time.Millisecond})
	ctx := ctxT(t)
	cms := cs.CoreV1().ConfigMaps(env.Namespace)
	cur, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: cur.ResourceVersion, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	s, err := cs.CoreV1().Secrets(env.Namespace).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ev := <-w.ResultChan()
	if bm, ok := ev.Object.(*corev1.ConfigMap); ev.Type != watch.Bookmark || !ok || bm.ResourceVersion != s.ResourceVersion {
		t.Fatalf("bookmark: %v %+v, want revision %s", ev.Type, ev.Object, s.ResourceVersion)
	}
}

// A watch from a revision the history window no longer holds gets 410
// Expired; the client relists and watches on. Embedded only: it needs the
// embedded server's HistoryEvents (TestWatchGoneAfterCompaction is the same
// protocol on both servers).
func TestWatchExpiredThenRelist(t *testing.T) {
	env, cs := embedded(t, apiservertest.Options{HistoryEvents: 5})
	ctx := ctxT(t)
	cms := cs.CoreV1().ConfigMaps(env.Namespace)
	first, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Data: map[string]string{}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm := first
	for i := range 10 {
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data["i"] = strconv.Itoa(i)
		if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	ev := <-w.ResultChan()
	w.Stop()
	st, ok := ev.Object.(*metav1.Status)
	if ev.Type != watch.Error || !ok || st.Code != 410 || st.Reason != metav1.StatusReasonExpired {
		t.Fatalf("expected 410 Expired error event, got %v %+v", ev.Type, ev.Object)
	}
	// Relist and watch from the list's revision.
	list, err := cms.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=x"})
	if err != nil || len(list.Items) != 1 || list.Items[0].Data["i"] != "9" {
		t.Fatalf("relist: %v", err)
	}
	w, err = cms.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := cms.Delete(ctx, "x", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if ev := <-w.ResultChan(); ev.Type != watch.Deleted {
		t.Fatalf("after relist: %v", ev.Type)
	}
}

// TestWatchGoneAfterCompaction: after a compaction a watch from an older
// revision gets 410 Expired, an exact list at it too, the client relists and
// watches on from the list's revision; a revision from the future is "too
// large". Events, because kube-apiserver has no watch cache for them (a
// cached kind's watch outlives etcd's compaction there).
func TestWatchGoneAfterCompaction(t *testing.T) {
	onTargets(t, apiservertest.Options{}, testWatchGoneAfterCompaction)
}

func testWatchGoneAfterCompaction(t *testing.T, env *apiservertest.Env, cs kubernetes.Interface) {
	ctx := ctxT(t)
	events := cs.CoreV1().Events(env.Namespace)
	event := func(name, msg string) *corev1.Event {
		return &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: name},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: env.Namespace, Name: "p"},
			Reason:         "Test", Message: msg, Type: corev1.EventTypeNormal,
		}
	}
	first, err := events.Create(ctx, event("x", "0"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ev := first
	for i := range 3 {
		ev.Message = strconv.Itoa(i + 1)
		if ev, err = events.Update(ctx, ev, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := env.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	w, err := events.Watch(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	got := <-w.ResultChan()
	w.Stop()
	st, ok := got.Object.(*metav1.Status)
	if got.Type != watch.Error || !ok || st.Code != 410 || st.Reason != metav1.StatusReasonExpired {
		t.Fatalf("expected 410 Expired error event, got %v %+v", got.Type, got.Object)
	}
	if _, err := events.List(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact}); !apierrors.IsResourceExpired(err) {
		t.Fatalf("exact list at a compacted revision: %v", err)
	}
	// Relist and watch from the list's revision.
	list, err := events.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.Items[0].Message != "3" {
		t.Fatalf("relist: %v %+v", err, list)
	}
	w, err = events.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := events.Delete(ctx, "x", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := <-w.ResultChan(); got.Type != watch.Deleted {
		t.Fatalf("after relist: %v %+v", got.Type, got.Object)
	}
	// A future revision is "too large": far enough ahead that no other test
	// reaches it meanwhile (revisions are shared on the real server).
	n, _ := strconv.ParseInt(list.ResourceVersion, 10, 64)
	_, err = events.List(ctx, metav1.ListOptions{ResourceVersion: strconv.FormatInt(n+1_000_000, 10), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if !apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
		t.Fatalf("too large: %v", err)
	}
}

// TestManyWatchesOneClient opens more watches over one client (one HTTP/2
// connection) than Go's default stream limit of 250.
func TestManyWatchesOneClient(t *testing.T) {
	onTargets(t, apiservertest.Options{}, testManyWatchesOneClient)
}

func testManyWatchesOneClient(t *testing.T, env *apiservertest.Env, cs kubernetes.Interface) {
	ctx := ctxT(t)
	cms := cs.CoreV1().ConfigMaps(env.Namespace)
	l, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 300
	watches := make([]watch.Interface, 0, n)
	defer func() {
		for _, w := range watches {
			w.Stop()
		}
	}()
	for range n {
		w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		watches = append(watches, w)
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "all"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, w := range watches {
		select {
		case ev := <-w.ResultChan():
			if ev.Type != watch.Added {
				t.Fatalf("watch %d: %v", i, ev.Type)
			}
		case <-ctx.Done():
			t.Fatalf("watch %d got nothing", i)
		}
	}
}
