package informer

import (
	"context"
	"errors"
	"slices"
	"sync"

	"kloop.dev/kloop/cache"
)

// multi is an informer of several namespaces, as controller-runtime's
// multi-namespace cache: one shared informer (one list and one watch) per
// namespace, read and handled as one. Reads of one namespace go to its
// informer; reads across namespaces merge them. A handler receives the
// notifications of every namespace, one at a time (Handler's contract),
// each namespace's in order.
type multi struct {
	// byNS holds the informers by namespace; order holds them sorted by
	// namespace. Both are fixed at construction.
	byNS  map[string]*shared
	order []*shared
}

// newMulti returns the view of the informers of namespaces (two or more,
// sorted), informers[i] the one of namespaces[i].
func newMulti(namespaces []string, informers []*shared) *multi {
	m := &multi{byNS: make(map[string]*shared, len(namespaces)), order: informers}
	for i, ns := range namespaces {
		m.byNS[ns] = informers[i]
	}
	return m
}

// addHandler registers one listener per namespace. Their deliveries and
// flushes take one mutex, so that the handler is never called concurrently
// (each namespace's informer delivers on its own goroutine).
func (m *multi) addHandler(deliver func(notification), flush func(), o HandlerOptions) (*Registration, error) {
	var mu sync.Mutex // serializes the handler's calls
	locked := func(n notification) {
		mu.Lock()
		defer mu.Unlock()
		deliver(n)
	}
	var lockedFlush func()
	if flush != nil {
		lockedFlush = func() {
			mu.Lock()
			defer mu.Unlock()
			flush()
		}
	}
	r := &Registration{}
	for _, s := range m.order {
		part, err := s.addHandler(locked, lockedFlush, o)
		if err != nil {
			for i, p := range r.parts {
				_ = m.order[i].removeHandler(p)
			}
			return nil, err
		}
		r.parts = append(r.parts, part)
	}
	return r, nil
}

func (m *multi) removeHandler(r *Registration) error {
	if r == nil || len(r.parts) != len(m.order) {
		return ErrNotRegistered
	}
	var errs []error
	for i, p := range r.parts {
		errs = append(errs, m.order[i].removeHandler(p))
	}
	return errors.Join(errs...)
}

func (m *multi) hasSynced() bool {
	for _, s := range m.order {
		if !s.fifo.HasSynced() {
			return false
		}
	}
	return true
}

func (m *multi) waitForSync(ctx context.Context) error {
	for _, s := range m.order {
		if err := s.waitForSync(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (m *multi) list() []Object {
	var out []Object
	for _, s := range m.order {
		out = append(out, s.indexer.List()...)
	}
	return out
}

func (m *multi) byIndex(indexName, value string) ([]Object, error) {
	var out []Object
	for _, s := range m.order {
		objs, err := s.indexer.ByIndex(indexName, value)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

// addIndexers adds the indexes to every namespace's informer; it stops at
// the first error (an index conflict: cache.ErrIndexConflict).
func (m *multi) addIndexers(indexers map[string]cache.IndexFunc[Object]) error {
	for _, s := range m.order {
		if err := s.indexer.AddIndexers(indexers); err != nil {
			return err
		}
	}
	return nil
}

// sortedNamespaces returns a sorted copy of namespaces.
func sortedNamespaces(namespaces []string) []string {
	out := slices.Clone(namespaces)
	slices.Sort(out)
	return out
}
