// Package reflector keeps a store in step with the objects of one kind (and
// scope) on a Kubernetes API server: it lists them, then watches from the
// list's resourceVersion, and pushes every change into a Store — in kloop,
// the informer's FIFO.
//
// # Use
//
//	lw, err := reflector.NewRESTListerWatcher[*corev1.Pod](cfg,
//		corev1.SchemeGroupVersion.WithResource("pods"), "default", reflector.RESTOptions[*corev1.Pod]{})
//	r, err := reflector.New[*corev1.Pod](lw, store, reflector.Options{Name: "pods"})
//	go r.Run(ctx) // until ctx is cancelled
//
// Store is five methods (Add, Update, Delete, Replace, Bookmark) and
// ListerWatcher two (List one page, open a Watch); both are easy to fake.
//
// # The state machine
//
// The reflector is an explicit state machine: a state value and one step
// function, step(ctx, state) state, which performs a state and returns the
// next one. Run only loops over step until the state is Stopped. Time comes
// from Options.Clock, so tests drive every path without sleeping.
//
//	      streaming lists on                          streaming lists off
//	              │                                            │
//	              ▼                                            ▼
//	      ┌──────────────┐  rejected (422, 400, …), or  ┌───────────┐
//	 ┌───▶│ WatchListing │─────────────────────────────▶│  Listing  │◀───┐
//	 │    └──────────────┘  3 streams without the end   └───────────┘    │
//	 │           │          bookmark (remembered)             │          │
//	 │           │ initial-events-end bookmark:               │ last     │
//	 │           │ one Replace, keep the stream               │ page:    │
//	 │           ▼                                            ▼ Replace  │
//	 │    ┌──────────────────────────────────────────────────────────┐   │
//	 │    │ Watching                                                 │   │
//	 │    │ ADDED / MODIFIED / DELETED / BOOKMARK → store; RV moves  │   │
//	 │    │ stream ended (timeoutSeconds, EOF) → reopen from last RV │   │
//	 │    └──────────────────────────────────────────────────────────┘   │
//	 │       │                        │                        │         │
//	 └───────┘ 410 Gone / Expired,    │ 429, 500, refused,     └─────────┘
//	   or too large RV: relist,       │ broken stream,      410 Gone / Expired,
//	   streaming on (RV="")           │ very short watch,   or too large RV:
//	                                  │ silent watch        relist, streaming
//	                                  ▼                     off (RV="")
//	                            ┌───────────┐
//	                            │  Backoff  │──▶ back to the state that failed
//	                            └───────────┘    (Watching: same RV, no relist)
//
//	Every state: ctx cancelled ──▶ Stopped (Run returns; an open watch is stopped).
//
// Listing also goes to Backoff when a list fails or is refused as older
// than the position reached (and comes back to Listing), and WatchListing
// when a streaming list fails without being rejected, is refused as older,
// or goes silent (and comes back to WatchListing).
//
// # resourceVersion semantics
//
// The rules are those of kube-apiserver and client-go:
//   - The first list asks resourceVersion="0" (any version; the watch cache
//     answers) with limit=PageSize; the following pages send only limit and
//     continue. The pages are handed to the store as one Replace at the
//     first page's resourceVersion.
//   - A streaming list asks sendInitialEvents=true,
//     resourceVersionMatch=NotOlderThan, allowWatchBookmarks=true at
//     resourceVersion="" (a consistent read). The initial events (ADDED, and
//     any MODIFIED/DELETED that arrive before the end) are collected and
//     handed to the store as one Replace when the bookmark annotated
//     k8s.io/initial-events-end: "true" arrives; the same stream then goes
//     on as the watch.
//   - A watch asks for the last resourceVersion seen, allowWatchBookmarks
//     and a timeoutSeconds drawn at random in [5 min, 10 min]. Bookmarks
//     move the position (and are passed to Store.Bookmark).
//   - When the server says the position is gone — 410 Gone/Expired as an
//     HTTP status or as an ERROR event, "too large resource version", or an
//     expired continue token — the reflector relists with
//     resourceVersion="" (a consistent read) and hands the result over as
//     one Replace; the store reports every listed object as replaced and
//     every object it held that is missing as deleted. (client-go relists
//     at the last resourceVersion first after a watch 410; kloop goes
//     straight to the consistent read.) The relist starts at once when the
//     reflector had been healthy for two minutes, and after a backoff wait
//     otherwise, so that a server answering 410 again and again gets no
//     storm of lists.
//   - The store never goes back in time. A list or streaming list whose
//     resourceVersion is older than the position the reflector has
//     reached (its LastSyncResourceVersion: the last list, event or
//     bookmark handed to the store) is refused: the store is not called,
//     the position stays, the error reported wraps ErrStaleList, and the
//     list is retried after a backoff wait until the server answers at
//     that position or later. That happens when the server that answers
//     is behind the one that answered before — after a failover, the
//     "too large resource version" case. resourceVersions are compared
//     as k8s.io/apimachinery/pkg/util/resourceversion compares them
//     (KEP-5504: decimal integers, as kube-apiserver's are; the same order
//     KEP-5647's staleness checks rely on); the first list (nothing reached
//     yet: resourceVersion="0" may be served from an older watch cache) and
//     resourceVersions that are not comparable (opaque ones from another
//     kind of server) are accepted as they come. Watch events are not
//     compared: a watch delivers them in the server's order after the
//     position it started from.
//   - Anything else — 429 (honouring Retry-After), 500, a refused
//     connection, a broken stream, a watch that ends at once without any
//     event, a silent watch (below) — waits a backoff and retries the same
//     request: a watch from the same resourceVersion, never a relist, so an
//     unhealthy server is not hit by a storm of full lists.
//
// # Silent watches
//
// A server ends every watch at the timeoutSeconds it was asked for, so a
// watch that has sent nothing — no event, no bookmark — for longer than
// that plus Options.WatchSilenceMargin (default 30 s, or MinWatchTimeout if
// that is shorter) is hung: a stalled proxy, a peer gone without closing
// the connection, a server that ignores the timeout. The reflector stops
// it (each watch runs under a context of its own, which a watchdog
// cancels: that ends a read blocked on the connection), logs it, reports
// an error wrapping ErrSilentWatch to Metrics.ObserveWatch, and after a
// backoff wait watches again from its last resourceVersion — events and
// bookmarks both move it — with no relist and no gap. The same holds for
// a streaming list (it is streamed again) and for a watch request the
// server never answers. Only time spent waiting on the stream counts, not
// time the reflector spends handing events to a slow store. The watchdog
// looks at its watch sixteen times per timeout+margin, so a silent watch
// is given up at most a sixteenth of that late, and the events' path pays
// two atomic stores per event, no clock reading. With the default timeouts
// (5 to 10 minutes) a hung watch is replaced after 5.5 to about 11
// minutes of silence. A watch that keeps sending events or bookmarks is
// never given up, however long it lasts.
//
// Backoff: the base wait starts at 800 ms and doubles up to 30 s; each wait
// adds up to 100 % random jitter (client-go's parameters); two minutes
// without a failure reset it. A server's Retry-After wins when it is longer.
//
// # Streaming list support
//
// Streaming lists (the WatchList feature, beta and on by default since
// Kubernetes 1.32) are used by default. A server that does not support them
// answers 422 Invalid ("sendInitialEvents is forbidden for watch unless the
// WatchList feature gate is enabled"; servers before 1.27 reject
// resourceVersionMatch on a watch the same way); 400, 405, 406 and 415 are
// taken the same way. The reflector then lists and watches for the rest of
// its life. A server that silently ignores sendInitialEvents never sends the
// end bookmark: after three streams in a row that end without it, the
// reflector falls back too.
//
// # REST ListerWatcher
//
// NewRESTListerWatcher speaks the Kubernetes REST protocol over a
// *rest.Config (client-go's transport and authentication only), for typed
// objects, *unstructured.Unstructured or *metav1.PartialObjectMetadata. It
// decodes list pages and the watch stream itself (JSON, or protobuf: see
// below), and turns error
// responses into *apierrors.StatusError (so errors.As, apierrors.IsGone,
// IsResourceExpired and IsTooManyRequests work), with Retry-After in
// Details.RetryAfterSeconds.
//
// # Client-side rate limit
//
// As client-go's REST client does, the REST ListerWatcher waits for the
// client-side rate limit of its rest.Config before every request — each
// page of a list, each watch or streaming list: cfg.RateLimiter if set
// (one limiter shared by everything built from that config), else a token
// bucket of cfg.QPS with cfg.Burst (default 10) when QPS > 0, owned by
// the lister. QPS 0 or negative means no limit, controller-runtime's
// convention (client-go would use 5 qps); kube-apiserver's API Priority
// and Fairness protects the server either way. The wait takes the
// request's context: cancelling it ends the wait with an error wrapping
// the context's, and a reflector stops as it does during any request.
//
// A page of typed objects is cut into its items as it is read (chunk by
// chunk, never joined into one buffer), and its items are decoded with
// json-iterator (keys case-sensitive) on up to GOMAXPROCS goroutines while
// the reading goes on, in order: a list is nearly all decoding, and an
// informer's initial list is its time to synced. An item json-iterator
// could read differently from apimachinery (a \u escape — kube-apiserver
// writes <, > and & that way —, invalid UTF-8, a long integer) is decoded by
// apimachinery's own decoder (sigs.k8s.io/json); a type holding interface
// values, or anything malformed, makes the whole page go through it, so
// results and errors are the same (fuzzed on objects and whole pages).
// metav1.Time and resource.Quantity values are read in place by decoders of
// their own, not copied out and decoded twice through their UnmarshalJSON.
//
// A typed watch stream is cut into events as it arrives (a bracket- and
// string-aware scan of a reused read buffer), each event's envelope is read
// by hand and its object decoded by json-iterator the same way, about twice
// as fast as the streaming decoder on small objects (a risky object is
// decoded by apimachinery's decoder, as a list item is). From the first
// event it is unsure of (an ERROR event, an escape in the envelope, a null
// object, one that does not decode, anything malformed or cut) the rest of
// the stream goes to the standard streaming decoder, so events and errors
// are apimachinery's (FuzzTypedWatchMatchesStd).
//
// # Protobuf
//
// With RESTOptions.Protobuf, or a rest.Config whose AcceptContentTypes (or
// ContentType) asks for protobuf as kube-controller-manager's does, lists
// and watches of k8s.io/api types and *metav1.PartialObjectMetadata ask
// for protobuf first, then JSON. A protobuf list is read whole and its
// items decoded by their generated code; a protobuf watch stream is read
// frame by frame (length-prefixed metav1.WatchEvent messages, ERROR events'
// Status included), malformed or cut frames being errors
// (FuzzProtobufWatch). An answer in JSON — custom resources have no
// protobuf form — is decoded as above; unstructured objects are always
// asked for in JSON.
package reflector
