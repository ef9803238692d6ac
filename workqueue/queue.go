package workqueue

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"kloop.dev/kloop/reconcile/trigger"
)

// Options configures a Queue. The zero value is ready to use.
type Options[K comparable] struct {
	// Name names the queue in metrics. Default: "" (allowed without
	// Metrics; with Metrics a name is required, and each queue of a
	// provider needs its own).
	Name string

	// RateLimiter decides the delay of AddRateLimited and of
	// AddWithOptions with RateLimited set. Default: DefaultRateLimiter,
	// the larger of a per-key exponential backoff (5 ms doubling to
	// 1000 s) and a 10 qps, burst 100 token bucket, as client-go's default
	// controller rate limiter.
	RateLimiter RateLimiter[K]

	// Metrics makes the queue's metrics. Default: none are recorded and
	// the queue never reads the clock for them.
	Metrics MetricsProvider

	// Clock is the source of time for delays and metrics. Default: RealClock.
	Clock Clock

	// Triggers keeps, for each key waiting for a worker, a record of why
	// it was added (a trigger.Record: the last trigger.Recent causes given to
	// AddTriggered and AddAllTriggered, and a count of every add by type),
	// merged as the adds of the key are merged, and handed to the worker
	// by GetWithTriggers and NextWithTriggers. Recording allocates
	// nothing per add (one record per key waiting, reused). Default false:
	// no record is kept and the Triggered adds are plain adds.
	Triggers bool
}

func (o *Options[K]) setDefaults() {
	if o.Clock == nil {
		o.Clock = RealClock{}
	}
	if o.RateLimiter == nil {
		o.RateLimiter = DefaultRateLimiter[K](o.Clock)
	}
}

func (o *Options[K]) validate() error {
	if o.Clock == nil || o.RateLimiter == nil {
		return errors.New("workqueue: internal error: defaults not set")
	}
	if o.Metrics != nil && o.Name == "" {
		return errors.New("workqueue: Options.Metrics needs a Name to report under")
	}
	return nil
}

// AddOptions qualifies an add.
type AddOptions struct {
	// Priority orders ready keys: higher first, first-in first-out
	// within one priority. Default 0. Adding a key that is already
	// waiting with a higher priority raises it; a priority is never lowered.
	Priority int
	// After delays the key by at least this long. Default 0: ready now.
	After time.Duration
	// RateLimited asks the rate limiter for a delay too; the larger of
	// the two delays is used. Default false.
	RateLimited bool
}

// Queue is a work queue of keys with the properties a controller needs:
//
//   - Fair: keys are handed out in the order they became ready, within one
//     priority; higher priorities first.
//   - Stingy: a key added several times before a worker takes it is handed
//     out once.
//   - One worker per key: a key held by a worker (between Get and Done) is
//     never handed to another one. Adding it meanwhile marks it dirty, and
//     Done puts it back in the queue.
//   - Delays: AddAfter keeps one timer for the whole queue (no goroutine per
//     key). A waiting key is moved earlier by an earlier AddAfter or by Add;
//     the earliest wins and a key is never moved later.
//   - Rate limiting: AddRateLimited asks the RateLimiter how long to wait;
//     Forget resets the key's history.
//
// A Queue is safe for concurrent use. Its zero value is not usable: call New.
type Queue[K comparable] struct {
	limiter RateLimiter[K]
	clock   Clock
	epoch   time.Time // monotonic origin of the int64 times below

	// timed is set once by New: metrics are on, and need clock readings.
	timed bool
	// triggers is set once by New: Options.Triggers.
	triggers bool

	// mu guards every field below it.
	mu   sync.Mutex
	cond sync.Cond // signalled when a key becomes ready, or on shutdown and drain progress

	// index maps a key to its node in nodes. A key has a node while it is
	// ready, waiting, or held by a worker; the node is freed otherwise.
	index map[K]int32
	nodes []node[K]
	free  []int32 // indices of unused nodes

	// levels holds the ready rings, one per priority, sorted by priority
	// from highest to lowest; an empty one is dropped while more than
	// keepLevels exist. ready counts the live entries across them.
	levels []*level
	ready  int

	// heap holds the waiting nodes' entries ordered by (at, seq) (see
	// heap.go); stale counts its entries that no longer belong to a
	// waiting node. hseq is the last entry sequence number handed out.
	heap  []heapEntry
	stale int
	hseq  uint64

	// timer fires at armed (nanoseconds since epoch) to move due keys
	// from heap to ready; armed < 0 means not armed.
	timer Timer
	armed int64

	// The idle nodes left the queue (not ready, waiting nor held) but keep
	// their key in index: a controller's keys come back, and a key found
	// idle costs one map lookup instead of an insert now and a delete at
	// its next Done. They form a list through node.idlePrev/idleNext,
	// oldest first (idleHead, idleTail; -1 when empty); idleN counts them.
	// Past maxIdle the oldest is freed.
	idleHead, idleTail int32
	idleN              int

	// inFlight holds the nodes held by workers, for the unfinished-work
	// metrics and drain; each node records its position.
	inFlight []int32

	shuttingDown bool
	draining     bool

	// waiters counts the Gets blocked in cond.Wait; waking, the Signals
	// sent to them that no Get has taken up yet. A key made ready wakes a
	// worker only when none is on its way already, and a woken worker that
	// leaves ready keys behind wakes the next one: a burst of keys wakes
	// the workers one after the other as long as they find work, not one
	// per key, which on few cores cost more in wake-ups than the keys.
	// Invariant (no lost wake-up): ready > 0 and waiters > 0 imply
	// waking > 0, once the Get or Add holding mu returns.
	waiters, waking int

	// trigs holds the trigger records of nodes (node.trig), reused through
	// trigFree (indices of unused records); only with triggers.
	trigs    []trigger.Record
	trigFree []uint32

	// Statistics for the MetricsProvider; kept only when timed.
	adds, retries uint64
	queueDuration Histogram
	workDuration  Histogram
}

