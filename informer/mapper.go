package informer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	irest "kloop.dev/kloop/internal/rest"
)

// Mapper maps a kind to its resource and scope. The Factory's default
// discovery mapper (NewDiscoveryMapper) implements it; StaticMapper adapts
// a meta.RESTMapper such as meta.DefaultRESTMapper, filled by hand.
type Mapper interface {
	// RESTMapping returns the mapping of gk in the first of versions that
	// the server serves (the group's preferred version if none is given).
	// It may ask the server, and then returns when ctx ends with an error
	// wrapping ctx's. An unknown kind is an error for which
	// meta.IsNoMatchError is true.
	RESTMapping(ctx context.Context, gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error)
}

// StaticMapper returns m as a Mapper, for a meta.RESTMapper that needs no
// server (meta.DefaultRESTMapper, filled by hand):
//
//	m := meta.NewDefaultRESTMapper(nil)
//	m.Add(widgetGVK, meta.RESTScopeNamespace)
//	f, err := informer.NewFactory(cfg, informer.FactoryOptions{Mapper: informer.StaticMapper(m)})
//
// Its RESTMapping ignores ctx: m's answer is what m.RESTMapping returns.
func StaticMapper(m meta.RESTMapper) Mapper { return staticMapper{m} }

type staticMapper struct{ m meta.RESTMapper }

func (s staticMapper) RESTMapping(_ context.Context, gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if isNil(s.m) {
		return nil, errors.New("informer: StaticMapper(nil) maps nothing")
	}
	return s.m.RESTMapping(gk, versions...)
}

// NewDiscoveryMapper returns a Mapper that reads the server's discovery
// documents (/api/v1, /apis/<group>/<version>, and /apis/<group> for a
// group's preferred version) as needed and caches them. A kind missing
// from a cached document (a CRD created since) makes it read that document
// again. client is the HTTP client to use (nil: rest.HTTPClientFor(cfg)).
// Each request is bounded by the client's Timeout (rest.Config.Timeout),
// or by 32 s when it has none, as client-go's discovery client.
//
// Cached mappings are served without a lock, so that a slow discovery
// request never delays the reads of kinds already known. At most one
// request per document runs at a time: concurrent misses of one group
// version wait for the same request, each within its own ctx; a caller
// whose ctx ends stops waiting without ending the request for the others
// (the request ends when nobody waits for it any more).
func NewDiscoveryMapper(cfg *rest.Config, client *http.Client) (Mapper, error) {
	if cfg == nil {
		return nil, errors.New("informer: nil rest.Config")
	}
	if client == nil {
		c, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return nil, fmt.Errorf("informer: HTTP client for config: %w", err)
		}
		client = c
	}
	base, err := irest.BaseURL(cfg)
	if err != nil {
		return nil, fmt.Errorf("informer: server URL: %w", err)
	}
	m := &discoveryMapper{
		client:    client,
		base:      base,
		userAgent: irest.UserAgent(cfg),
		timeout:   discoveryTimeout,
		flights:   map[flightKey]*flight{},
	}
	m.known.Store(&discovered{byGV: map[schema.GroupVersion]map[string]*meta.RESTMapping{}, preferred: map[string]string{}})
	return m, nil
}

// discoveryTimeout bounds each discovery request, as client-go's discovery
// client does when the config sets no Timeout.
const discoveryTimeout = 32 * time.Second

type discoveryMapper struct {
	client    *http.Client
	base      *url.URL
	userAgent string
	// timeout bounds each discovery request (discoveryTimeout) when client
	// has no Timeout of its own.
	timeout time.Duration

	// known is what discovery has read so far. It is never modified: a
	// request that brings a document stores a new copy (under mu), and
	// RESTMapping reads it without any lock.
	known atomic.Pointer[discovered]

	// mu guards flights and the waiters and finished fields of every
	// flight, and orders the copy-on-write replacements of known (load,
	// copy, store). It is never held during a request.
	mu sync.Mutex
	// flights holds the request in progress for each discovery document:
	// at most one.
	flights map[flightKey]*flight
}

// flightKey names a discovery document: a group version's (/api/v1,
// /apis/<group>/<version>) or, with group set, a group's (/apis/<group>).
type flightKey struct {
	path  string
	group bool
}

