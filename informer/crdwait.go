package informer

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kloop.dev/kloop/reflector"
)

// How often WaitForKind asks discovery again while a kind is not served:
// KindPollInitial after the first miss, doubling up to KindPollMax.
const (
	KindPollInitial = time.Second
	KindPollMax     = 30 * time.Second
)

// WaitForKind returns the mapping of gvk once the server serves it. While
// the factory's Mapper does not know the kind (meta.IsNoMatchError: its
// CRD does not exist yet) or discovery fails, it asks again after
// KindPollInitial, doubling the wait up to KindPollMax, and calls failed
// (if not nil) with each attempt's error, so that the caller can report
// the wait. It returns ctx's error, wrapped, when ctx ends first.
//
// Each attempt is one discovery request of the kind's group version with
// the default Mapper (a miss always reads the document again); a
// StaticMapper answers from its own table.
func (f *Factory) WaitForKind(ctx context.Context, gvk schema.GroupVersionKind, failed func(error)) (*meta.RESTMapping, error) {
	wait := KindPollInitial
	for {
		m, err := f.RESTMapping(ctx, gvk)
		if err == nil {
			return m, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("informer: waiting for kind %s: %w", gvk, context.Cause(ctx))
		}
		if failed != nil {
			failed(err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("informer: waiting for kind %s: %w", gvk, context.Cause(ctx))
		case <-t.C:
		}
		wait = min(2*wait, KindPollMax)
	}
}

// Dropped returns a channel closed when the factory has stopped and
// dropped the informer because its kind is no longer served (its CRD was
// deleted): the informer's cache is gone with it and it delivers nothing
// more. Once the kind is served again, the factory returns a new informer
// for it (WaitForKind, then InformerFor, Unstructured, Metadata or
// ForObject). An informer made with New, outside a factory, is never
// dropped (nil channel).
func (i *Informer[T]) Dropped() <-chan struct{} {
	if i.multi != nil {
		// The factory drops every informer of a resource at once.
		return i.multi.order[0].dropped
	}
	return i.s.dropped
}

// Dropped returns the channel of the source's informer's Dropped.
func (s *Source[T]) Dropped() <-chan struct{} { return s.inf.Dropped() }

// kindLW is the ListerWatcher of a factory's informer: a list or watch that
// the server answers with 404 NotFound — what it answers for a resource it
// does not serve, such as the resource of a deleted CRD — makes the factory
// check discovery, and drop the resource's informers if the kind is gone.
type kindLW struct {
	reflector.ListerWatcher[Object]
	f   *Factory
	gvk schema.GroupVersionKind
	gvr schema.GroupVersionResource
}

func (l *kindLW) List(ctx context.Context, opts metav1.ListOptions) (*reflector.List[Object], error) {
	out, err := l.ListerWatcher.List(ctx, opts)
	if err != nil && apierrors.IsNotFound(err) {
		l.f.checkServed(ctx, l.gvk, l.gvr)
	}
	return out, err
}

func (l *kindLW) Watch(ctx context.Context, opts metav1.ListOptions) (reflector.Watch[Object], error) {
	w, err := l.ListerWatcher.Watch(ctx, opts)
	if err != nil && apierrors.IsNotFound(err) {
		l.f.checkServed(ctx, l.gvk, l.gvr)
	}
	return w, err
}

// forgetter is a Mapper that can forget what it read of a group version,
// so that its next RESTMapping of a kind there asks the server again (the
// discovery mapper).
type forgetter interface {
	forget(gv schema.GroupVersion)
}

// checkServed asks discovery, afresh, whether gvk is still served; if it is
// not, it drops the informers of gvr. It is called from an informer's
// reflector after a 404, and never waits for an informer to stop.
func (f *Factory) checkServed(ctx context.Context, gvk schema.GroupVersionKind, gvr schema.GroupVersionResource) {
	fm, ok := f.opts.Mapper.(forgetter)
	if !ok {
		return // a static mapper: the kind is whatever it says
	}
	fm.forget(gvk.GroupVersion())
	_, err := f.opts.Mapper.RESTMapping(ctx, gvk.GroupKind(), gvk.Version)
	if !meta.IsNoMatchError(err) {
		return // still served, or discovery failed: the reflector retries
	}
	f.drop(gvk, gvr)
}

// drop stops and forgets every informer of gvr (in any form and scope),
// and closes their Dropped channels. The next request for the kind makes
// new ones.
func (f *Factory) drop(gvk schema.GroupVersionKind, gvr schema.GroupVersionResource) {
	f.mu.Lock()
	var dropped []*factoryEntry
	for k, e := range f.informers {
		if k.gvr == gvr {
			delete(f.informers, k)
			dropped = append(dropped, e)
		}
	}
	if len(dropped) == 0 {
		f.mu.Unlock()
		return
	}
	kept := f.order[:0]
	for _, e := range f.order {
		if !isDroppedEntry(e, dropped) {
			kept = append(kept, e)
		}
	}
	clear(f.order[len(kept):])
	f.order = kept
	for _, e := range dropped {
		if e.cancel != nil {
			e.cancel()
		}
		close(e.s.dropped)
	}
	f.mu.Unlock()
	f.logger.Info("informer: kind no longer served (its CRD was deleted?): its informers are stopped and dropped",
		"kind", gvk.String(), "resource", gvr.String(), "informers", len(dropped))
}

func isDroppedEntry(e *factoryEntry, dropped []*factoryEntry) bool {
	for _, d := range dropped {
		if d == e {
			return true
		}
	}
	return false
}

// forget removes gv's document from what the mapper has read.
func (m *discoveryMapper) forget(gv schema.GroupVersion) {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.known.Load()
	if _, ok := old.byGV[gv]; !ok {
		return
	}
	next := &discovered{byGV: make(map[schema.GroupVersion]map[string]*meta.RESTMapping, len(old.byGV)), preferred: old.preferred}
	for k, v := range old.byGV {
		if k != gv {
			next.byGV[k] = v
		}
	}
	m.known.Store(next)
}

// IsDropped reports whether inf has been dropped by its factory (see
// Informer.Dropped), without blocking.
func IsDropped[T Object](inf *Informer[T]) bool {
	select {
	case <-inf.Dropped():
		return true
	default:
		return false
	}
}
