package leaderelection_test

import (
	"context"
	"fmt"
	"time"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/leaderelection"
)

// Two replicas elect a leader on the embedded API server; when the leader is
// stopped it releases the lease and the other one takes over at once.
func Example() {
	srv, err := apiservertest.New(apiservertest.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	// Short durations for the example; the defaults are 15 s, 10 s and 2 s.
	opts := func(id string) leaderelection.Options {
		return leaderelection.Options{Namespace: "default", Name: "widget-controller", Identity: id,
			LeaseDuration: time.Second, RenewDeadline: 500 * time.Millisecond, RetryPeriod: 100 * time.Millisecond}
	}
	type replica struct {
		e       *leaderelection.Elector
		cancel  context.CancelFunc
		leading chan struct{}
		done    chan error
	}
	run := func(id string) *replica {
		e, err := leaderelection.New(srv.RESTConfig(), opts(id))
		if err != nil {
			panic(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		r := &replica{e: e, cancel: cancel, leading: make(chan struct{}), done: make(chan error, 1)}
		go func() {
			r.done <- e.Run(ctx, func(ctx context.Context) {
				close(r.leading)
				<-ctx.Done() // the controllers would run here
				fmt.Println(id, "stopped leading")
			})
		}()
		return r
	}

	a := run("replica-a")
	<-a.leading
	fmt.Println("replica-a started leading")
	b := run("replica-b")
	for b.e.Leader() == "" { // wait until b has read the lease
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Println("replica-b is leader:", b.e.IsLeader(), "and sees", b.e.Leader())

	a.cancel()
	fmt.Println("replica-a Run:", <-a.done)
	<-b.leading
	fmt.Println("replica-b started leading; is leader:", b.e.IsLeader())
	b.cancel()
	fmt.Println("replica-b Run:", <-b.done)
	// Output:
	// replica-a started leading
	// replica-b is leader: false and sees replica-a
	// replica-a stopped leading
	// replica-a Run: <nil>
	// replica-b started leading; is leader: true
	// replica-b stopped leading
	// replica-b Run: <nil>
}
