package informer

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kloop.dev/kloop/cache"
	"kloop.dev/kloop/reflector"
)

// The informer core works on type-erased objects (Object); these adapters
// give each caller its own T.

// as returns o as a T, or the zero T when o is nil (or not a T, which the
// informer rules out by construction).
func as[T Object](o Object) T {
	t, _ := o.(T)
	return t
}

func convert[T Object](objs []Object) []T {
	out := make([]T, len(objs))
	for i, o := range objs {
		out[i] = as[T](o)
	}
	return out
}

func adaptHandler[T Object](h Handler[T]) func(n notification) {
	return func(n notification) {
		switch n.typ {
		case noteAdd:
			h.OnAdd(as[T](n.obj), n.initial)
		case noteUpdate:
			h.OnUpdate(as[T](n.old), as[T](n.obj))
		case noteDelete:
			h.OnDelete(Deleted[T]{Object: as[T](n.obj), FinalStateUnknown: n.unknown, Key: n.key})
		}
	}
}

func eraseTransform[T Object](fn func(T) (T, error)) func(Object) (Object, error) {
	if fn == nil {
		return nil
	}
	return func(o Object) (Object, error) {
		t, ok := o.(T)
		if !ok {
			return nil, fmt.Errorf("informer: transform: got %T, want %T", o, t)
		}
		out, err := fn(t)
		if err != nil {
			return nil, err
		}
		return out, nil
	}
}

func eraseIndexFunc[T Object](fn cache.IndexFunc[T]) cache.IndexFunc[Object] {
	return func(o Object) ([]string, error) {
		t, ok := o.(T)
		if !ok {
			return nil, fmt.Errorf("informer: index: got %T, want %T", o, t)
		}
		return fn(t)
	}
}

// erasedLW turns a ListerWatcher[T] into a ListerWatcher[Object].
type erasedLW[T Object] struct{ lw reflector.ListerWatcher[T] }

func (e erasedLW[T]) List(ctx context.Context, opts metav1.ListOptions) (*reflector.List[Object], error) {
	l, err := e.lw.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	if l == nil {
		return nil, fmt.Errorf("informer: ListerWatcher returned a nil list")
	}
	items := make([]Object, len(l.Items))
	for i, it := range l.Items {
		items[i] = it
	}
	return &reflector.List[Object]{Items: items, ResourceVersion: l.ResourceVersion, Continue: l.Continue}, nil
}

func (e erasedLW[T]) Watch(ctx context.Context, opts metav1.ListOptions) (reflector.Watch[Object], error) {
	w, err := e.lw.Watch(ctx, opts)
	if err != nil {
		return nil, err
	}
	return erasedWatch[T]{w}, nil
}

type erasedWatch[T Object] struct{ w reflector.Watch[T] }

func (e erasedWatch[T]) Next() (reflector.Event[Object], error) {
	ev, err := e.w.Next()
	out := reflector.Event[Object]{Type: ev.Type, Status: ev.Status}
	if !isNil(ev.Object) {
		out.Object = ev.Object
	}
	return out, err
}

func (e erasedWatch[T]) Stop() { e.w.Stop() }
