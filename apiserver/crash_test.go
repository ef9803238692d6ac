package apiserver_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"kloop.dev/kloop/apiserver"
)

// The crash test's child: the test binary run again with crashChildEnv set
// to "dir addr"; it serves (plain HTTP, token crashToken) a server on the
// data directory, snapshotting often, until it is killed.
const (
	crashChildEnv = "KLOOP_TEST_CRASH_CHILD"
	crashToken    = "crash-test-token"
)

func crashChild() int {
	dir, addr, _ := strings.Cut(os.Getenv(crashChildEnv), " ")
	srv, err := apiserver.New(apiserver.WithSnapshotBytes(apiserver.Options{DataDir: dir, Addr: addr, Token: crashToken}, 64<<10))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() { _ = srv.Serve(context.Background(), ln) }()
	<-srv.Ready()
	fmt.Println("ready")
	select {} // until killed
}

// startCrashChild starts the child and waits until it serves.
func startCrashChild(t *testing.T, dir, addr string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir+" "+addr)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	ready := make(chan bool, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		ready <- line == "ready\n"
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatal("the crash test's server did not start")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the crash test's server did not start in 30 s")
	}
	return cmd
}

// crashLedger is what the clients of the crash test were told: the last
// acknowledged value of each object, the highest acknowledged
// resourceVersion, and what a watcher saw of each object (values in order).
type crashLedger struct {
	mu     sync.Mutex
	acked  map[string]int
	maxRV  int64
	seen   map[string][]int
	lastRV string // the watcher's position
}

func (l *crashLedger) ack(name string, v int, rv string) {
	n, _ := strconv.ParseInt(rv, 10, 64)
	l.mu.Lock()
	l.acked[name] = v
	l.maxRV = max(l.maxRV, n)
	l.mu.Unlock()
}

// follow watches ConfigMaps from the ledger's position, recording values,
// until the watch fails or until stopAt (a ConfigMap name) is added.
func (l *crashLedger) follow(ctx context.Context, cs kubernetes.Interface, stopAt string) error {
	l.mu.Lock()
	rv := l.lastRV
	l.mu.Unlock()
	w, err := cs.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		return err
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		cm, ok := ev.Object.(*corev1.ConfigMap)
		if !ok {
			return fmt.Errorf("watch from %s: %s %v", rv, ev.Type, apierrors.FromObject(ev.Object))
		}
		v, _ := strconv.Atoi(cm.Data["v"])
		l.mu.Lock()
		l.lastRV = cm.ResourceVersion
		if ev.Type != watch.Deleted {
			l.seen[cm.Name] = append(l.seen[cm.Name], v)
		}
		l.mu.Unlock()
		if cm.Name == stopAt {
			return nil
		}
	}
	return fmt.Errorf("watch from %s ended", rv)
}

// check compares the server's state with the ledger: every acknowledged
// write is there, and the watcher saw every write, once, in order.
func (l *crashLedger) check(t *testing.T, ctx context.Context, cs kubernetes.Interface, round int) {
	t.Helper()
	fence := fmt.Sprintf("fence-%d", round)
	cm, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fence}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rv, _ := strconv.ParseInt(cm.ResourceVersion, 10, 64)
	l.mu.Lock()
	maxRV := l.maxRV
	l.mu.Unlock()
	if rv <= maxRV {
		t.Fatalf("round %d: a write after the restart got resourceVersion %d, not after the acknowledged %d", round, rv, maxRV)
	}
	if err := l.follow(ctx, cs, fence); err != nil {
		t.Fatalf("round %d: resuming the watch after the restart: %v", round, err)
	}
	list, err := cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]int{}
	for _, cm := range list.Items {
		stored[cm.Name], _ = strconv.Atoi(cm.Data["v"])
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for name, v := range l.acked {
		got, ok := stored[name]
		if !ok || got < v || got > v+1 {
			t.Errorf("round %d: %s holds %d (present %t), acknowledged %d", round, name, got, ok, v)
		}
	}
	for name, v := range stored {
		if strings.HasPrefix(name, "fence-") {
			continue
		}
		seen := l.seen[name]
		for i, sv := range seen {
			if sv != i {
				t.Errorf("round %d: the watcher saw %s take the values %v: a gap or a duplicate", round, name, seen)
				break
			}
		}
		if len(seen) != v+1 {
			t.Errorf("round %d: the watcher saw %s take the values %v, it holds %d", round, name, seen, v)
		}
	}
}