// node flags. Invariants: flagReady and flagProcessing exclude each other;
// flagDirty implies flagProcessing; flagHeap excludes flagReady and flagDirty.
const (
	flagReady      uint8 = 1 << iota // in a ready ring (the entry whose seq equals node.seq)
	flagHeap                         // in the delay heap
	flagProcessing                   // held by a worker
	flagDirty                        // held by a worker and added again: ready at Done
	flagIdle                         // none of the above, kept for its key's next add (see Queue.idleHead)
)

type node[K comparable] struct {
	key     K
	prio    int
	at      int64  // when flagHeap: due time, ns since epoch
	hseq    uint64 // when flagHeap: the seq of its live heap entry
	procIdx int32
	seq     uint32 // identifies the live ring entry; bumped when the node leaves or moves
	flags   uint8
	// idlePrev and idleNext link an idle node into the queue's idle list
	// (-1: none); meaningless otherwise.
	idlePrev, idleNext int32
	addedAt            int64 // when it became ready or dirty (metrics only)
	started            int64 // when a worker took it (metrics only)
	// trig is 1 + the index in Queue.trigs of the node's trigger record,
	// 0 for none (only with Options.Triggers). A node has one while it is
	// ready, waiting or dirty and was added since a worker last took it.
	trig uint32
}

type entry struct {
	node int32
	seq  uint32
}

type level struct {
	prio int
	ring ring
	live int // entries of ring that are not stale
}

// New returns an empty queue.
func New[K comparable](opts Options[K]) (*Queue[K], error) {
	opts.setDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	q := &Queue[K]{
		limiter: opts.RateLimiter,
		clock:   opts.Clock,
		epoch:   opts.Clock.Now(),
		index:   make(map[K]int32),
		armed:   -1,

		triggers: opts.Triggers,

		idleHead: -1,
		idleTail: -1,
	}
	q.cond.L = &q.mu
	if opts.Metrics != nil {
		q.timed = true
		if err := opts.Metrics.Register(opts.Name, q.readStats); err != nil {
			return nil, fmt.Errorf("workqueue %q: registering metrics: %w", opts.Name, err)
		}
	}
	return q, nil
}

func (q *Queue[K]) now() int64 { return int64(q.clock.Since(q.epoch)) }

// nowTime returns the time now, read from the monotonic clock only (Since
// costs a third of Now on some machines): the Time of a cause added
// without one.
func (q *Queue[K]) nowTime() time.Time { return q.epoch.Add(q.clock.Since(q.epoch)) }

