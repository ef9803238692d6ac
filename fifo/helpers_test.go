package fifo

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type obj = *metav1.PartialObjectMetadata

// mk returns an object for key "ns/name" or "name" at resourceVersion rv.
func mk(key, rv string) obj {
	ns, name, ok := strings.Cut(key, "/")
	if !ok {
		ns, name = "", key
	}
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv}}
}

// store is a consumer's cache: KnownObjects that applies popped deltas. It
// lists keys sorted so that transcripts are deterministic.
type store struct {
	mu    sync.Mutex // guards items
	items map[string]obj
}

func newStore(objs ...obj) *store {
	s := &store{items: map[string]obj{}}
	for _, o := range objs {
		k, _ := defaultKey(o)
		s.items[k] = o
	}
	return s
}

func (s *store) ListKeys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]string, 0, len(s.items))
	for k := range s.items {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (s *store) GetByKey(key string) (obj, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.items[key]
	return o, ok
}

// apply applies one popped unit, as an informer does with its cache.
func (s *store) apply(batch []Delta[obj]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range batch {
		switch d.Type {
		case Added, Updated, Replaced, Sync:
			s.items[d.Key] = d.Object
		case Deleted:
			delete(s.items, d.Key)
		}
	}
}

// String renders the store as "a/x@1 b/y@2".
func (s *store) String() string {
	var parts []string
	for _, k := range s.ListKeys() {
		o, _ := s.GetByKey(k)
		parts = append(parts, k+"@"+o.ResourceVersion)
	}
	return strings.Join(parts, " ")
}

// render writes a delta as "Added a/x@1", "Deleted? a/y@1 list=10" (? for
// FinalStateUnknown), "Bookmark 7".
func render(d Delta[obj]) string {
	if d.Type == Bookmark {
		return "Bookmark " + d.ResourceVersion
	}
	var b strings.Builder
	b.WriteString(d.Type.String())
	if d.FinalStateUnknown {
		b.WriteString("?")
	}
	b.WriteString(" " + d.Key)
	if d.Object != nil {
		b.WriteString("@" + d.Object.ResourceVersion)
	} else {
		b.WriteString("@<nil>")
	}
	if d.ResourceVersion != "" {
		b.WriteString(" list=" + d.ResourceVersion)
	}
	return b.String()
}

// renderBatch writes a unit: one delta as is, a batch as "[d1 | d2]".
func renderBatch(batch []Delta[obj]) string {
	if len(batch) == 1 && batch[0].ResourceVersion == "" || len(batch) == 1 && batch[0].Type == Bookmark {
		return render(batch[0])
	}
	parts := make([]string, len(batch))
	for i, d := range batch {
		parts[i] = render(d)
	}
	return "[" + strings.Join(parts, " | ") + "]"
}

// popOne pops one unit (which must be queued), applies it to s (if not nil)
// and returns it rendered.
func popOne(t *testing.T, f *FIFO[obj], s *store) string {
	t.Helper()
	var got string
	err := f.Pop(context.Background(), func(batch []Delta[obj]) error {
		got = renderBatch(batch)
		if s != nil {
			s.apply(batch)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Pop: %v", err)
	}
	return got
}

// parseObjs parses "a/x:1 b/y:2" into objects.
func parseObjs(t *testing.T, s string) []obj {
	t.Helper()
	var out []obj
	for _, f := range strings.Fields(s) {
		k, rv, ok := strings.Cut(f, ":")
		if !ok {
			t.Fatalf("bad object %q", f)
		}
		out = append(out, mk(k, rv))
	}
	return out
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return fmt.Sprint("err: ", err)
}
