// Command demo runs a small Widget operator on kloop's embedded API server,
// with no cluster: a CustomResourceDefinition, a manager, a controller built
// with For/Owns, a finalizer, a status written only when it changes, then a
// scripted session that shows the rules of the seeds at work (ten quick edits
// → one reconcile, an owned object deleted → recreated, a deletion held by a
// finalizer), the Kubernetes Events the controller recorded, and the
// Prometheus metrics at the end.
//
//	go run ./examples/demo            # the scripted session, about two seconds
//	go run ./examples/demo -serve     # then keep serving: use kubectl with the printed kubeconfig
package main
