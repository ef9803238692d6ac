package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"kloop.dev/kloop/apiserver/internal/jsontree"
	"kloop.dev/kloop/apiserver/storage"
)

// watch serves a watch as a chunked stream of JSON watch events.
func (s *Server) watch(w http.ResponseWriter, r *http.Request, k *kind, ns string, q url.Values) error {
	pred, err := s.predicate(k, q)
	if err != nil {
		return err
	}
	if err := listOptions(q, true); err != nil {
		return err
	}
	rvParam := q.Get("resourceVersion")
	rv, err := parseRV(rvParam)
	if err != nil {
		return serverError(err) // kube-apiserver answers this one with a 500

	}
	if err := k.checkKey(ns, ""); err != nil {
		return err
	}
	bookmarks := boolParam(q, "allowWatchBookmarks")
	opts := storage.WatchOptions{Namespace: ns, Predicate: pred}
	if bookmarks {
		opts.BookmarkInterval = s.opts.BookmarkInterval
	}
	switch {
	case q.Has("sendInitialEvents"):
		initial := boolParam(q, "sendInitialEvents")
		if rv > s.store.Revision() {
			return &storage.TooLargeError{Requested: rv, Current: s.store.Revision()}
		}
		if initial {
			opts.SendInitialEvents, opts.InitialEventsEnd = true, bookmarks
		} else {
			opts.Revision = max(rv, s.store.Revision())
			if rvParam != "" && rvParam != "0" {
				opts.Revision = rv
			}
		}
	case rvParam == "" || rvParam == "0":
		// Legacy: the current state as ADDED events, then changes; with
		// bookmarks, kube-apiserver ends the initial events with the
		// initial-events-end bookmark here too.
		opts.SendInitialEvents, opts.InitialEventsEnd = true, bookmarks
	default:
		opts.Revision = rv
	}
	if stale := s.readAt(r); stale > 0 && (opts.SendInitialEvents || rvParam == "" || rvParam == "0") {
		// A stale view (intercept.go): the state at stale, then what
		// followed.
		if opts.SendInitialEvents && rv > stale {
			return &storage.TooLargeError{Requested: rv, Current: stale}
		}
		opts.Revision = stale
	}
	timeout := s.opts.WatchTimeout
	if q.Has("timeoutSeconds") {
		n, err := strconv.ParseInt(q.Get("timeoutSeconds"), 10, 64)
		if err != nil {
			return badRequest("%v", err) // kube-apiserver's message
		}
		if n < 0 {
			return badRequest("invalid timeoutSeconds %d", n)
		}
		if n > 0 {
			timeout = time.Duration(min(n, 1<<31)) * time.Second
		}
	}
	table, isTable := wantsTable(w, r)
	md, isMeta := wantsMetadata(w)
	if isMeta && md.list {
		return md.notAcceptable(k, true)
	}
	if !isMeta {
		md = metadataOnly{}
	}
	watcher, err := s.store.Watch(k.storageResource, opts)
	expired := errors.Is(err, storage.ErrExpired)
	if err != nil && !expired {
		return err
	}
	// The encoding negotiated must have a stream form (kube-apiserver
	// checks once it has its watch).
	pb := false
	switch answerOf(w).format {
	case formatYAML:
		return notAcceptable(true)
	case formatProtobuf:
		pb = true
	}

	h := w.Header()
	h.Set("Content-Type", "application/json") // Table events too, as kube-apiserver
	if pb {
		h.Set("Content-Type", protobufContentType+";stream=watch")
	}
	h.Set("Cache-Control", "no-cache, private")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	ww, _ := w.(WatchEventWriter) // an Interceptor's (intercept.go)
	if expired {
		// kube-apiserver's watch cache answers an expired revision with an
		// ERROR event carrying 410 Expired, on a successful response.
		st := &apierrors.NewResourceExpired(expiredWatchMessage(k, err)).ErrStatus
		st.Kind, st.APIVersion = "Status", "v1"
		var b []byte
		if pb {
			obj, err := appendEnveloped(nil, "v1", "Status", st)
			if err != nil {
				return nil
			}
			b = appendWatchEvent(nil, "ERROR", obj)
		} else {
			b, _ = json.Marshal(metav1.WatchEvent{Type: "ERROR", Object: rawJSON(st)})
			b = append(b, '\n')
		}
		if ww != nil {
			ww.WatchEvent(WatchEvent{Type: "ERROR"})
		}
		_, _ = w.Write(b)
		_ = rc.Flush()
		return nil
	}
	_ = rc.Flush()

	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	if k.crd != nil && k.crd.gone != nil {
		// The watch ends when the CRD's kind stops being served.
		go func() {
			select {
			case <-k.crd.gone:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	var buf bytes.Buffer
	var deadlineSet time.Time
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }() // the connection may serve more requests
	for {
		ev, err := watcher.Next(ctx)
		if err != nil {
			if errors.Is(err, storage.ErrWatcherTooSlow) {
				s.opts.Logger.Debug("apiserver: closing a slow watch", "resource", k.gvr.String(), "err", err)
			}
			return nil // end of the stream; the client re-watches from its last revision
		}
		var frame []byte
		if pb {
			frame, err = s.protobufFrame(&buf, k, ev, md)
		} else {
			frame, err = s.frame(&buf, k, ev, table, isTable, md)
		}
		if err != nil {
			s.opts.Logger.Error("apiserver: encoding a watch event", "resource", k.gvr.String(), "err", err)
			return nil
		}
		if ww != nil {
			ww.WatchEvent(WatchEvent{Type: string(ev.Type), Revision: ev.Revision, Initial: ev.Initial, InitialEventsEnd: ev.InitialEventsEnd})
		}
		// A client that stops reading must not hold this goroutine forever:
		// writes that block longer than slowClientTimeout end the watch.
		if now := time.Now(); now.Sub(deadlineSet) > time.Second {
			_ = rc.SetWriteDeadline(now.Add(slowClientTimeout))
			deadlineSet = now
		}
		if _, err := w.Write(frame); err != nil {
			return nil
		}
		if !watcher.Pending() {
			if err := rc.Flush(); err != nil {
				return nil
			}
		}
	}
}

// expiredWatchMessage is kube-apiserver's message for a watch from a
// revision older than the history: its etcd storage's for kinds it does not
// cache (core/v1 events), its watch cache's for the others.
func expiredWatchMessage(k *kind, err error) string {
	var ee *storage.ExpiredError
	if !k.watchCached() || !errors.As(err, &ee) {
		return "The resourceVersion for the provided watch is too old."
	}
	return fmt.Sprintf("too old resource version: %d (%d)", ee.Requested, ee.Oldest)
}

// slowClientTimeout bounds how long a watch waits for a client that does not
// read; past it the watch ends (the storage ring already bounds how far a
// watcher may lag behind the writers).
const slowClientTimeout = 30 * time.Second

// frame returns the wire form of one event: the shared pre-encoded frame when
// the stored form is the served form, else an encoding into buf.
func (s *Server) frame(buf *bytes.Buffer, k *kind, ev *storage.Event, table tableOptions, isTable bool, md metadataOnly) ([]byte, error) {
	if ev.Type != storage.Bookmark && !isTable && md.version == "" && !ev.LeftSelection && k.servesAsIs(ev.Object) {
		return ev.Frame(), nil
	}
	buf.Reset()
	buf.WriteString(`{"type":"`)
	buf.WriteString(string(ev.Type))
	buf.WriteString(`","object":`)
	if err := s.writeEventObject(buf, k, ev, table, isTable, md); err != nil {
		return nil, err
	}
	buf.WriteString("}\n")
	return buf.Bytes(), nil
}

// writeEventObject writes the JSON of an event's object to buf, in the
// form the watch asked for.
func (s *Server) writeEventObject(buf *bytes.Buffer, k *kind, ev *storage.Event, table tableOptions, isTable bool, md metadataOnly) error {
	switch {
	case ev.Type == storage.Bookmark:
		m := map[string]any{"resourceVersion": formatRV(ev.Revision)}
		if ev.InitialEventsEnd {
			m["annotations"] = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
		}
		kind, apiVersion := k.kind, k.apiVersion()
		if md.version != "" {
			kind, apiVersion = "PartialObjectMetadata", md.apiVersion()
		}
		b, err := json.Marshal(map[string]any{"kind": kind, "apiVersion": apiVersion, "metadata": m})
		if err != nil {
			return err
		}
		buf.Write(b)
	case ev.LeftSelection && ev.Prev != nil:
		// As kube-apiserver's watch cache: an object that left the
		// selection is shown as it was when it matched, at the revision
		// of the change.
		m, err := s.served(k, ev.Prev)
		if err != nil {
			return err
		}
		meta(m)["resourceVersion"] = formatRV(ev.Revision)
		if isTable {
			o := *ev.Prev
			if o.Data, err = json.Marshal(m); err != nil {
				return err
			}
			if err := s.writeTableRow(buf, k, &o, ev.Revision, table); err != nil {
				return err
			}
			break
		}
		if md.version != "" {
			m = md.of(m)
		}
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		buf.Write(b)
	case isTable:
		if err := s.writeTableRow(buf, k, ev.Object, ev.Revision, table); err != nil {
			return err
		}
	case md.version != "":
		m, err := s.served(k, ev.Object)
		if err != nil {
			return err
		}
		// jsontree encodes a JSON tree as json.Marshal does, without its
		// reflection: metadata-only watches (every resource the garbage
		// collector follows) pay it once per event and watcher.
		b, err := jsontree.Append(buf.AvailableBuffer(), md.of(m))
		if err != nil {
			return err
		}
		buf.Write(b)
	default:
		b, err := s.output(k, ev.Object)
		if err != nil {
			return err
		}
		buf.Write(b)
	}
	return nil
}

// writeTableRow writes o as the Table of a watch event at revision rv.
func (s *Server) writeTableRow(buf *bytes.Buffer, k *kind, o *storage.Object, rv int64, table tableOptions) error {
	t, err := s.table(k, []*storage.Object{o}, metav1.ListMeta{ResourceVersion: formatRV(rv)}, table)
	if err != nil {
		return err
	}
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	buf.Write(b)
	return nil
}

// rawJSON encodes v for a RawExtension.
func rawJSON(v any) (out runtime.RawExtension) {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte("{}")
	}
	out.Raw = b
	return out
}
