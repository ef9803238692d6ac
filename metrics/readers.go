package metrics

import (
	"fmt"
	"sync"
)

// readers holds the statistics readers that stages registered under their
// names, for a collector to call at scrape time. A name is registered once:
// a second registration under it is refused, so that two stages never report
// under one label and a stage made by mistake never takes over the series of
// the one that has the name.
type readers[S any] struct {
	mu sync.Mutex // guards m
	m  map[string]func(*S)
}

// add registers read under name; what names the stage in the error.
func (r *readers[S]) add(what, name string, read func(*S)) error {
	if read == nil {
		return fmt.Errorf("metrics: %s %q registered without a reader", what, name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, taken := r.m[name]; taken {
		return fmt.Errorf("metrics: a %s named %q is already registered on this registry: names must be unique", what, name)
	}
	if r.m == nil {
		r.m = map[string]func(*S){}
	}
	r.m[name] = read
	return nil
}

// remove unregisters name, if registered.
func (r *readers[S]) remove(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, name)
}

// each reads every registered stage, outside the lock, into a fresh S.
func (r *readers[S]) each(fn func(name string, s *S)) {
	r.mu.Lock()
	snapshot := make(map[string]func(*S), len(r.m))
	for k, v := range r.m {
		snapshot[k] = v
	}
	r.mu.Unlock()
	for name, read := range snapshot {
		var s S
		read(&s)
		fn(name, &s)
	}
}
