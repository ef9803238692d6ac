package fifo_test

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kloop.dev/kloop/cache"
	"kloop.dev/kloop/fifo"
)

type meta = *metav1.PartialObjectMetadata

func object(ns, name, rv string) meta {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv}}
}

// The pipeline in miniature: a producer pushes deltas, a consumer pops them,
// applies them to a cache.Indexer (which is the FIFO's KnownObjects), and
// only then "notifies" (prints).
func Example() {
	ctx := context.Background()
	store, err := cache.New(cache.Options[meta]{})
	if err != nil {
		panic(err)
	}
	q, err := fifo.New(fifo.Options[meta]{KnownObjects: store})
	if err != nil {
		panic(err)
	}

	// The reflector's side: a list, then watch events.
	_ = q.Replace([]meta{object("shop", "web", "10"), object("shop", "db", "10")}, "10")
	_ = q.Update(object("shop", "web", "11"))
	_ = q.Bookmark("12")

	consume := func(batch []fifo.Delta[meta]) error {
		for _, d := range batch {
			switch d.Type {
			case fifo.Added, fifo.Updated, fifo.Replaced, fifo.Sync:
				if err := store.Update(d.Object); err != nil {
					return err
				}
			case fifo.Deleted:
				if err := store.DeleteByKey(d.Key); err != nil {
					return err
				}
			}
		}
		// The cache is updated for the whole batch: now notify.
		for i, d := range batch {
			fmt.Printf("%d/%d %s %q rv=%q", i+1, len(batch), d.Type, d.Key, d.ResourceVersion)
			if d.FinalStateUnknown {
				fmt.Printf(" finalStateUnknown, last seen at %s", d.Object.GetResourceVersion())
			}
			fmt.Println()
		}
		return nil
	}
	for q.Len() > 0 {
		if err := q.Pop(ctx, consume); err != nil {
			panic(err)
		}
	}
	fmt.Println("synced:", q.HasSynced(), "cached:", store.Len())

	// The watch was down and "shop/db" was deleted meanwhile: the relist
	// queues its deletion, with the last known object, in the same batch.
	_ = q.Replace([]meta{object("shop", "web", "20")}, "20")
	if err := q.Pop(ctx, consume); err != nil {
		panic(err)
	}
	fmt.Println("cached:", store.ListKeys())
	// Output:
	// 1/2 Replaced "shop/web" rv="10"
	// 2/2 Replaced "shop/db" rv="10"
	// 1/1 Updated "shop/web" rv=""
	// 1/1 Bookmark "" rv="12"
	// synced: true cached: 2
	// 1/2 Replaced "shop/web" rv="20"
	// 2/2 Deleted "shop/db" rv="20" finalStateUnknown, last seen at 10
	// cached: [shop/web]
}
