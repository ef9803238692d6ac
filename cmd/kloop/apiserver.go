package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"kloop.dev/kloop/apiserver"
	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/apiserver/storage"
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
	dataDir := fs.String("data-dir", "", "keep the objects, the resourceVersion counter, the watch history, the token, the ServiceAccount signing key and the serving certificate in this directory across restarts (every write is on disk before it is acknowledged); default: in memory only")
	faultAPI := fs.String("fault-api", "", "serve the fault-injection API (apiservertest.Faults as JSON over HTTP, for tests not written in Go) on this loopback `address`, such as 127.0.0.1:0; requests need the server's token")
	verbose := fs.Bool("v", false, "log every request (verb, URI, user, code, latency, user agent, as kube-apiserver's httplog), request errors and lifecycle to stderr")
	var crds stringList
	fs.Var(&crds, "crds", "create the CustomResourceDefinitions of this file or directory (YAML or JSON, as envtest's CRDDirectoryPaths) before serving; repeatable")
	var opts apiserver.Options
	limitFlags(fs, &opts)
	controllerFlags(fs, &opts)
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
	if *faultAPI != "" {
		if err := checkLoopback(*faultAPI); err != nil {
			fmt.Fprintf(stderr, "kloop apiserver: --fault-api: %v\n", err)
			return errUsage
		}
	}
	if *kubeconfig != "" && !*useTLS {
		fmt.Fprintln(stderr, "kloop apiserver: --kubeconfig-out needs --tls (kubectl sends bearer tokens only over TLS)")
		return errUsage
	}
	opts.Addr, opts.Token, opts.TLS, opts.DataDir = *addr, *token, *useTLS, *dataDir
	if *tokenFile != "" {
		users, err := apiserver.ReadTokenFile(*tokenFile)
		if err != nil {
			return err
		}
		opts.Users = users
	}
	if *verbose {
		opts.Logger = slog.New(slog.NewTextHandler(stderr, nil))
		opts.LogRequests = true
	}
	opts.CRDPaths = crds
	srv, err := apiserver.New(opts)
	if err != nil {
		return err
	}
	defer srv.Close() // Serve closes it; this is for a Start that fails to listen
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if *faultAPI != "" {
		stop, err := serveFaultAPI(srv, *faultAPI, stdout)
		if err != nil {
			return err
		}
		defer stop()
	}
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	select {
	case err := <-done:
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("%w: another server listens on %s (give another --addr, or 127.0.0.1:0 for any free port)", err, *addr)
		}
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

// controllerFlags binds the flags of the server's controllers to opts
// (kube-apiserver's name for the collector's).
func controllerFlags(fs *flag.FlagSet, opts *apiserver.Options) {
	fs.BoolVar(&opts.DisableControllers, "disable-controllers", false,
		"run none of what kube-controller-manager runs beside kube-apiserver (every namespace's default ServiceAccount and kube-root-ca.crt, garbage collection)")
	fs.BoolFunc("enable-garbage-collector", "follow ownerReferences as kube-controller-manager's garbage collector (default true); false: deletions take no orphan or foregroundDeletion finalizer and dependents stay",
		func(v string) error {
			on, err := strconv.ParseBool(v)
			opts.GarbageCollector.Disabled = !on
			return err
		})
}

// checkLoopback refuses an address that is not on a loopback interface:
// the fault API changes what the server answers, and is for the tests of
// the machine it runs on.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%s is not a loopback address (127.0.0.1:PORT, [::1]:PORT or localhost:PORT): the fault API is for the tests of this machine only", addr)
	}
	return nil
}

// serveFaultAPI serves the fault API of srv on addr (a loopback address)
// until stop is called.
func serveFaultAPI(srv *apiserver.Server, addr string, stdout io.Writer) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("fault API: listen: %w", err)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
		ln.Close()
		return nil, fmt.Errorf("fault API: %s listens on %s, which is not a loopback address", addr, ln.Addr())
	}
	hs := &http.Server{Handler: apiservertest.NewFaults(srv).Handler(srv.Token()), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = hs.Serve(ln)
	}()
	fmt.Fprintf(stdout, "fault API listening on http://%s\n", ln.Addr())
	return func() {
		_ = hs.Close()
		<-served
	}, nil
}

// limitFlags binds the flags of the server's limits to opts. Their defaults
// are the Options' (apiserver/options.go); kube-apiserver's flag names
// where it has the limit.
func limitFlags(fs *flag.FlagSet, opts *apiserver.Options) {
	fs.DurationVar(&opts.RequestTimeout, "request-timeout", 60*time.Second,
		"how long a request that is not a watch (or a pod's log, exec, attach, portforward) may take to send its body and read its response; past it: 504, or the connection is closed")
	fs.DurationVar(&opts.ReadHeaderTimeout, "read-header-timeout", 10*time.Second,
		"how long a client may take to complete its TLS handshake and send a request's headers")
	fs.DurationVar(&opts.IdleTimeout, "idle-timeout", 90*time.Second,
		"how long a keep-alive connection may stay idle")
	fs.IntVar(&opts.MaxConnections, "max-connections", 0,
		"bound on the connections open at once; past it the longest idle one is closed, or the new one refused (0: 4096, or half the open-file limit when lower)")
	fs.IntVar(&opts.MaxRequestsInFlight, "max-requests-inflight", 400,
		"bound on the read-only requests (but watches) served at once; past it: 429 with Retry-After: 1")
	fs.IntVar(&opts.MaxMutatingRequestsInFlight, "max-mutating-requests-inflight", 200,
		"bound on the mutating requests served at once; past it: 429 with Retry-After: 1")
	fs.IntVar(&opts.MaxWatches, "max-watches", 4096,
		"bound on the watches (and pods' log, exec, attach, portforward) served at once; past it: 429 with Retry-After: 1")
	fs.IntVar(&opts.HistoryEvents, "history-events", 10_000,
		"bound on the watch history of each resource, in events")
	fs.DurationVar(&opts.HistoryAge, "history-age", 5*time.Minute,
		"bound on the age of the watch history")
	opts.HistoryBytes = storage.DefaultHistoryBytes
	fs.Var(bytesFlag{&opts.HistoryBytes}, "history-bytes",
		"bound on the memory of the watch history of all resources together, in `bytes` (a number or a quantity: 64Mi, 1Gi); past it the oldest events go, and watches and lists from before them get 410")
}

// bytesFlag is a flag for a number of bytes, given as a number or a
// Kubernetes quantity (128Mi, 1G).
type bytesFlag struct{ p *int64 }

func (f bytesFlag) String() string {
	if f.p == nil {
		return "0"
	}
	return resource.NewQuantity(*f.p, resource.BinarySI).String()
}

func (f bytesFlag) Set(s string) error {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return err
	}
	n, ok := q.AsInt64()
	if !ok {
		return fmt.Errorf("%s is not a whole number of bytes", s)
	}
	*f.p = n
	return nil
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(s string) error {
	*l = append(*l, s)
	return nil
}
