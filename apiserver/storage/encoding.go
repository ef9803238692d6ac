package storage

import "sync"

// encoding is one of an event's encodings other than its JSON frame, made
// once (Event.Encoded).
type encoding struct {
	key  any
	once sync.Once
	b    []byte
	err  error
}

// Encoded returns encode(e), made once per event and key and shared by
// every caller, as [Event.Frame] is for the JSON watch stream: the HTTP
// layer keeps there the event's frame in another format (protobuf) or
// form (metadata only), so that a watch fan-out encodes an event once,
// not once per watcher. Callers that ask for a key while its encoding is
// being made wait for it. key must be comparable; an error is kept as the
// result too. Do not modify the bytes returned.
//
// An encoding of an event of the history counts in the history's cost
// (Store.HistoryBytes) from the moment it is made until the event is
// evicted, which may make this call evict the store's oldest events.
func (e *Event) Encoded(key any, encode func(*Event) ([]byte, error)) ([]byte, error) {
	e.encodingMu.Lock()
	var x *encoding
	for _, c := range e.encodings {
		if c.key == key {
			x = c
			break
		}
	}
	if x == nil {
		x = &encoding{key: key}
		e.encodings = append(e.encodings, x)
	}
	e.encodingMu.Unlock()
	charged := false
	x.once.Do(func() {
		x.b, x.err = encode(e)
		if e.store == nil || len(x.b) == 0 {
			return
		}
		e.encodingMu.Lock()
		if e.state.Load() != evicted {
			n := int64(len(x.b))
			e.encodingCost += n
			e.store.historyBytes.Add(n)
			charged = true
		}
		e.encodingMu.Unlock()
	})
	if charged {
		e.store.trim()
	}
	return x.b, x.err
}

// unencode returns what e's encodings cost the history, which no longer
// holds e (its state is evicted: see unframe); from then on an encoding
// costs the history nothing.
func (e *Event) unencode() int64 {
	e.encodingMu.Lock()
	defer e.encodingMu.Unlock()
	n := e.encodingCost
	e.encodingCost = 0
	return n
}
