// Package chunkq is the first-in first-out buffer under kloop's FIFO and
// each informer handler's buffer: a list of fixed-size chunks that grows one
// chunk at a time and gives drained chunks back, so that a backlog never
// copies what it holds and costs at most one item's worth of allocation per
// item, however often it builds up and drains.
package chunkq
