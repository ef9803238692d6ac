package rctx

import (
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"go.opentelemetry.io/otel/trace"
)

// Write is one successful write a reconcile made through a client: what
// the client learnt of it from the server's answer.
type Write struct {
	Kind            schema.GroupKind
	Namespace, Name string
	UID             types.UID
	// ResourceVersion is the object's after the write ("" for a deletion
	// answered with a Status).
	ResourceVersion string
	// Generation is the object's metadata.generation after the write.
	Generation int64
	// Subresource is "status" for a write of the status, "" otherwise.
	Subresource string
	// Deleted: the write deleted the object (it is gone from the server).
	Deleted bool
	// FieldManager is the write's field manager ("" when the server
	// derived it from the user agent).
	FieldManager string
	// ManagedFields are the object's after the write, when the Writes
	// asked for them (KeepManagedFields).
	ManagedFields []metav1.ManagedFieldsEntry
	// CaughtUp reports whether the client's cache of the kind has caught
	// up with the write (true when it cannot tell: no cache of the kind,
	// resourceVersions that do not compare); nil for a kind the client
	// does not cache.
	CaughtUp func() bool
	// Span is the span of the API call that made the write, when the
	// reconcile is traced (Scope.Traced); invalid otherwise.
	Span trace.SpanContext
}

// Writes collects the writes made with a reconcile's context. The client
// appends to it; the controller reads it once the reconcile returned.
type Writes struct {
	// KeepManagedFields asks the client to copy each written object's
	// managedFields into its Write. Set before the reconcile.
	KeepManagedFields bool

	mu   sync.Mutex // guards list: a reconcile may write from goroutines
	list []Write
	// n is len(list), read without the lock: most reconciles write nothing.
	n atomic.Int32
}

// Add records w.
func (ws *Writes) Add(w Write) {
	ws.mu.Lock()
	ws.list = append(ws.list, w)
	ws.n.Store(int32(len(ws.list)))
	ws.mu.Unlock()
}

// Take returns the writes recorded and empties ws (keeping its buffer for
// dst's next use only if dst is given). The result is the caller's.
func (ws *Writes) Take(dst []Write) []Write {
	if ws.n.Load() == 0 {
		return dst[:0]
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	dst = append(dst[:0], ws.list...)
	clear(ws.list)
	ws.list = ws.list[:0]
	ws.n.Store(0)
	return dst
}

// Len returns the number of writes recorded.
func (ws *Writes) Len() int { return int(ws.n.Load()) }