// Add makes key ready now, unless it is already ready. A key held by a worker
// is marked dirty and becomes ready again at Done. Adds after ShutDown are
// ignored.
func (q *Queue[K]) Add(key K) {
	q.mu.Lock()
	if !q.shuttingDown {
		i := q.addNow(key, 0)
		if q.triggers {
			q.record(i).Tally(trigger.Unknown)
		}
	}
	q.mu.Unlock()
}

// AddAfter makes key ready once d has elapsed; d <= 0 is Add. If the key is
// already ready, or waiting for an earlier time, nothing changes.
func (q *Queue[K]) AddAfter(key K, d time.Duration) {
	q.AddWithOptions(key, AddOptions{After: d})
}

// AddRateLimited adds key after the delay its rate limiter decides.
func (q *Queue[K]) AddRateLimited(key K) {
	q.AddWithOptions(key, AddOptions{RateLimited: true})
}

// AddWithOptions adds key with a priority and an optional delay.
func (q *Queue[K]) AddWithOptions(key K, o AddOptions) {
	q.addWithOptions(key, o, nil, nil)
}

// AddTriggered is AddWithOptions that records t as a cause of the add
// (Options.Triggers; without it, t is ignored). A zero t.Time is set to now.
func (q *Queue[K]) AddTriggered(key K, o AddOptions, t trigger.Cause) {
	if !q.triggers {
		q.addWithOptions(key, o, nil, nil)
		return
	}
	if t.Time.IsZero() {
		t.Time = q.nowTime()
	}
	q.addWithOptions(key, o, &t, nil)
}

// AddRecord is AddWithOptions that merges the record r (as handed out by
// GetWithTriggers) into the key's record, then records t unless t is the
// zero Cause: the way a worker that does not process a key puts it back
// with the causes it was handed out with. Without Options.Triggers, r and t
// are ignored.
func (q *Queue[K]) AddRecord(key K, o AddOptions, r *trigger.Record, t trigger.Cause) {
	if !q.triggers || r == nil {
		q.AddTriggered(key, o, t)
		return
	}
	merged := *r
	if t != (trigger.Cause{}) {
		if t.Time.IsZero() {
			t.Time = q.nowTime()
		}
		merged.Add(t)
	}
	q.addWithOptions(key, o, nil, &merged)
}

