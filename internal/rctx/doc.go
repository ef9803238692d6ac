// Package rctx is the context of one reconcile, shared by reconcile (which
// reads it: IDFrom, LoggerFrom) and controller (which makes one per
// reconcile). The controller hands over its reconcile ID as the 16 random
// bytes of a UUID and the text is made only when somebody asks for it: a
// controller that does not log formats no ID at all.
package rctx
