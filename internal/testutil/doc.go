// Package testutil holds the helpers kloop's tests share: Eventually polls
// for a condition, SyncBuffer collects a logger's output written from other
// goroutines, Provider is the recording test double of the stages'
// metrics providers (workqueue, controller, leaderelection), and
// DelayWatches makes a transport whose watches lag the server (a cache
// behind its own writes).
//
// It imports no kloop package, so the tests of every package, internal or
// external, may use it.
package testutil
