package informer

// InformerStats is a snapshot of one of a factory's informers, for live
// views of the pipeline.
type InformerStats struct {
	// Name is the informer's: its resource, and its scope when it has one
	// ("configmaps", "widgets.v1.example.com(ns|selector|)").
	Name string
	// Kind is its objects' kind ("ConfigMap", "Widget.example.com").
	Kind string
	// Events counts the deltas (watch events, and the objects of each
	// list) applied to its cache since it started.
	Events uint64
	// Queued is the number of deltas waiting in its FIFO (Informer.Queued).
	Queued int
	// Cached is the number of objects in its cache (Informer.Len).
	Cached int
}

// InformerStats returns a snapshot of every informer of the factory, in the
// order they were made. It takes the factory's lock only to copy the list.
func (f *Factory) InformerStats() []InformerStats {
	f.mu.Lock()
	entries := append([]*factoryEntry(nil), f.order...)
	f.mu.Unlock()
	out := make([]InformerStats, 0, len(entries))
	for _, e := range entries {
		out = append(out, InformerStats{
			Name:   e.s.name,
			Kind:   e.gvk.GroupKind().String(),
			Events: e.s.events.Load(),
			Queued: e.s.fifo.Len(),
			Cached: e.s.indexer.Len(),
		})
	}
	return out
}