// addWithOptions is AddWithOptions recording t (nil: an unknown cause).
func (q *Queue[K]) addWithOptions(key K, o AddOptions, t *trigger.Cause, r *trigger.Record) {
	d := o.After
	if o.RateLimited {
		if q.ShuttingDown() {
			return // do not count a failure nobody will retry
		}
		if w := q.limiter.When(key); w > d {
			d = w
		}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shuttingDown {
		return
	}
	var i int32
	if d <= 0 {
		i = q.addNow(key, o.Priority)
	} else {
		q.retries++
		i = q.addLater(key, o.Priority, dueAt(q.now(), d))
	}
	if q.triggers {
		switch {
		case r != nil:
			q.record(i).Merge(r)
		case t != nil:
			q.record(i).Add(*t)
		default:
			q.record(i).Tally(trigger.Unknown)
		}
	}
}

// AddAll adds every key of keys as AddWithOptions(key, o) does, under one
// take of the queue's lock: an event source that has a run of keys at hand
// contends with the workers once per run, not once per key. keys is not
// kept.
func (q *Queue[K]) AddAll(keys []K, o AddOptions) {
	q.addAll(keys, nil, o)
}

// AddAllTriggered is AddAll that records ts[i] as the cause of the add of
// keys[i] (Options.Triggers; without it, ts is ignored); keys beyond ts
// have an unknown cause. Zero Times are set to one reading of the clock.
// Neither slice is kept.
func (q *Queue[K]) AddAllTriggered(keys []K, ts []trigger.Cause, o AddOptions) {
	if !q.triggers {
		ts = nil
	}
	q.addAll(keys, ts, o)
}

func (q *Queue[K]) addAll(keys []K, ts []trigger.Cause, o AddOptions) {
	if len(keys) == 0 {
		return
	}
	// One reading of the clock for the batch.
	var now time.Time
	if len(ts) > 0 {
		now = q.nowTime()
	}
	if o.RateLimited {
		// Each key's own delay: one at a time (the limiter has its lock).
		for i, k := range keys {
			if i < len(ts) {
				t := ts[i]
				if t.Time.IsZero() {
					t.Time = now
				}
				q.addWithOptions(k, o, &t, nil)
			} else {
				q.addWithOptions(k, o, nil, nil)
			}
		}
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shuttingDown {
		return
	}
	var at int64
	if o.After > 0 {
		at = dueAt(q.now(), o.After)
	}
	for j, k := range keys {
		var i int32
		if o.After <= 0 {
			i = q.addNow(k, o.Priority)
		} else {
			q.retries++
			i = q.addLater(k, o.Priority, at)
		}
		if !q.triggers {
			continue
		}
		r := q.record(i)
		if j >= len(ts) {
			r.Tally(trigger.Unknown)
			continue
		}
		c := ts[j]
		if c.Time.IsZero() {
			c.Time = now
		}
		r.Add(c)
	}
}

// record returns the trigger record of node i, making one if it has none.
// The pointer is valid until the next record.
func (q *Queue[K]) record(i int32) *trigger.Record {
	n := &q.nodes[i]
	if n.trig == 0 {
		var idx uint32
		if f := len(q.trigFree); f > 0 {
			idx = q.trigFree[f-1]
			q.trigFree = q.trigFree[:f-1]
		} else {
			q.trigs = append(q.trigs, trigger.Record{})
			idx = uint32(len(q.trigs) - 1)
		}
		n.trig = idx + 1
	}
	return &q.trigs[n.trig-1]
}

// dropTriggers frees n's trigger record, if it has one.
func (q *Queue[K]) dropTriggers(n *node[K]) {
	if n.trig == 0 {
		return
	}
	q.trigs[n.trig-1].Reset()
	q.trigFree = append(q.trigFree, n.trig-1)
	n.trig = 0
}

// dueAt is now+d, saturated: a due time that overflowed would be in the
// past, at the heap's top, with the timer armed for a wrapped-round delay —
// the key ready with the next timer, and every other waiting key stuck.
func dueAt(now int64, d time.Duration) int64 {
	if int64(d) > math.MaxInt64-now {
		return math.MaxInt64
	}
	return now + int64(d)
}

// Forget resets the rate limiter's history of key. Call it when the key was
// processed successfully.
func (q *Queue[K]) Forget(key K) { q.limiter.Forget(key) }

// NumRequeues is how many times key was rate-limited since it was last
// forgotten.
func (q *Queue[K]) NumRequeues(key K) int { return q.limiter.NumRequeues(key) }

// Len is the number of keys ready to be handed out. Keys waiting for a delay
// and keys held by workers are not counted.
func (q *Queue[K]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.ready
}

// Get blocks until a key is ready and hands it to the caller, who must call
// Done with it when finished. After ShutDown, Get still hands out the keys
// that were ready; once none is left it returns shutdown = true.
func (q *Queue[K]) Get() (key K, shutdown bool) {
	key, _, shutdown = q.GetWithPriority()
	return key, shutdown
}

// GetWithPriority is Get that also returns the priority the key was handed
// out at, so that a worker can requeue it at the same priority (a failing key
// of the initial list stays behind fresh events).
func (q *Queue[K]) GetWithPriority() (key K, priority int, shutdown bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.getLocked(nil)
}

// GetWithTriggers is GetWithPriority that also fills dst with the key's
// trigger record (Options.Triggers): why it was added since a worker last
// took it. dst is emptied when there is none.
func (q *Queue[K]) GetWithTriggers(dst *trigger.Record) (key K, priority int, shutdown bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.getLocked(dst)
}

// Next is Done(done) followed by GetWithPriority, in one critical section
// instead of two: the loop of a worker that finished done and wants the next
// key. With several workers on few cores the queue's lock is contended, and
// each acquisition costs spinning or a park.
func (q *Queue[K]) Next(done K) (key K, priority int, shutdown bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.doneLocked(done)
	return q.getLocked(nil)
}

// NextWithTriggers is Next that fills dst as GetWithTriggers does.
func (q *Queue[K]) NextWithTriggers(done K, dst *trigger.Record) (key K, priority int, shutdown bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.doneLocked(done)
	return q.getLocked(dst)
}

// getLocked is GetWithPriority with q.mu held; it fills dst (if not nil)
// with the key's trigger record.
func (q *Queue[K]) getLocked(dst *trigger.Record) (key K, priority int, shutdown bool) {
	for q.ready == 0 && !q.shuttingDown {
		q.waiters++
		q.cond.Wait()
		q.waiters--
		if q.waking > 0 {
			q.waking--
		}
	}
	if q.ready == 0 {
		var zero K
		return zero, 0, true
	}
	i := q.popReady()
	if q.ready > 0 {
		q.wake() // keys left: the next worker
	}
	n := &q.nodes[i]
	switch {
	case q.triggers && n.trig != 0:
		if dst != nil {
			q.trigs[n.trig-1].MoveTo(dst)
		}
		q.dropTriggers(n)
	case dst != nil:
		dst.Reset()
	}
	n.flags |= flagProcessing
	n.procIdx = int32(len(q.inFlight))
	q.inFlight = append(q.inFlight, i)
	if q.timed {
		now := q.now()
		q.queueDuration.observe(time.Duration(now - n.addedAt))
		n.started = now
	}
	return n.key, n.prio, false
}

// Done tells the queue that the worker finished with key. If key was added
// while it was held, it becomes ready again now.
func (q *Queue[K]) Done(key K) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.doneLocked(key)
}

// doneLocked is Done with q.mu held.
func (q *Queue[K]) doneLocked(key K) {
	i, ok := q.held(key)
	if !ok {
		return
	}
	n := &q.nodes[i]
	n.flags &^= flagProcessing
	q.removeInFlight(n)
	if q.timed {
		q.workDuration.observe(time.Duration(q.now() - n.started))
	}
	switch {
	case n.flags&flagDirty != 0:
		n.flags &^= flagDirty
		q.pushReady(i)
	case n.flags&flagHeap != 0:
		// It stays waiting for its time.
	default:
		q.release(i)
	}
	if q.draining && len(q.inFlight) == 0 {
		q.cond.Broadcast()
	}
}

// ShutDown stops the queue: adds are ignored from now on, keys waiting for a
// delay are dropped, and Get returns shutdown once the ready keys are gone.
// It does not wait for workers.
func (q *Queue[K]) ShutDown() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.shutdownLocked()
}

