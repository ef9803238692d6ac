// Package predicate filters the events of kloop.dev/kloop/handler before a
// handler sees them. A Predicate answers, per kind of event, whether the
// event should reach the handler; a controller applies all the predicates of
// a watch (and the builder's event filters) and drops the event as soon as
// one says no.
//
// The predicates and their semantics are controller-runtime's:
//
//	GenerationChanged{}       updates only when metadata.generation changed (drops status-only
//	                          and metadata-only writes: the seeds' hot-loop trap)
//	ResourceVersionChanged{}  updates only when metadata.resourceVersion changed (drops resyncs)
//	LabelChanged{}            updates only when the labels changed
//	AnnotationChanged{}       updates only when the annotations changed
//	LabelSelector(sel)        every event whose object (the new one, for updates) matches sel
//	And, Or, Not              combinations
//	Funcs{…}, NewFuncs(fn)    your own functions; a nil function lets events pass
//
// The Changed predicates let create, delete and generic events pass. An update
// with a nil old or new object (or a typed nil pointer) never passes, and
// nothing here panics on a nil object. A nil Predicate lets everything pass,
// inside And and Or too.
//
// The package is a sub-package of handler, and not part of it, so that its
// names match controller-runtime's (predicate.Funcs next to handler.Funcs);
// see the handler package documentation.
package predicate
