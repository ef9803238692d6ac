package workqueue

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"kloop.dev/kloop/reconcile/trigger"
)

// model is a slow, obviously correct reference of the queue's semantics:
// linear scans over a map instead of rings, heap and index.
type model struct {
	now  time.Duration
	seq  int64
	keys map[string]*mkey
	fail map[string]int // FastSlow failures
}

type mkey struct {
	ready, waiting, held, dirty bool
	prio                        int
	readySeq, hseq              int64
	at                          time.Duration
}

func (m *model) key(k string) *mkey {
	if m.keys[k] == nil {
		m.keys[k] = &mkey{}
	}
	return m.keys[k]
}

func (m *model) next() int64 { m.seq++; return m.seq }

func (m *model) gc(k string) {
	if s := m.keys[k]; s != nil && !s.ready && !s.waiting && !s.held {
		delete(m.keys, k)
	}
}

func (m *model) add(k string, prio int) {
	s := m.key(k)
	switch {
	case s.ready:
		if prio > s.prio {
			s.prio, s.readySeq = prio, m.next()
		}
		return
	case s.dirty:
		s.prio = max(s.prio, prio)
		return
	case s.waiting:
		s.waiting = false
		s.prio = max(s.prio, prio)
	default:
		s.prio = prio
	}
	if s.held {
		s.dirty = true
	} else {
		s.ready, s.readySeq = true, m.next()
	}
}

func (m *model) addAfter(k string, prio int, d time.Duration) {
	if d <= 0 {
		m.add(k, prio)
		return
	}
	s := m.key(k)
	at := m.now + d
	switch {
	case s.ready || s.dirty:
		if prio > s.prio {
			s.prio = prio
			if s.ready {
				s.readySeq = m.next()
			}
		}
	case s.waiting:
		s.prio = max(s.prio, prio)
		if at < s.at { // moved earlier: it queues behind keys already due then
			s.at, s.hseq = at, m.next()
		}
	default:
		s.prio, s.waiting, s.at, s.hseq = prio, true, at, m.next()
	}
}

func (m *model) advance(d time.Duration) {
	m.now += d
	var due []string
	for k, s := range m.keys {
		if s.waiting && s.at <= m.now {
			due = append(due, k)
		}
	}
	sort.Slice(due, func(i, j int) bool {
		a, b := m.keys[due[i]], m.keys[due[j]]
		if a.at != b.at {
			return a.at < b.at
		}
		return a.hseq < b.hseq
	})
	for _, k := range due {
		s := m.keys[k]
		s.waiting = false
		if s.held {
			s.dirty = true
		} else {
			s.ready, s.readySeq = true, m.next()
		}
	}
}

func (m *model) get() (string, bool) {
	best := ""
	for k, s := range m.keys {
		if !s.ready {
			continue
		}
		if b := m.keys[best]; best == "" || s.prio > b.prio || (s.prio == b.prio && s.readySeq < b.readySeq) {
			best = k
		}
	}
	if best == "" {
		return "", false
	}
	s := m.keys[best]
	s.ready, s.held = false, true
	return best, true
}

func (m *model) done(k string) {
	s := m.keys[k]
	if s == nil || !s.held {
		return
	}
	s.held = false
	if s.dirty {
		s.dirty = false
		s.ready, s.readySeq = true, m.next()
	}
	m.gc(k)
}

func (m *model) ready() int {
	n := 0
	for _, s := range m.keys {
		if s.ready {
			n++
		}
	}
	return n
}

func (m *model) held() []string {
	var h []string
	for k, s := range m.keys {
		if s.held {
			h = append(h, k)
		}
	}
	sort.Strings(h)
	return h
}

// batchKeys returns k and, drawn from b, up to four keys after it (a key may
// repeat: a batch may hold a key twice).
func batchKeys(k string, b int) []string {
	var i int
	fmt.Sscanf(k, "k%d", &i)
	keys := []string{k}
	for j := range b % 5 {
		keys = append(keys, fmt.Sprintf("k%d", (i+j*(1+b/5))%6))
	}
	return keys
}

