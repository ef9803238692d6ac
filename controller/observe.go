package controller

import (
	"time"

	"kloop.dev/kloop/internal/rctx"
	"kloop.dev/kloop/reconcile"
	"kloop.dev/kloop/reconcile/trigger"
)

// Outcome is how a reconcile ended, by the Result rules.
type Outcome string

// The outcomes of a reconcile.
const (
	OutcomeSuccess      Outcome = "success"      // Result{}, nil
	OutcomeRequeueAfter Outcome = "requeueAfter" // Result{RequeueAfter: d}, nil
	OutcomeError        Outcome = "error"        // an error: requeued with backoff
	OutcomeTerminal     Outcome = "terminal"     // reconcile.Terminal(err): not requeued
)

// ObservationType says what an Observation reports.
type ObservationType uint8

// The observations of a controller.
const (
	// Reconciled: a reconcile ran (Triggers, Start, Duration, Outcome,
	// Err, Writes).
	Reconciled ObservationType = iota + 1
	// StaleSkip: the key was skipped and requeued, the cache behind its
	// last reconcile's writes (Triggers: the causes it came with).
	StaleSkip
	// StaleTimeout: the key waited ReadYourOwnWritesTimeout for the
	// cache and is reconciled anyway.
	StaleTimeout
	// HotLoopReported and FightingWritersReported: the loop detector
	// reported the key (Message).
	HotLoopReported
	FightingWritersReported
)

var observationNames = [...]string{"", "Reconciled", "StaleSkip", "StaleTimeout", "HotLoop", "FightingWriters"}

func (t ObservationType) String() string {
	if int(t) < len(observationNames) && t > 0 {
		return observationNames[t]
	}
	return "Unknown"
}

// Observer is told what a controller does with each key: each reconcile
// with its triggers, result and writes, and its waits and reports. It
// feeds live views (the manager's, manager.Options.LiveViewBindAddress).
// Observe is called on the worker's goroutine, synchronously: it must be
// fast and must not block, and it must copy what it keeps of o, which the
// controller reuses after the call.
type Observer interface {
	Observe(controller string, o *Observation)
}

// Observation is one thing a controller did with a key.
type Observation struct {
	Type    ObservationType
	Request reconcile.Request
	// ReconcileID is the reconcile's ID (Reconciled).
	ReconcileID string
	// Triggers is why the key was handed out: the events merged into this
	// reconcile (nil with Options.DisableTriggers). The worker's record:
	// valid only during Observe.
	Triggers *trigger.Record
	// Start is when the reconcile began, or when the observation was made;
	// Duration how long the reconcile took.
	Start    time.Time
	Duration time.Duration
	// Outcome, Err and RequeueAfter: how the reconcile ended.
	Outcome      Outcome
	Err          error
	RequeueAfter time.Duration
	// Writes are the writes the reconcile made through kloop's client.
	Writes []Write
	// Message explains a report.
	Message string
}

// Write is a write a reconcile made.
type Write struct {
	// Kind is the object's kind ("ConfigMap", "Widget.example.com").
	Kind string `json:"kind"`
	// Subresource is "status" for a status write, else "".
	Subresource string `json:"subresource,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	Name        string `json:"name"`
	// ResourceVersion is what the write produced ("" for a deletion).
	ResourceVersion string `json:"resourceVersion,omitempty"`
	Deleted         bool   `json:"deleted,omitempty"`
}

// writesOf converts a reconcile's writes for an Observation, reusing dst.
func writesOf(dst []Write, ws []rctx.Write) []Write {
	dst = dst[:0]
	for _, w := range ws {
		dst = append(dst, Write{Kind: w.Kind.String(), Subresource: w.Subresource, Namespace: w.Namespace,
			Name: w.Name, ResourceVersion: w.ResourceVersion, Deleted: w.Deleted})
	}
	return dst
}
