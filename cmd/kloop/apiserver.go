package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"kloop.dev/kloop/apiserver"
)

// runAPIServer runs `kloop apiserver`.
func runAPIServer(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("kloop apiserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:0", "address to listen on (port 0: a free port)")
	kubeconfig := fs.String("kubeconfig-out", "", "write a kubeconfig for the server to this path")
	token := fs.String("token", "", "bearer token clients must send (default: random)")
	useTLS := fs.Bool("tls", true, "serve HTTPS with a self-signed certificate; kubectl sends the token only over TLS, so a kubeconfig needs it")
	tokenFile := fs.String("token-auth-file", "", "authenticate the users of this file, in kube-apiserver's --token-auth-file format (token,user,uid,\"group1,group2\"); RBAC says what they may do")
	verbose := fs.Bool("v", false, "log requests errors and lifecycle to stderr")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "kloop apiserver: unexpected arguments %q\n", fs.Args())
		fs.Usage()
		return errUsage
	}
	if *kubeconfig != "" && !*useTLS {
		fmt.Fprintln(stderr, "kloop apiserver: --kubeconfig-out needs --tls (kubectl sends bearer tokens only over TLS)")
		return errUsage
	}
	opts := apiserver.Options{Addr: *addr, Token: *token, TLS: *useTLS}
	if *tokenFile != "" {
		users, err := apiserver.ReadTokenFile(*tokenFile)
		if err != nil {
			return err
		}
		opts.Users = users
	}
	if *verbose {
		opts.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	}
	srv, err := apiserver.New(opts)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	select {
	case err := <-done:
		return err
	case <-srv.Ready():
	}
	fmt.Fprintf(stdout, "kloop apiserver listening on %s\n", srv.URL())
	if *kubeconfig != "" {
		if err := srv.WriteKubeconfig(*kubeconfig); err != nil {
			cancel()
			<-done
			return err
		}
		fmt.Fprintf(stdout, "kubeconfig written to %s; try: kubectl --kubeconfig %s get namespaces\n", *kubeconfig, *kubeconfig)
	} else {
		fmt.Fprintf(stdout, "token: %s\n", srv.Token())
	}
	err = <-done
	fmt.Fprintln(stdout, "kloop apiserver stopped")
	return err
}