// discovered is a snapshot of the discovery documents read; immutable once
// stored in discoveryMapper.known.
type discovered struct {
	// byGV holds the kinds of each group version read, by kind: empty for
	// a group version the server does not serve (404).
	byGV map[schema.GroupVersion]map[string]*meta.RESTMapping
	// preferred holds the preferred version of each group read.
	preferred map[string]string
}

// flight is one discovery request, shared by the callers that wait for it.
type flight struct {
	// done is closed when the request has ended, after err is set and
	// known holds what it brought.
	done chan struct{}
	err  error
	// cancel ends the request (its context is detached from the callers').
	cancel context.CancelFunc
	// waiters counts the callers waiting for done; the last one to give
	// up (its ctx ended) before done cancels the request. Guarded by
	// discoveryMapper.mu, as is finished (the request has ended).
	waiters  int
	finished bool
}

func (m *discoveryMapper) RESTMapping(ctx context.Context, gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if len(versions) == 0 || (len(versions) == 1 && versions[0] == "") {
		v, err := m.preferredVersion(ctx, gk.Group)
		if err != nil {
			return nil, err
		}
		versions = []string{v}
	}
	for _, v := range versions {
		gv := schema.GroupVersion{Group: gk.Group, Version: v}
		if mp := m.known.Load().byGV[gv][gk.Kind]; mp != nil {
			return mp, nil
		}
		mp, err := m.refresh(ctx, gv, gk.Kind)
		if err != nil {
			return nil, err
		}
		if mp != nil {
			return mp, nil
		}
	}
	return nil, &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: versions}
}

// refresh reads gv's document again, because kind was not in the cached
// one, and returns kind's mapping in it (nil when absent).
func (m *discoveryMapper) refresh(ctx context.Context, gv schema.GroupVersion, kind string) (*meta.RESTMapping, error) {
	p := path.Join("/apis", gv.Group, gv.Version)
	if gv.Group == "" {
		p = path.Join("/api", gv.Version)
	}
	lookup := func(d *discovered) bool { return d.byGV[gv][kind] != nil }
	err := m.await(ctx, flightKey{path: p}, lookup, func(ctx context.Context) (func(*discovered), error) {
		kinds, err := m.fetchGV(ctx, p, gv)
		if err != nil {
			return nil, err
		}
		return func(d *discovered) { d.byGV[gv] = kinds }, nil
	})
	if err != nil {
		return nil, err
	}
	return m.known.Load().byGV[gv][kind], nil
}

// preferredVersion returns group's preferred version: "v1" for the core
// group, else the one its /apis/<group> document names (read once, then
// cached).
func (m *discoveryMapper) preferredVersion(ctx context.Context, group string) (string, error) {
	if group == "" {
		return "v1", nil
	}
	if v, ok := m.known.Load().preferred[group]; ok {
		return v, nil
	}
	lookup := func(d *discovered) bool { _, ok := d.preferred[group]; return ok }
	p := path.Join("/apis", group)
	err := m.await(ctx, flightKey{path: p, group: true}, lookup, func(ctx context.Context) (func(*discovered), error) {
		var g metav1.APIGroup
		found, err := m.get(ctx, p, &g)
		if err != nil || !found || g.PreferredVersion.Version == "" {
			return nil, err
		}
		return func(d *discovered) { d.preferred[group] = g.PreferredVersion.Version }, nil
	})
	if err != nil {
		return "", err
	}
	if v, ok := m.known.Load().preferred[group]; ok {
		return v, nil
	}
	return "", &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: group}}
}

// await makes sure that a request for the document key has been answered
// since the call (unless have finds what the caller wants in known first)
// and returns its error. It waits for the request in progress for key, or
// starts one that runs fetch (whose result edits a copy of known). A
// request in progress began before the call: when have does not find in
// its answer what the caller wants, await waits for (or starts) the next
// one, so that a document that changed before the call (a CRD created) is
// read as it is now, as one request per caller would.
func (m *discoveryMapper) await(ctx context.Context, key flightKey, have func(*discovered) bool, fetch func(context.Context) (func(*discovered), error)) error {
	for fresh := false; ; fresh = true {
		f, started := m.join(ctx, key, have, fetch)
		if f == nil {
			return nil // have found it
		}
		if err := m.wait(ctx, key, f); err != nil {
			return err
		}
		if started || fresh || have(m.known.Load()) {
			return nil
		}
	}
}