// ShutDownWithDrain is ShutDown, then it waits until every key handed out
// has been marked Done. Workers must keep calling Done, or it waits forever.
func (q *Queue[K]) ShutDownWithDrain() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.draining = true
	q.shutdownLocked()
	for len(q.inFlight) > 0 {
		q.cond.Wait()
	}
}

// ShuttingDown reports whether ShutDown has been called.
func (q *Queue[K]) ShuttingDown() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.shuttingDown
}

func (q *Queue[K]) shutdownLocked() {
	if !q.shuttingDown {
		q.shuttingDown = true
		if q.timer != nil {
			q.timer.Stop()
			q.armed = -1
		}
		// Drop the waiting keys: they will never become ready.
		for _, e := range q.heap {
			if q.live(e) {
				n := &q.nodes[e.node]
				n.flags &^= flagHeap
				if n.flags == 0 {
					q.free1(e.node)
				}
			}
		}
		clear(q.heap)
		q.heap, q.stale = q.heap[:0], 0
		// Nothing is added any more: idle keys have no use.
		for q.idleHead >= 0 {
			i := q.idleHead
			q.unlinkIdle(i)
			q.free1(i)
		}
	}
	q.cond.Broadcast()
}

// lookup returns the node of key, allocating a fresh one if there is none.
func (q *Queue[K]) lookup(key K) (int32, *node[K]) {
	if i, ok := q.index[key]; ok {
		n := &q.nodes[i]
		if n.flags == flagIdle {
			// Back from idle: a fresh node.
			q.unlinkIdle(i)
			*n = node[K]{key: n.key, seq: n.seq + 1, procIdx: -1}
		}
		return i, n
	}
	var i int32
	if f := len(q.free); f > 0 {
		i = q.free[f-1]
		q.free = q.free[:f-1]
	} else {
		q.nodes = append(q.nodes, node[K]{})
		i = int32(len(q.nodes) - 1)
	}
	n := &q.nodes[i]
	seq := n.seq // kept across reuse, so stale ring entries never match
	*n = node[K]{key: key, seq: seq, procIdx: -1}
	q.index[key] = i
	return i, n
}

