// Package garbagecollector is the embedded API server's garbage collector:
// what kube-controller-manager's garbagecollector does beside
// kube-apiserver, written on kloop's own stages. It follows
// metadata.ownerReferences:
//
//   - an object whose owners are all gone is deleted (Background, the
//     default: owners first, then their dependents), with a uid and
//     resourceVersion precondition, and the propagation policy its own
//     finalizers ask for;
//   - an owner deleted in the Foreground (the foregroundDeletion
//     finalizer, which the API server adds) stays, with its
//     deletionTimestamp, until its dependents with blockOwnerDeletion are
//     gone — its dependents are deleted, those with dependents of their
//     own in the Foreground too — then the finalizer is removed;
//   - an owner deleted with the Orphan policy (the orphan finalizer) has
//     its reference removed from every dependent (a strategic merge patch
//     carrying the dependent's uid; a JSON merge patch on the
//     resourceVersion for custom resources, which take none), then the
//     finalizer is removed;
//   - references kube treats as invalid are treated the same way: an owner
//     in another namespace than its dependent is absent (a Warning event,
//     OwnerRefInvalidNamespace, on the dependent when the owner is seen
//     elsewhere), a cluster-scoped dependent's namespaced owner is
//     ignored, and a reference whose coordinates do not match the object
//     with its uid (another kind, another name) is verified on its own.
//
// How, as kube's collector: a monitor — a metadata-only informer
// (kloop.dev/kloop/informer over reflector's REST lister-watcher) — per
// deletable resource found in aggregated discovery (verbs delete, list and
// watch; events excepted), read again every ResyncPeriod and on Trigger
// (the server triggers it on every CRD change), so custom resources are
// followed as their CRDs come and go. The monitors feed one work queue of
// graph changes (kloop.dev/kloop/workqueue) that a single goroutine applies
// to the owner graph: a node per object, virtual nodes for owners named but
// not seen (verified by a read, then dropped or kept). Two controllers
// (kloop.dev/kloop/controller), attempt-to-delete and attempt-to-orphan,
// keyed by uid, do the writes. Owners found absent are remembered (500 of
// them), so the dependents of one deleted owner cost one request each, not
// two; an item's own state comes from its monitor's cache, and a delete is
// made on the resourceVersion it was decided on (a conflict makes it read
// the object and decide again). A collector started against a server that
// already holds dependents of vanished owners collects them from its first
// lists.
//
// Stats (ReadStats) count deletions attempted, done and failed,
// orphanings, finalizers removed and the graph's size; the queues' and
// controllers' statistics go to the metrics providers of Options.
package garbagecollector