// join returns the request in progress for key, counting the caller as one
// of its waiters, or a new one running fetch (started true). It returns
// nil when have finds what the caller wants in known (another request
// brought it meanwhile).
func (m *discoveryMapper) join(ctx context.Context, key flightKey, have func(*discovered) bool, fetch func(context.Context) (func(*discovered), error)) (f *flight, started bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if have(m.known.Load()) {
		return nil, false
	}
	if f := m.flights[key]; f != nil {
		f.waiters++
		return f, false
	}
	// The request serves every waiter: it must not end with the first
	// caller's ctx, only with the timeout or when nobody waits.
	rctx := context.WithoutCancel(ctx)
	var cancel context.CancelFunc
	if m.timeout > 0 && m.client.Timeout == 0 {
		// The config's Timeout, when set, bounds it through the client.
		rctx, cancel = context.WithTimeout(rctx, m.timeout)
	} else {
		rctx, cancel = context.WithCancel(rctx)
	}
	f = &flight{done: make(chan struct{}), cancel: cancel, waiters: 1}
	m.flights[key] = f
	go m.run(rctx, key, f, fetch)
	return f, true
}

// run sends the request of f and publishes its answer.
func (m *discoveryMapper) run(ctx context.Context, key flightKey, f *flight, fetch func(context.Context) (func(*discovered), error)) {
	edit, err := fetch(ctx)
	f.cancel()
	m.mu.Lock()
	if err == nil && edit != nil {
		old := m.known.Load()
		next := &discovered{byGV: maps.Clone(old.byGV), preferred: maps.Clone(old.preferred)}
		edit(next)
		m.known.Store(next)
	}
	if m.flights[key] == f {
		delete(m.flights, key)
	}
	f.err = err
	f.finished = true
	m.mu.Unlock()
	close(f.done)
}

// wait waits for f to end, or for ctx: the caller then stops waiting, and
// the request ends if it was the last waiter.
func (m *discoveryMapper) wait(ctx context.Context, key flightKey, f *flight) error {
	select {
	case <-f.done:
		return f.err
	case <-ctx.Done():
	}
	m.mu.Lock()
	if !f.finished {
		if f.waiters--; f.waiters == 0 {
			// Nobody is left to use the answer: end the request, and
			// let the next caller start a new one.
			if m.flights[key] == f {
				delete(m.flights, key)
			}
			f.cancel()
		}
	}
	m.mu.Unlock()
	err := ctx.Err()
	if cause := context.Cause(ctx); cause != err {
		return fmt.Errorf("informer: discovery %s: %w (%w)", key.path, err, cause)
	}
	return fmt.Errorf("informer: discovery %s: %w", key.path, err)
}

// fetchGV reads the discovery document of gv at p: its kinds by name,
// empty when the server does not serve gv.
func (m *discoveryMapper) fetchGV(ctx context.Context, p string, gv schema.GroupVersion) (map[string]*meta.RESTMapping, error) {
	var list metav1.APIResourceList
	found, err := m.get(ctx, p, &list)
	if err != nil {
		return nil, err
	}
	kinds := map[string]*meta.RESTMapping{}
	if found {
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") || r.Kind == "" {
				continue // a subresource
			}
			scope := meta.RESTScopeRoot
			if r.Namespaced {
				scope = meta.RESTScopeNamespace
			}
			kinds[r.Kind] = &meta.RESTMapping{
				Resource:         gv.WithResource(r.Name),
				GroupVersionKind: gv.WithKind(r.Kind),
				Scope:            scope,
			}
		}
	}
	return kinds, nil
}

// get decodes the JSON document at p into out; found is false on 404.
// ctx bounds it (join gives it the discovery timeout).
func (m *discoveryMapper) get(ctx context.Context, p string, out any) (found bool, err error) {
	u := *m.base
	u.Path = path.Join(u.Path, p)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return false, fmt.Errorf("informer: discovery %s: %w", p, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", m.userAgent)
	resp, err := m.client.Do(req)
	if err != nil {
		return false, fmt.Errorf("informer: discovery %s: %w", p, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return false, nil
	case resp.StatusCode != http.StatusOK:
		return false, fmt.Errorf("informer: discovery %s: %w", p, irest.ResponseError(resp, "get", schema.GroupResource{}))
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return false, fmt.Errorf("informer: discovery %s: %w", p, err)
	}
	return true, nil
}
