// Command demo is the README's first command: the Widget operator's live
// demo on kloop's embedded API server, with no setup.
//
//	go run ./examples/demo [--widgets 100] [--cloud-failure-rate 0.05] [--workers 8] [--serve] [--kubeconfig PATH] [--timeout 3m]
//
// It is a launcher that needs nothing but the standard library, so that it
// starts at once and says that it is building: the demo itself
// (kloop.dev/kloop/examples/widget/cmd/demo, package
// kloop.dev/kloop/examples/widget/demo) links the Kubernetes libraries,
// whose first build on a cold machine takes minutes. It builds the demo
// with the go command that is on PATH and runs it with the same arguments,
// the same terminal and the same exit code.
package main
