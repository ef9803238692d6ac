package workqueue

// The delay heap is a 4-ary min-heap of entries ordered by (at, seq). An
// entry carries its due time inline, so sifting touches only the heap's own
// array, never the node slab. Moving a key earlier pushes a new entry and
// removing one just unmarks its node: the old entry goes stale and is dropped
// when it reaches the top, or when stale entries outnumber live ones and the
// heap is rebuilt. A node's hseq names its live entry.

type heapEntry struct {
	at   int64  // due time, ns since the queue's epoch
	seq  uint64 // insertion order: breaks ties first-in first-out, names the entry
	node int32
}

func (e heapEntry) before(o heapEntry) bool {
	return e.at < o.at || (e.at == o.at && e.seq < o.seq)
}

// live reports whether e is its node's current entry.
func (q *Queue[K]) live(e heapEntry) bool {
	n := &q.nodes[e.node]
	return n.flags&flagHeap != 0 && n.hseq == e.seq
}

// heapPush makes at the due time of node i, superseding any entry it had.
func (q *Queue[K]) heapPush(i int32, at int64) {
	n := &q.nodes[i]
	if n.flags&flagHeap != 0 {
		q.stale++
	}
	q.hseq++
	n.hseq, n.at = q.hseq, at
	n.flags |= flagHeap
	q.heap = append(q.heap, heapEntry{at: at, seq: q.hseq, node: i})
	q.siftUp(len(q.heap) - 1)
	if q.stale > 1024 && q.stale > len(q.heap)/2 {
		q.rebuildHeap()
	}
}

// heapRemove takes node i out of the heap; its entry goes stale.
func (q *Queue[K]) heapRemove(i int32) {
	q.nodes[i].flags &^= flagHeap
	q.stale++
}

// heapTop returns the earliest live entry, dropping stale ones above it.
func (q *Queue[K]) heapTop() (heapEntry, bool) {
	for len(q.heap) > 0 {
		if e := q.heap[0]; q.live(e) {
			return e, true
		}
		q.popTop()
		q.stale--
	}
	return heapEntry{}, false
}

func (q *Queue[K]) popTop() {
	last := len(q.heap) - 1
	q.heap[0] = q.heap[last]
	q.heap = q.heap[:last]
	if last > 0 {
		q.siftDown(0)
	}
}

func (q *Queue[K]) siftUp(j int) {
	h := q.heap
	e := h[j]
	for j > 0 {
		parent := (j - 1) / 4
		if !e.before(h[parent]) {
			break
		}
		h[j] = h[parent]
		j = parent
	}
	h[j] = e
}

func (q *Queue[K]) siftDown(j int) {
	h := q.heap
	n := len(h)
	e := h[j]
	for {
		first := 4*j + 1
		if first >= n {
			break
		}
		small := first
		for c := first + 1; c < first+4 && c < n; c++ {
			if h[c].before(h[small]) {
				small = c
			}
		}
		if !h[small].before(e) {
			break
		}
		h[j] = h[small]
		j = small
	}
	h[j] = e
}

// rebuildHeap drops the stale entries and restores the heap order.
func (q *Queue[K]) rebuildHeap() {
	live := q.heap[:0]
	for _, e := range q.heap {
		if q.live(e) {
			live = append(live, e)
		}
	}
	clear(q.heap[len(live):])
	q.heap = live
	q.stale = 0
	for j := (len(q.heap) - 2) / 4; j >= 0; j-- {
		q.siftDown(j)
	}
}

// ring is a growable circular buffer of ready-ring entries.
type ring struct {
	buf  []entry
	head int // index of the first entry
	n    int // number of entries
}

func (r *ring) push(e entry) {
	if r.n == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = e
	r.n++
}

func (r *ring) pop() entry {
	e := r.buf[r.head]
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
	if r.n == 0 && len(r.buf) > ringKeep {
		// Drained after a burst: give the burst's memory back.
		r.buf, r.head = nil, 0
	}
	return e
}

// ringKeep is the largest buffer a ring keeps once it is empty.
const ringKeep = 1024

// grow doubles the buffer; its length stays a power of two.
func (r *ring) grow() {
	size := max(16, 2*len(r.buf))
	buf := make([]entry, size)
	for k := 0; k < r.n; k++ {
		buf[k] = r.buf[(r.head+k)&(len(r.buf)-1)]
	}
	r.buf, r.head = buf, 0
}
