package manager_test

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/manager"
)

// A manager with leader election and a health probe server, on the
// embedded API server: the single replica leads, its leader-only runnable
// runs, and /readyz reports the informers.
func Example() {
	srv, err := apiservertest.New(apiservertest.Options{})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	mgr, err := manager.New(srv.RESTConfig(), manager.Options{
		LeaderElection:          true,
		LeaderElectionID:        "example-controller",
		LeaderElectionNamespace: "default",
		HealthProbeBindAddress:  "127.0.0.1:0", // a free port; production: ":8081"
	})
	if err != nil {
		panic(err)
	}
	leading := make(chan struct{})
	// A Runnable needs leadership unless it says otherwise: this one runs
	// only on the leader.
	err = mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		close(leading)
		<-ctx.Done() // leadership ended or the manager stops
		return nil
	}))
	if err != nil {
		panic(err)
	}
	mctx, stop := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- mgr.Start(mctx) }()

	<-mgr.Elected()
	<-leading
	fmt.Println("leading; leader-only runnable started")
	for _, path := range []string{"/healthz", "/readyz?verbose"} {
		resp, err := http.Get("http://" + mgr.HealthProbeAddr().String() + path)
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("%s %d\n%s\n", path, resp.StatusCode, body)
	}

	stop() // on SIGTERM: stops the runnables, then releases the Lease
	fmt.Println("manager stopped:", <-stopped)
	cancel()
	fmt.Println("server stopped:", srv.Close())
	// Output:
	// leading; leader-only runnable started
	// /healthz 200
	// ok
	// /readyz?verbose 200
	// [+]informers ok
	// readyz check passed
	//
	// manager stopped: <nil>
	// server stopped: <nil>
}
