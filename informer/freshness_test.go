package informer

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kloop.dev/kloop/fifo"
)

// TestFreshness: the store's resourceVersion follows the last delta of
// each unit applied — a relist's, an event's object's, a bookmark's — never
// goes back, takes an unparsable one as is (readers then tell nothing), and
// each change wakes the readers waiting on Changed.
func TestFreshness(t *testing.T) {
	obj := func(rv string) Object {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", ResourceVersion: rv}}
	}
	tests := []struct {
		d    fifo.Delta[Object]
		want string
	}{
		{fifo.Delta[Object]{Type: fifo.Replaced, Object: obj("5"), ResourceVersion: "10"}, "10"},
		{fifo.Delta[Object]{Type: fifo.Updated, Object: obj("11")}, "11"},
		{fifo.Delta[Object]{Type: fifo.Bookmark, ResourceVersion: "20"}, "20"},
		{fifo.Delta[Object]{Type: fifo.Sync, Object: obj("11")}, "20"},    // a resync: not newer
		{fifo.Delta[Object]{Type: fifo.Updated, Object: obj("15")}, "20"}, // older: never back
		{fifo.Delta[Object]{Type: fifo.Deleted, Object: obj("21")}, "21"},
		{fifo.Delta[Object]{Type: fifo.Bookmark, ResourceVersion: "x7"}, "x7"},
		{fifo.Delta[Object]{Type: fifo.Added, Object: obj("22")}, "22"},
	}
	s := &shared{}
	inf := &Informer[Object]{s: s}
	if got := inf.StoreResourceVersion(); got != "" {
		t.Fatalf("before any delta: %q", got)
	}
	for _, tt := range tests {
		changed := inf.Changed()
		s.fresh.advance(&tt.d)
		select {
		case <-changed:
		default:
			t.Fatalf("%v: Changed not closed", tt.d.Type)
		}
		if got := inf.StoreResourceVersion(); got != tt.want {
			t.Fatalf("after %v: %q, want %q", tt.d.Type, got, tt.want)
		}
	}
	s.fresh.stop()
	select {
	case <-inf.Changed():
	default:
		t.Fatal("Changed of a stopped informer blocks")
	}
}
