package workqueue_test

import (
	"errors"
	"fmt"
	"sync"

	"kloop.dev/kloop/workqueue"
)

// A producer adds keys, some of them several times; two workers process each
// key once, retrying a failing one with backoff.
func Example() {
	q, err := workqueue.New(workqueue.Options[string]{Name: "example"})
	if err != nil {
		panic(err)
	}
	for _, k := range []string{"default/a", "default/b", "default/a", "default/c", "default/a"} {
		q.Add(k)
	}
	fmt.Println("ready:", q.Len())

	var mu sync.Mutex
	attempts := map[string]int{}
	process := func(key string) error {
		mu.Lock()
		defer mu.Unlock()
		attempts[key]++
		if key == "default/b" && attempts[key] < 3 {
			return errors.New("not yet")
		}
		return nil
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for {
				key, shutdown := q.Get()
				if shutdown {
					return
				}
				if err := process(key); err != nil {
					q.AddRateLimited(key)
				} else {
					q.Forget(key)
					mu.Lock()
					if len(attempts) == 3 && attempts["default/b"] == 3 {
						q.ShutDown()
					}
					mu.Unlock()
				}
				q.Done(key)
			}
		})
	}
	wg.Wait()
	fmt.Println("attempts:", attempts)
	// Output:
	// ready: 3
	// attempts: map[default/a:1 default/b:3 default/c:1]
}