// TestCrashLosesNoAcknowledgedWrite kills (SIGKILL) a server with a data
// directory at a random moment while clients write as fast as they can and
// a watcher follows, restarts it on the directory, and checks that every
// acknowledged write is there, that resourceVersions go on after the
// highest acknowledged one, and that the watcher, resuming from the last
// resourceVersion it saw, sees every write once and in order. Three rounds,
// snapshots included (the child snapshots every 64 KiB of log).
func TestCrashLosesNoAcknowledgedWrite(t *testing.T) {
	dir, addr := t.TempDir(), freeAddr(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute) // three restarts, on a busy machine with -race
	defer cancel()
	l := &crashLedger{acked: map[string]int{}, seen: map[string][]int{}}
	connect := func() kubernetes.Interface {
		return kubernetes.NewForConfigOrDie(&rest.Config{Host: "http://" + addr, BearerToken: crashToken, QPS: -1, Timeout: 10 * time.Second})
	}
	const rounds, writers = 3, 8
	for round := range rounds {
		child := startCrashChild(t, dir, addr)
		cs := connect()
		if round > 0 {
			l.check(t, ctx, cs, round)
		} else {
			list, err := cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			l.lastRV = list.ResourceVersion
		}
		var killed atomic.Bool
		var wg sync.WaitGroup
		wg.Go(func() {
			if err := l.follow(ctx, cs, ""); err != nil && !killed.Load() {
				t.Errorf("round %d: watch: %v", round, err)
			}
		})
		var writes atomic.Int64
		start := time.Now()
		for g := range writers {
			wg.Go(func() {
				cms := cs.CoreV1().ConfigMaps("default")
				for i := 0; ; i++ {
					// Each object is created (v=0), then updated three
					// times (v=1..3) by this writer alone.
					name := fmt.Sprintf("r%d-w%d-%d", round, g, i/4)
					var cm *corev1.ConfigMap
					var err error
					if v := i % 4; v == 0 {
						cm, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"v": "0"}}, metav1.CreateOptions{})
					} else {
						cm, err = cms.Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: ""}, Data: map[string]string{"v": strconv.Itoa(v)}}, metav1.UpdateOptions{})
					}
					if err != nil {
						if !killed.Load() {
							t.Errorf("round %d: %s: %v", round, name, err)
						}
						return
					}
					l.ack(name, i%4, cm.ResourceVersion)
					writes.Add(1)
				}
			})
		}
		// The kill comes at a random moment once writes flow (the first
		// ones of a server are slow: schemas are parsed on first use).
		for writes.Load() < 50 && ctx.Err() == nil && time.Since(start) < 30*time.Second {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(time.Duration(rand.IntN(1000)) * time.Millisecond)
		killed.Store(true)
		if err := child.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = child.Wait()
		wg.Wait()
		var files []string // what the kill left, a snapshot being written maybe
		entries, _ := os.ReadDir(filepath.Join(dir, "store"))
		for _, e := range entries {
			files = append(files, e.Name())
		}
		t.Logf("round %d: %d writes acknowledged before the kill, which left %v", round, writes.Load(), files)
		if writes.Load() < 50 {
			t.Fatalf("round %d: %d writes acknowledged in 30 s", round, writes.Load())
		}
	}
	startCrashChild(t, dir, addr)
	l.check(t, ctx, connect(), rounds)
}