// FuzzQueue drives random operation sequences through the queue and the
// model, and checks after every step that they agree: the same key handed
// out, the same number ready. Agreement implies the properties: no key held
// by two workers, none lost, none handed out twice without a re-add.
func FuzzQueue(f *testing.F) {
	f.Add([]byte{0, 1, 3, 0, 0, 1, 3, 4, 0})
	f.Add([]byte{1, 2, 3, 1, 6, 2, 3, 0, 4, 0, 7, 0, 3, 0})
	f.Add([]byte{2, 1, 2, 1, 6, 3, 3, 0, 4, 0, 5, 1, 2, 1, 6, 3, 3, 0})
	f.Add([]byte{0, 1, 0, 0, 2, 1, 0, 3, 1, 3, 3, 0, 0, 1, 2, 3, 0, 3, 0, 4, 0, 4, 1})
	f.Add([]byte{0, 1, 200, 4, 3, 0, 0, 2, 129, 7, 3, 0, 1, 3, 130, 9, 2, 6, 0, 3, 3, 0, 4, 1, 1})
	f.Fuzz(func(t *testing.T, prog []byte) {
		clock := newFakeClock()
		limiter, err := NewFastSlow[string](FastSlowOptions{Fast: 10 * time.Millisecond, Slow: 30 * time.Millisecond, MaxFast: 2})
		if err != nil {
			t.Fatal(err)
		}
		q, err := New(Options[string]{Clock: clock, RateLimiter: limiter, Triggers: true})
		if err != nil {
			t.Fatal(err)
		}
		defer q.ShutDown()
		m := &model{keys: map[string]*mkey{}, fail: map[string]int{}}
		// adds counts each key's adds since it was last handed out: its
		// trigger record's Total at the next hand-out.
		adds := map[string]int{}
		var rec trigger.Record
		checkRecord := func(k string) {
			if rec.Total() != adds[k] {
				t.Fatalf("%s handed out with %d triggers, %d adds since its last hand-out", k, rec.Total(), adds[k])
			}
			adds[k] = 0
		}
		pos := 0
		next := func() int {
			if pos >= len(prog) {
				return 0
			}
			pos++
			return int(prog[pos-1])
		}
		var trace []string
		check := func() {
			if got, want := q.Len(), m.ready(); got != want {
				t.Fatalf("Len = %d, model %d\ntrace: %v", got, want, trace)
			}
			q.mu.Lock()
			idle := 0
			for _, i := range q.index {
				if q.nodes[i].flags == flagIdle {
					idle++
				}
			}
			if idle != q.idleN || q.idleLen() != idle || q.inUse() != len(m.keys) {
				t.Fatalf("%d idle nodes, counted %d; %d keys in use, model %d\ntrace: %v", idle, q.idleN, q.inUse(), len(m.keys), trace)
			}
			stale := 0
			for _, e := range q.heap {
				if !q.live(e) {
					stale++
				}
			}
			if stale != q.stale {
				t.Fatalf("stale entries %d, counted %d\ntrace: %v", stale, q.stale, trace)
			}
			// Every trigger record is a node's or free, never both.
			owned := map[uint32]bool{}
			for i := range q.nodes {
				if r := q.nodes[i].trig; r != 0 {
					if owned[r-1] {
						t.Fatalf("record %d held by two nodes\ntrace: %v", r-1, trace)
					}
					owned[r-1] = true
				}
			}
			for _, r := range q.trigFree {
				if owned[r] {
					t.Fatalf("record %d free and held\ntrace: %v", r, trace)
				}
				owned[r] = true
			}
			if len(owned) != len(q.trigs) {
				t.Fatalf("%d records, %d held or free\ntrace: %v", len(q.trigs), len(owned), trace)
			}
			q.mu.Unlock()
		}
		get := func() {
			want, ok := m.get()
			if !ok {
				return
			}
			got, _, shutdown := q.GetWithTriggers(&rec)
			trace = append(trace, "get "+got)
			if shutdown || got != want {
				t.Fatalf("Get = %q (shutdown %v), model %q\ntrace: %v", got, shutdown, want, trace)
			}
			checkRecord(got)
		}
		for pos < len(prog) {
			op, k := next()%8, fmt.Sprintf("k%d", next()%6)
			switch op {
			case 0:
				b := next()
				p := b%3 - 1
				if b >= 128 { // AddAll of k and the keys after it
					keys := batchKeys(k, next())
					trace = append(trace, fmt.Sprintf("addall %v p%d", keys, p))
					// The first keys with a cause, the others without.
					q.AddAllTriggered(keys, make([]trigger.Cause, len(keys)/2), AddOptions{Priority: p})
					for _, k := range keys {
						m.add(k, p)
						adds[k]++
					}
					break
				}
				trace = append(trace, fmt.Sprintf("add %s p%d", k, p))
				q.AddTriggered(k, AddOptions{Priority: p}, trigger.Cause{Type: trigger.Update})
				m.add(k, p)
				adds[k]++
			case 1:
				b := next()
				p, d := b%3-1, time.Duration(next()%4)*10*time.Millisecond
				if b >= 128 {
					keys := batchKeys(k, next())
					trace = append(trace, fmt.Sprintf("afterall %v %v p%d", keys, d, p))
					q.AddAll(keys, AddOptions{Priority: p, After: d})
					for _, k := range keys {
						m.addAfter(k, p, d)
						adds[k]++
					}
					break
				}
				trace = append(trace, fmt.Sprintf("after %s %v p%d", k, d, p))
				q.AddWithOptions(k, AddOptions{Priority: p, After: d})
				m.addAfter(k, p, d)
				adds[k]++
			case 2:
				trace = append(trace, "ratelimited "+k)
				q.AddRateLimited(k)
				adds[k]++
				m.fail[k]++
				d := 10 * time.Millisecond
				if m.fail[k] > 2 {
					d = 30 * time.Millisecond
				}
				m.addAfter(k, 0, d)
			case 3:
				get()
			case 4:
				if h := m.held(); len(h) > 0 {
					k = h[next()%len(h)]
				}
				m.done(k)
				if next()%2 == 1 && m.ready() > 0 {
					// Next: Done, then the key the model hands out.
					want, _ := m.get()
					got, _, shutdown := q.NextWithTriggers(k, &rec)
					trace = append(trace, "next "+k+" "+got)
					if shutdown || got != want {
						t.Fatalf("Next = %q (shutdown %v), model %q\ntrace: %v", got, shutdown, want, trace)
					}
					checkRecord(got)
				} else {
					trace = append(trace, "done "+k)
					q.Done(k)
				}
			case 5:
				trace = append(trace, "forget "+k)
				q.Forget(k)
				delete(m.fail, k)
				if q.NumRequeues(k) != 0 {
					t.Fatalf("NumRequeues after Forget = %d", q.NumRequeues(k))
				}
			case 6:
				d := time.Duration(next()%5) * 5 * time.Millisecond
				trace = append(trace, fmt.Sprintf("tick %v", d))
				clock.Advance(d)
				m.advance(d)
			case 7:
				if got, want := q.NumRequeues(k), m.fail[k]; got != want {
					t.Fatalf("NumRequeues(%s) = %d, model %d", k, got, want)
				}
			}
			check()
		}
		// Nothing is lost: once time passes and workers finish, every key
		// comes out and the queue empties exactly when the model does.
		clock.Advance(time.Hour)
		m.advance(time.Hour)
		for range 100 {
			check()
			for _, k := range m.held() {
				q.Done(k)
				m.done(k)
			}
			for m.ready() > 0 {
				get()
			}
			if len(m.keys) == 0 {
				break
			}
		}
		if len(m.keys) != 0 || q.Len() != 0 || q.inUse() != 0 {
			t.Fatalf("left over: model %d keys, queue Len %d, %d nodes in use", len(m.keys), q.Len(), q.inUse())
		}
	})
}
