package reflector

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// ErrStaleList is wrapped by the error the reflector reports (to
// Metrics.ObserveList, and in its logs) when it refused a list — paginated
// or streamed — whose resourceVersion is older than the one it had already
// reached: handing it to the store would move the cache back in time
// (typically an API server behind the others, after a failover). The
// store keeps what it has and the list is retried after a backoff wait.
var ErrStaleList = errors.New("reflector: list older than the resourceVersion already reached")

// checkNotOlder returns an error wrapping ErrStaleList when a list at rv
// would move the reflector back from its position (LastSyncResourceVersion).
//
// Only comparable resourceVersions are compared, the way
// k8s.io/apimachinery/pkg/util/resourceversion compares them (decimal
// integers without leading zeros, as kube-apiserver's etcd revisions are);
// kube-apiserver guarantees that order since KEP-5504. With no position yet
// (the first list, at resourceVersion="0" from the watch cache, may be as
// old as it likes) or with a resourceVersion that is not comparable (an
// opaque one from another kind of server), the list is accepted, as before.
func (r *Reflector[T]) checkNotOlder(rv string) error {
	seen := r.LastSyncResourceVersion()
	if seen == "" {
		return nil
	}
	c, err := resourceversion.CompareResourceVersion(rv, seen)
	if err != nil || c >= 0 {
		return nil
	}
	return fmt.Errorf("%w: list at resourceVersion %s, position %s", ErrStaleList, rv, seen)
}
