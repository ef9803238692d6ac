// Package liveview serves the manager's live view of the pipeline
// (manager.Options.LiveViewBindAddress): one web page, embedded in the
// binary (plain HTML, CSS and JavaScript; no build step, nothing fetched
// from elsewhere), that draws each shared informer (watch events/s, FIFO
// depth, cache size) feeding each controller's queue (depth by priority,
// p50/p99 wait), workers (active of the maximum, p50/p99 reconcile time)
// and results (reconciles/s by result, stale skips, hot loops), updated by
// server-sent events once per Options.Interval from the statistics the
// stages already keep (Options.Read: informer.Factory.InformerStats and the
// metrics providers' Each). Percentiles are estimated from the stages'
// histograms over the last Window, as Prometheus' histogram_quantile does.
//
// A Timeline (a controller.Observer) keeps each object's recent history —
// each reconcile with the events merged into it and when each was
// enqueued, its duration, result and writes; the waits for a cache behind
// the object's own writes; hot-loop and fighting-writers reports — in a
// ring per object (TimelineOptions.PerObject) for at most MaxObjects
// objects, the least recently observed forgotten first. The page lists the
// recent objects and shows the timeline of the one selected.
//
// Routes: GET / (the page), /events (the stream), /stats (one frame, JSON),
// /objects?limit=N, /timeline?controller=C&namespace=NS&name=N.
package liveview
