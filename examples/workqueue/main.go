package main

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"kloop.dev/kloop/workqueue"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "workqueue demo:", err)
		os.Exit(1)
	}
}

func run() error {
	q, err := workqueue.New(workqueue.Options[string]{Name: "demo"})
	if err != nil {
		return err
	}
	start := time.Now()
	since := func() string { return fmt.Sprintf("%7.1fms", float64(time.Since(start).Microseconds())/1000) }

	// The initial list arrives at low priority; a fresh event overtakes it.
	for _, k := range []string{"default/list-1", "default/list-2", "default/list-3"} {
		q.AddWithOptions(k, workqueue.AddOptions{Priority: -100})
	}
	// Ten quick edits to one object: one key in the queue.
	for range 10 {
		q.Add("default/web")
	}
	q.Add("default/flaky")
	fmt.Printf("%s  queued: %d keys for 14 adds\n", since(), q.Len())

	var mu sync.Mutex // guards reconciles
	reconciles := map[string]int{}
	reconcile := func(key string) (requeueAfter time.Duration, err error) {
		mu.Lock()
		reconciles[key]++
		n := reconciles[key]
		mu.Unlock()
		switch {
		case key == "default/flaky" && n < 4:
			return 0, errors.New("external API not ready")
		case key == "default/web" && n == 1:
			return 50 * time.Millisecond, nil // poll again later
		}
		return 0, nil
	}

	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			key, shutdown := q.Get()
			if shutdown {
				return
			}
			after, err := reconcile(key)
			switch {
			case err != nil:
				fmt.Printf("%s  %-16s error %q, retry #%d with backoff\n", since(), key, err, q.NumRequeues(key)+1)
				q.AddRateLimited(key)
			case after > 0:
				fmt.Printf("%s  %-16s ok, requeue after %v\n", since(), key, after)
				q.Forget(key)
				q.AddAfter(key, after)
			default:
				fmt.Printf("%s  %-16s ok\n", since(), key)
				q.Forget(key)
			}
			q.Done(key)
			mu.Lock()
			if len(reconciles) == 5 && reconciles["default/flaky"] == 4 && reconciles["default/web"] == 2 {
				select {
				case <-done:
				default:
					close(done)
				}
			}
			mu.Unlock()
		}
	})
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		q.ShutDown()
		wg.Wait()
		return errors.New("timed out")
	}
	q.ShutDownWithDrain()
	wg.Wait()
	fmt.Printf("%s  reconciles: %v\n", since(), reconciles)
	return nil
}
