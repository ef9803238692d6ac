package storage_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"kloop.dev/kloop/apiserver/storage"
)

// encode returns an encoder of a tiny JSON object.
func encode(name, value string) storage.EncodeFunc {
	return func(rev int64) (*storage.Object, error) {
		data := fmt.Sprintf(`{"metadata":{"name":%q,"resourceVersion":"%d"},"value":%q}`, name, rev, value)
		return &storage.Object{Name: name, Data: []byte(data)}, nil
	}
}

// Write, then watch from revision 0: every change arrives once, in order,
// as pre-encoded watch frames.
func Example() {
	s, err := storage.New(storage.Options{})
	if err != nil {
		panic(err)
	}
	if _, err := s.Create("widgets", "", "a", encode("a", "1")); err != nil {
		panic(err)
	}
	if _, err := s.Update("widgets", "", "a", func(cur *storage.Object) (storage.EncodeFunc, error) {
		return encode("a", "2"), nil
	}); err != nil {
		panic(err)
	}
	w, err := s.Watch("widgets", storage.WatchOptions{Revision: 0})
	if err != nil {
		panic(err)
	}
	for range 2 {
		ev, err := w.Next(context.Background())
		if err != nil {
			panic(err)
		}
		fmt.Print(string(ev.Frame()))
	}
	l, _ := s.List("widgets", storage.ListOptions{})
	fmt.Println(len(l.Objects), "object at revision", l.Revision)
	// Output:
	// {"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"1"},"value":"1"}}
	// {"type":"MODIFIED","object":{"metadata":{"name":"a","resourceVersion":"2"},"value":"2"}}
	// 1 object at revision 2
}

// A store on a directory: a second store on it, once the first is closed,
// has its objects and its history; watching from a revision of the first
// goes on where it was.
func Example_dir() {
	dir, err := os.MkdirTemp("", "store")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	s, err := storage.New(storage.Options{Dir: dir})
	if err != nil {
		panic(err)
	}
	a, err := s.Create("widgets", "", "a", encode("a", "1"))
	if err != nil {
		panic(err)
	}
	if _, err := s.Create("widgets", "", "b", encode("b", "1")); err != nil {
		panic(err)
	}
	if _, err := storage.New(storage.Options{Dir: dir}); errors.Is(err, storage.ErrInUse) {
		fmt.Println("a second store on the directory: in use")
	}
	if err := s.Close(); err != nil {
		panic(err)
	}

	s, err = storage.New(storage.Options{Dir: dir})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	w, err := s.Watch("widgets", storage.WatchOptions{Revision: a.ResourceVersion})
	if err != nil {
		panic(err)
	}
	ev, err := w.Next(context.Background())
	if err != nil {
		panic(err)
	}
	fmt.Print("after the restart, from ", a.ResourceVersion, ": ", string(ev.Frame()))
	// Output:
	// a second store on the directory: in use
	// after the restart, from 1: {"type":"ADDED","object":{"metadata":{"name":"b","resourceVersion":"2"},"value":"1"}}
}