// release is called for a node that is no longer ready, waiting nor held:
// it becomes idle, keeping its key for the key's next add, or is freed once
// the queue is shutting down. The oldest idle node is freed past maxIdle.
func (q *Queue[K]) release(i int32) {
	if q.shuttingDown {
		q.free1(i)
		return
	}
	n := &q.nodes[i]
	q.dropTriggers(n)
	n.flags = flagIdle
	n.seq++
	n.idlePrev, n.idleNext = q.idleTail, -1
	if q.idleTail >= 0 {
		q.nodes[q.idleTail].idleNext = i
	} else {
		q.idleHead = i
	}
	q.idleTail = i
	q.idleN++
	if q.idleN > maxIdle {
		oldest := q.idleHead
		q.unlinkIdle(oldest)
		q.free1(oldest)
	}
}

// maxIdle is the most idle nodes a queue keeps: about 140 bytes each with
// their index entry, for keys that are likely to come back.
const maxIdle = 4096

// unlinkIdle takes idle node i out of the idle list; it stays flagIdle
// until the caller changes it.
func (q *Queue[K]) unlinkIdle(i int32) {
	n := &q.nodes[i]
	if n.idlePrev >= 0 {
		q.nodes[n.idlePrev].idleNext = n.idleNext
	} else {
		q.idleHead = n.idleNext
	}
	if n.idleNext >= 0 {
		q.nodes[n.idleNext].idlePrev = n.idlePrev
	} else {
		q.idleTail = n.idlePrev
	}
	n.idlePrev, n.idleNext = -1, -1
	q.idleN--
}

// free1 frees node i: its key leaves the index and the node goes back to
// the free list.
func (q *Queue[K]) free1(i int32) {
	n := &q.nodes[i]
	q.dropTriggers(n)
	delete(q.index, n.key)
	n.flags = 0
	var zero K
	n.key = zero // let the key be collected
	n.seq++
	q.free = append(q.free, i)
}

// addNow makes key ready (or dirty) and returns its node.
func (q *Queue[K]) addNow(key K, prio int) int32 {
	i, n := q.lookup(key)
	switch {
	case n.flags&flagReady != 0:
		if prio > n.prio {
			q.levelFor(n.prio).live--
			q.ready--
			n.seq++ // the old ring entry goes stale
			n.prio = prio
			q.pushReady(i)
		}
		return i
	case n.flags&flagDirty != 0:
		n.prio = max(n.prio, prio)
		return i
	case n.flags&flagHeap != 0:
		q.heapRemove(i)
		n.prio = max(n.prio, prio)
	default:
		n.prio = prio
	}
	q.stamp(n)
	if n.flags&flagProcessing != 0 {
		n.flags |= flagDirty
		return i
	}
	q.pushReady(i)
	return i
}

// stamp records that node n entered the queue now.
func (q *Queue[K]) stamp(n *node[K]) {
	if q.timed {
		q.adds++
		n.addedAt = q.now()
	}
}

// addLater makes key wait until at (unless it is due earlier) and returns
// its node.
func (q *Queue[K]) addLater(key K, prio int, at int64) int32 {
	i, n := q.lookup(key)
	switch {
	case n.flags&(flagReady|flagDirty) != 0:
		// Already due now, which is earlier.
		if prio > n.prio {
			if n.flags&flagReady != 0 {
				q.addNow(key, prio) // re-rings at the higher priority
			} else {
				n.prio = prio
			}
		}
		return i
	case n.flags&flagHeap != 0:
		n.prio = max(n.prio, prio)
		if at < n.at {
			q.heapPush(i, at)
			q.arm()
		}
		return i
	}
	n.prio = prio
	q.heapPush(i, at)
	q.arm()
	return i
}

// pushReady appends node i to the ring of its priority.
func (q *Queue[K]) pushReady(i int32) {
	n := &q.nodes[i]
	n.flags |= flagReady
	l := q.levelFor(n.prio)
	l.ring.push(entry{node: i, seq: n.seq})
	l.live++
	q.ready++
	q.wake()
}

// wake signals a waiting Get unless one is on its way already.
func (q *Queue[K]) wake() {
	if q.waiters > q.waking && q.waking == 0 {
		q.waking++
		q.cond.Signal()
	}
}

