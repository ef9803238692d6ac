package chunkq

// chunkSize is the number of items of a chunk: large enough that moving to
// the next chunk is rare, small enough that an idle queue holds little.
const chunkSize = 128

type chunk[T any] struct {
	items [chunkSize]T
	next  *chunk[T] // the chunk after this one, nil for the tail chunk
}

// Queue is a first-in first-out queue of T in a list of fixed-size chunks.
// Unlike a ring that doubles when full, it never copies what it holds: it
// grows by one chunk at a time and gives drained chunks back, so a backlog
// costs at most one item's worth of allocation per item pushed however it
// comes and goes, and the memory of a burst goes back as it is drained. Up
// to maxSpare drained chunks are kept for reuse, so a queue whose backlog
// comes and goes by a few chunks — a watch's bursts, every millisecond —
// does not allocate.
//
// The zero value is an empty queue. A Queue is not safe for concurrent use:
// its owner guards it.
type Queue[T any] struct {
	// head is the chunk of the front item; head.items[first] is the front
	// when n > 0. tail is the chunk of the back item; the next push goes to
	// tail.items[last]. Both are nil until the first push; when head ==
	// tail, first <= last.
	head, tail  *chunk[T]
	first, last int
	n           int
	// spare lists drained chunks kept for the next growth (linked by
	// next), at most maxSpare of them: a backlog that comes and goes by a
	// few chunks — a watch's bursts — reuses them instead of allocating.
	spare  *chunk[T]
	spares int
}

// maxSpare is the most drained chunks a queue keeps: the memory of a
// larger burst goes back.
const maxSpare = 4

// Len returns the number of items queued.
func (q *Queue[T]) Len() int { return q.n }

// Push adds v at the back.
func (q *Queue[T]) Push(v T) {
	if q.tail == nil {
		c := q.newChunk()
		q.head, q.tail, q.first, q.last = c, c, 0, 0
	} else if q.last == chunkSize {
		c := q.newChunk()
		q.tail.next = c
		q.tail, q.last = c, 0
	}
	q.tail.items[q.last] = v
	q.last++
	q.n++
}

// Front returns a pointer to the front item, valid until the next Pop, Push
// or Clear; nil when the queue is empty.
func (q *Queue[T]) Front() *T {
	if q.n == 0 {
		return nil
	}
	return &q.head.items[q.first]
}

// Pop removes the front item and returns it; ok is false when the queue is
// empty. The queue forgets the item (the slot is zeroed), so that it holds
// no reference to it.
func (q *Queue[T]) Pop() (v T, ok bool) {
	if q.n == 0 {
		return v, false
	}
	c := q.head
	v = c.items[q.first]
	var zero T
	c.items[q.first] = zero
	q.first++
	q.n--
	switch {
	case q.n == 0:
		// Empty, so head == tail (a tail chunk always holds the back
		// item): start the chunk over.
		q.first, q.last = 0, 0
	case q.first == chunkSize:
		q.head, q.first = c.next, 0
		c.next = nil
		q.recycle(c)
	}
	return v, true
}

// Each calls fn with each item from front to back, until fn returns false.
// fn must not change the queue.
func (q *Queue[T]) Each(fn func(*T) bool) {
	if q.n == 0 {
		return
	}
	for c, i := q.head, q.first; ; {
		end := chunkSize
		if c == q.tail {
			end = q.last
		}
		for ; i < end; i++ {
			if !fn(&c.items[i]) {
				return
			}
		}
		if c == q.tail {
			return
		}
		c, i = c.next, 0
	}
}

// Clear empties the queue and gives back all its memory.
func (q *Queue[T]) Clear() { *q = Queue[T]{} }

// newChunk returns a spare chunk, or a new one.
func (q *Queue[T]) newChunk() *chunk[T] {
	if c := q.spare; c != nil {
		q.spare, c.next = c.next, nil
		q.spares--
		return c
	}
	return new(chunk[T])
}

// recycle keeps a drained chunk (all its slots zeroed by Pop) as a spare,
// or lets the garbage collector have it when maxSpare are kept already.
func (q *Queue[T]) recycle(c *chunk[T]) {
	if q.spares < maxSpare {
		c.next = q.spare
		q.spare = c
		q.spares++
	}
}
