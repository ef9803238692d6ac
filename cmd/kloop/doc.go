// Command kloop is kloop's command-line tool. Each subcommand is one entry
// of the table in main.go:
//
//	kloop apiserver [--addr 127.0.0.1:0] [--kubeconfig-out PATH] [--token T] [--tls=true]
//
// runs the embedded API server until SIGINT or SIGTERM, printing where it
// listens and writing a kubeconfig kubectl uses as is.
package main
