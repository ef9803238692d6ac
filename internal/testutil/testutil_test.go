package testutil

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeTB records what Eventually reports; Fatalf ends the goroutine as
// testing's does, so Eventually never returns after it.
type fakeTB struct {
	testing.TB
	fatal string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
	panic(f)
}

// run calls Eventually on a fake and returns its failure message ("" when
// cond held).
func run[C Condition](what string, cond C, timeout time.Duration) (fatal string) {
	tb := &fakeTB{}
	defer func() {
		if r := recover(); r != nil && r != any(tb) {
			panic(r)
		}
		fatal = tb.fatal
	}()
	eventually(tb, what, cond, timeout)
	return ""
}

func TestEventually(t *testing.T) {
	n := 0
	if msg := run("third call", func() bool { n++; return n == 3 }, EventuallyTimeout); msg != "" || n != 3 {
		t.Fatalf("bool condition: %q after %d calls", msg, n)
	}
	n = 0
	if msg := run("third call", func() error {
		if n++; n < 3 {
			return errors.New("too early")
		}
		return nil
	}, EventuallyTimeout); msg != "" || n != 3 {
		t.Fatalf("error condition: %q after %d calls", msg, n)
	}
}

func TestEventuallyTimesOut(t *testing.T) {
	boolMsg := run("never", func() bool { return false }, 20*time.Millisecond)
	errMsg := run("never", func() error { return errors.New("still 3 pods") }, 20*time.Millisecond)
	if !strings.Contains(boolMsg, "waiting for never") || strings.Contains(boolMsg, "not yet") {
		t.Errorf("bool condition: %q", boolMsg)
	}
	if !strings.Contains(errMsg, "waiting for never: still 3 pods") {
		t.Errorf("error condition: %q", errMsg)
	}
}

func TestSyncBuffer(t *testing.T) {
	var b SyncBuffer
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() { fmt.Fprintf(&b, "%d", i) })
	}
	wg.Wait()
	if got := b.String(); len(got) != 4 {
		t.Fatalf("%q", got)
	}
	b.Reset()
	if b.String() != "" {
		t.Fatal("not empty after Reset")
	}
}

type stats struct{ Adds int }

func TestProvider(t *testing.T) {
	var p Provider[stats]
	adds := 0
	if err := p.Register("q", func(s *stats) { s.Adds = adds }); err != nil {
		t.Fatal(err)
	}
	if err := p.Register("q", func(*stats) {}); err == nil {
		t.Fatal("a name registered twice was accepted")
	}
	adds = 7
	if s, ok := p.Read("q"); !ok || s.Adds != 7 {
		t.Fatalf("Read = %+v, %v", s, ok)
	}
	if s := p.Only(); s.Adds != 7 {
		t.Fatalf("Only = %+v", s)
	}
	if err := p.Register("r", func(*stats) {}); err != nil {
		t.Fatal(err)
	}
	if got := p.Names(); len(got) != 2 || got[0] != "q" || got[1] != "r" {
		t.Fatalf("Names = %v", got)
	}
	p.Unregister("q")
	if _, ok := p.Read("q"); ok {
		t.Fatal("read after Unregister")
	}
	if err := p.Register("q", func(*stats) {}); err != nil {
		t.Fatalf("register after Unregister: %v", err)
	}
}