// popReady removes and returns the first live node of the highest non-empty
// priority. The caller checked q.ready > 0.
func (q *Queue[K]) popReady() int32 {
	for idx := 0; idx < len(q.levels); {
		l := q.levels[idx]
		for l.ring.n > 0 {
			e := l.ring.pop()
			n := &q.nodes[e.node]
			if n.seq != e.seq || n.flags&flagReady == 0 {
				continue // stale: the node moved to another priority or was freed
			}
			n.flags &^= flagReady
			q.ready--
			l.live--
			q.dropIfEmpty(idx)
			return e.node
		}
		if !q.dropIfEmpty(idx) {
			idx++
		}
	}
	panic("workqueue: ready count out of sync") // unreachable: guarded by q.ready
}

// dropIfEmpty removes the level at idx if its ring is empty and more than
// keepLevels levels exist, and reports whether it did: a queue used with
// many priorities keeps a level only for those with keys, while the usual
// two (a controller's normal and low priorities) are never dropped and
// re-made.
func (q *Queue[K]) dropIfEmpty(idx int) bool {
	if q.levels[idx].ring.n > 0 || len(q.levels) <= keepLevels {
		return false
	}
	q.levels = slices.Delete(q.levels, idx, idx+1)
	return true
}

// keepLevels is the number of levels kept even when empty.
const keepLevels = 2

func (q *Queue[K]) levelFor(prio int) *level {
	for idx, l := range q.levels {
		if l.prio == prio {
			return l
		}
		if l.prio < prio {
			nl := &level{prio: prio}
			q.levels = append(q.levels, nil)
			copy(q.levels[idx+1:], q.levels[idx:])
			q.levels[idx] = nl
			return nl
		}
	}
	nl := &level{prio: prio}
	q.levels = append(q.levels, nl)
	return nl
}

// held returns the node of key if a worker holds it. With few keys held
// (one per worker) it compares them instead of hashing key: the key given to
// Done is the one Get returned, whose strings are the very same memory, so
// each comparison is a few instructions.
func (q *Queue[K]) held(key K) (int32, bool) {
	if len(q.inFlight) <= heldScan {
		for _, i := range q.inFlight {
			if q.nodes[i].key == key {
				return i, true
			}
		}
		return 0, false
	}
	i, ok := q.index[key]
	return i, ok && q.nodes[i].flags&flagProcessing != 0
}

// heldScan is the most held keys that held compares one by one.
const heldScan = 8

func (q *Queue[K]) removeInFlight(n *node[K]) {
	last := len(q.inFlight) - 1
	moved := q.inFlight[last]
	q.inFlight[n.procIdx] = moved
	q.nodes[moved].procIdx = n.procIdx
	q.inFlight = q.inFlight[:last]
	n.procIdx = -1
}

// readStats fills s with a snapshot of the queue's statistics.
func (q *Queue[K]) readStats(s *Stats) {
	q.mu.Lock()
	defer q.mu.Unlock()
	s.Adds, s.Retries = q.adds, q.retries
	s.QueueDuration, s.WorkDuration = q.queueDuration, q.workDuration
	s.Depth = s.Depth[:0]
	for _, l := range q.levels {
		s.Depth = append(s.Depth, PriorityDepth{Priority: l.prio, Ready: l.live})
	}
	s.Unfinished, s.Longest = 0, 0
	if len(q.inFlight) > 0 {
		now := q.now()
		for _, i := range q.inFlight {
			d := time.Duration(now - q.nodes[i].started)
			s.Unfinished += d
			s.Longest = max(s.Longest, d)
		}
	}
}

// arm makes sure the timer fires no later than the earliest waiting key.
func (q *Queue[K]) arm() {
	if q.shuttingDown {
		return
	}
	top, ok := q.heapTop()
	if !ok {
		return
	}
	at := top.at
	if q.armed >= 0 && q.armed <= at {
		return
	}
	q.armed = at
	d := time.Duration(at - q.now())
	if q.timer == nil {
		q.timer = q.clock.AfterFunc(d, q.fire)
	} else {
		q.timer.Reset(d)
	}
}

// fire moves every due key from the heap to ready (or dirty, when held).
func (q *Queue[K]) fire() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.armed = -1
	if q.shuttingDown {
		return
	}
	now := q.now()
	for {
		top, ok := q.heapTop()
		if !ok || top.at > now {
			break
		}
		q.popTop()
		i := top.node
		n := &q.nodes[i]
		n.flags &^= flagHeap
		if q.timed {
			q.adds++
			n.addedAt = now
		}
		if n.flags&flagProcessing != 0 {
			n.flags |= flagDirty
		} else {
			q.pushReady(i)
		}
	}
	q.arm()
}
