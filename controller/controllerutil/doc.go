// Package controllerutil holds the helpers for the writes a reconcile makes,
// under the names controller-runtime users look for (controllerutil.AddFinalizer,
// controllerutil.CreateOrUpdate, …), with kloop's semantics:
//
//   - AddFinalizer / RemoveFinalizer / ContainsFinalizer: names must be
//     domain-qualified, example.com/cleanup (ValidateFinalizerName);
//     AddFinalizer refuses an object being deleted, wrapping ErrBeingDeleted.
//   - SetControllerReference / SetOwnerReference / RemoveOwnerReference /
//     HasControllerReference: same namespace, at most one controller
//     (*AlreadyOwnedError).
//   - UpdateStatus writes the status only when it changed, so that your own
//     status write does not start a hot loop.
//   - CreateOrUpdate writes only when the object changed; CreateOrPatch does
//     the same with merge patches of only what changed, the status included.
//   - Name gives deterministic names: a second create of the same object is
//     AlreadyExists, never a duplicate; treat it with
//     client.IgnoreAlreadyExists.
//
// The helpers take the small interfaces they use (StatusUpdater,
// ObjectWriter, ObjectPatcher, StatusPatcher), which *client.Client and
// (*client.Client).Status() implement. The package builds on
// kloop.dev/kloop/client; package controller does not import it, so that a
// controller (and a raw loop's metrics) does not link the client, the
// informer and the reflector.
package controllerutil
