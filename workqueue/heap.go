package workqueue

// The delay heap is a binary min-heap of node indices ordered by (at, hseq).
// Each node records its position, so a key can be moved earlier or removed
// in O(log n) without stale entries.

func (q *Queue[K]) less(a, b int32) bool {
	na, nb := &q.nodes[a], &q.nodes[b]
	if na.at != nb.at {
		return na.at < nb.at
	}
	return na.hseq < nb.hseq
}

func (q *Queue[K]) swap(i, j int) {
	h := q.heap
	h[i], h[j] = h[j], h[i]
	q.nodes[h[i]].heapIdx = int32(i)
	q.nodes[h[j]].heapIdx = int32(j)
}

func (q *Queue[K]) heapPush(i int32) {
	q.hseq++
	n := &q.nodes[i]
	n.hseq = q.hseq
	n.heapIdx = int32(len(q.heap))
	q.heap = append(q.heap, i)
	q.heapUp(len(q.heap) - 1)
}

func (q *Queue[K]) heapUp(j int) {
	for j > 0 {
		parent := (j - 1) / 2
		if !q.less(q.heap[j], q.heap[parent]) {
			return
		}
		q.swap(j, parent)
		j = parent
	}
}

func (q *Queue[K]) heapDown(j int) {
	n := len(q.heap)
	for {
		l := 2*j + 1
		if l >= n {
			return
		}
		small := l
		if r := l + 1; r < n && q.less(q.heap[r], q.heap[l]) {
			small = r
		}
		if !q.less(q.heap[small], q.heap[j]) {
			return
		}
		q.swap(j, small)
		j = small
	}
}

// heapRemove takes node i out of the heap.
func (q *Queue[K]) heapRemove(i int32) {
	j := int(q.nodes[i].heapIdx)
	last := len(q.heap) - 1
	if j != last {
		q.swap(j, last)
	}
	q.heap = q.heap[:last]
	q.nodes[i].heapIdx = -1
	if j != last {
		q.heapDown(j)
		q.heapUp(j)
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
	return e
}

// grow doubles the buffer; its length stays a power of two.
func (r *ring) grow() {
	size := max(16, 2*len(r.buf))
	buf := make([]entry, size)
	for k := 0; k < r.n; k++ {
		buf[k] = r.buf[(r.head+k)&(len(r.buf)-1)]
	}
	r.buf, r.head = buf, 0
}
