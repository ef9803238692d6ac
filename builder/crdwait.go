package builder

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kloop.dev/kloop/handler"
	"kloop.dev/kloop/informer"
)

// droppable is a kind source whose informer the factory may drop
// (informer.Source's Dropped).
type droppable interface {
	kindSource
	Dropped() <-chan struct{}
}

// followState is where a followSource is.
type followState uint8

const (
	// resolving: started, first look for the kind not answered yet.
	resolving followState = iota
	// waiting: the kind is not served; polling discovery.
	waiting
	// running: the kind's informer source runs.
	running
)

// followSource is a For, Owns or Watches of a kind that follows the kind's
// CRD: while the kind is not served it waits for it (polling discovery,
// informer.Factory.WaitForKind), then makes the kind's informer source and
// runs it; when the factory drops that informer (the CRD was deleted) it
// stops it and waits again. While it waits it counts as synced — it has no
// objects to deliver — so that the controller's workers start for its
// other sources; the controller's readiness check reports the wait.
type followSource struct {
	name  string                    // "For Widget.example.com", for logs
	kinds []schema.GroupVersionKind // waited for, in order (Owns: the For kind, then its own)
	f     *informer.Factory
	log   *slog.Logger
	// failOnDrop: the builder's FailOnMissingKind; a dropped informer then
	// fails the source instead of waiting.
	failOnDrop bool
	// build makes the kind's source once every kind is served, from their
	// mappings (in kinds' order).
	build func(mappings []*meta.RESTMapping) (droppable, error)

	started atomic.Bool

	mu    sync.Mutex // guards state, cur and why
	state followState
	// cur is the running source (set at Build for a kind served then);
	// nil while resolving or waiting.
	cur droppable
	// why is the wait's readiness message (waiting only).
	why string
}

// Start runs the source until ctx is cancelled: the source made at Build,
// or the one made once the kind is served; again after each drop.
func (s *followSource) Start(ctx context.Context, q, low handler.Enqueuer) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("builder: source started twice")
	}
	s.mu.Lock()
	cur := s.cur
	if cur != nil {
		s.state = running
	}
	s.mu.Unlock()
	for {
		if cur == nil {
			mappings, err := s.waitForKinds(ctx)
			if err != nil {
				return nil // ctx ended
			}
			if cur, err = s.build(mappings); err != nil {
				if meta.IsNoMatchError(err) {
					continue // gone again meanwhile
				}
				return err
			}
			s.mu.Lock()
			s.state, s.cur, s.why = running, cur, ""
			s.mu.Unlock()
		}
		srcCtx, cancel := context.WithCancel(ctx)
		errc := make(chan error, 1)
		go func() { errc <- cur.Start(srcCtx, q, low) }()
		select {
		case err := <-errc:
			cancel()
			return err
		case <-cur.Dropped():
		}
		cancel()
		if err := <-errc; err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
		if s.failOnDrop {
			return fmt.Errorf("builder: %s: the kind is no longer served (its CRD was deleted) and the controller has FailOnMissingKind", s.name)
		}
		s.log.Info("kind no longer served (its CRD was deleted): its informer stopped; waiting for it to be served again", "source", s.name)
		s.mu.Lock()
		s.state, s.cur = resolving, nil
		s.mu.Unlock()
		cur = nil
	}
}

// waitForKinds waits until every kind is served and returns their
// mappings; it logs once, at Info, that it waits, and once that the kind
// is served.
func (s *followSource) waitForKinds(ctx context.Context) ([]*meta.RESTMapping, error) {
	mappings := make([]*meta.RESTMapping, len(s.kinds))
	logged := false
	for i, gvk := range s.kinds {
		m, err := s.f.WaitForKind(ctx, gvk, func(err error) {
			why := waitMessage(gvk, err)
			s.mu.Lock()
			s.state, s.why = waiting, why
			s.mu.Unlock()
			if !logged {
				logged = true
				s.log.Info(why, "source", s.name, "kind", kindName(gvk), "err", err)
			}
		})
		if err != nil {
			return nil, err
		}
		mappings[i] = m
	}
	if logged {
		s.log.Info("kind served: starting its informer", "source", s.name)
	}
	return mappings, nil
}

// waitMessage is what the readiness check says of a wait for gvk.
func waitMessage(gvk schema.GroupVersionKind, err error) string {
	if meta.IsNoMatchError(err) {
		return fmt.Sprintf("waiting for kind %s to be served (its CRD does not exist)", kindName(gvk))
	}
	return fmt.Sprintf("waiting for kind %s to be served: %v", kindName(gvk), err)
}

// kindName spells gvk as Kind.group/version ("Widget.example.com/v1",
// "Pod/v1" for the core group).
func kindName(gvk schema.GroupVersionKind) string {
	if gvk.Group == "" {
		return gvk.Kind + "/" + gvk.Version
	}
	return gvk.Kind + "." + gvk.Group + "/" + gvk.Version
}

// Waiting returns the readiness message of a wait for the kind, "" when
// the source does not wait.
func (s *followSource) Waiting() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == waiting {
		return s.why
	}
	return ""
}

// HasSynced is the running source's; true while waiting (nothing to
// deliver); false before Start and while resolving.
func (s *followSource) HasSynced() bool {
	s.mu.Lock()
	st, cur := s.state, s.cur
	s.mu.Unlock()
	switch {
	case !s.started.Load():
		return false
	case st == waiting:
		return true
	case st == running:
		return cur.HasSynced()
	}
	return false
}

// Started reports whether Start was called.
func (s *followSource) Started() bool { return s.started.Load() }

// Pending is the running source's (0 otherwise).
func (s *followSource) Pending() int {
	s.mu.Lock()
	cur := s.cur
	s.mu.Unlock()
	if cur == nil {
		return 0
	}
	return cur.Pending()
}

func (s *followSource) String() string { return "kind source " + s.name }
