package metrics

import "sync"

// readers holds the statistics readers that stages registered under their
// names, for a collector to call at scrape time. A second registration under
// a name replaces the first.
type readers[S any] struct {
	mu sync.Mutex // guards m
	m  map[string]func(*S)
}

func (r *readers[S]) set(name string, read func(*S)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]func(*S){}
	}
	r.m[name] = read
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
