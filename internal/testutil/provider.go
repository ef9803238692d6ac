package testutil

import (
	"fmt"
	"slices"
	"sync"
)

// Provider is the recording test double of the pull-style metrics providers
// of kloop's stages (workqueue.MetricsProvider with S = workqueue.Stats,
// controller.MetricsProvider with controller.Stats,
// leaderelection.MetricsProvider with leaderelection.Status): it keeps the
// reader each stage registers under its name, and reads it on demand. As
// kloop.dev/kloop/metrics does, it refuses a name it already has, and
// Unregister takes a name back. The zero value is ready to use; it is safe
// for concurrent use.
type Provider[S any] struct {
	mu      sync.Mutex // guards readers
	readers map[string]func(*S)
}

// Register keeps read under name; a name registered before is an error.
func (p *Provider[S]) Register(name string, read func(*S)) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.readers[name]; ok {
		return fmt.Errorf("testutil: %q is already registered", name)
	}
	if p.readers == nil {
		p.readers = map[string]func(*S){}
	}
	p.readers[name] = read
	return nil
}

// Unregister forgets name's reader.
func (p *Provider[S]) Unregister(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.readers, name)
}

// Names returns the registered names, sorted.
func (p *Provider[S]) Names() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	names := make([]string, 0, len(p.readers))
	for n := range p.readers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Read returns the statistics of name, read now; ok is false if nothing is
// registered under it.
func (p *Provider[S]) Read(name string) (s S, ok bool) {
	p.mu.Lock()
	read := p.readers[name]
	p.mu.Unlock()
	if read == nil {
		return s, false
	}
	read(&s)
	return s, true
}

// Only returns the statistics of the one registered reader, read now. It
// panics unless exactly one is registered: a test that calls it has set the
// provider on one stage.
func (p *Provider[S]) Only() S {
	p.mu.Lock()
	if len(p.readers) != 1 {
		n := len(p.readers)
		p.mu.Unlock()
		panic(fmt.Sprintf("testutil: Provider.Only with %d readers registered", n))
	}
	var read func(*S)
	for _, r := range p.readers {
		read = r
	}
	p.mu.Unlock()
	var s S
	read(&s)
	return s
}
