package informer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	irest "kloop.dev/kloop/internal/rest"
)

// Mapper maps a kind to its resource and scope. meta.DefaultRESTMapper
// (filled by hand, no server needed) and the Factory's default discovery
// mapper implement it.
type Mapper interface {
	// RESTMapping returns the mapping of gk in the first of versions that
	// the server serves (the group's preferred version if none is given).
	// An unknown kind is an error for which meta.IsNoMatchError is true.
	RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error)
}

// NewDiscoveryMapper returns a Mapper that reads the server's discovery
// documents (/api/v1, /apis/<group>/<version>) as needed, one request per
// group version, and caches them. A kind missing from a cached document
// (a CRD created since) makes it read that document again. client is the
// HTTP client to use (nil: rest.HTTPClientFor(cfg)). Each request is
// bounded by the client's Timeout (rest.Config.Timeout), or by 32 s when it
// has none, as client-go's discovery client.
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
	return &discoveryMapper{client: client, base: base, userAgent: irest.UserAgent(cfg), timeout: discoveryTimeout, byGV: map[schema.GroupVersion]map[string]*meta.RESTMapping{}}, nil
}

// discoveryTimeout bounds each discovery request, as client-go's discovery
// client does when the config sets no Timeout.
const discoveryTimeout = 32 * time.Second

type discoveryMapper struct {
	client    *http.Client
	base      *url.URL
	userAgent string
	// timeout bounds each discovery request (discoveryTimeout).
	timeout time.Duration

	// mu guards byGV; it is held during discovery requests so that
	// concurrent misses cause one request.
	mu   sync.Mutex
	byGV map[schema.GroupVersion]map[string]*meta.RESTMapping // by kind
	// preferred caches each group's preferred version.
	preferred map[string]string
}

func (m *discoveryMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ctx := context.Background()
	if len(versions) == 0 || (len(versions) == 1 && versions[0] == "") {
		v, err := m.preferredLocked(ctx, gk.Group)
		if err != nil {
			return nil, err
		}
		versions = []string{v}
	}
	for _, v := range versions {
		gv := schema.GroupVersion{Group: gk.Group, Version: v}
		if mp := m.byGV[gv][gk.Kind]; mp != nil {
			return mp, nil
		}
		kinds, err := m.fetchLocked(ctx, gv)
		if err != nil {
			return nil, err
		}
		if mp := kinds[gk.Kind]; mp != nil {
			return mp, nil
		}
	}
	return nil, &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: versions}
}

func (m *discoveryMapper) preferredLocked(ctx context.Context, group string) (string, error) {
	if group == "" {
		return "v1", nil
	}
	if v, ok := m.preferred[group]; ok {
		return v, nil
	}
	var g metav1.APIGroup
	found, err := m.get(ctx, path.Join("/apis", group), &g)
	if err != nil {
		return "", err
	}
	if !found || g.PreferredVersion.Version == "" {
		return "", &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: group}}
	}
	if m.preferred == nil {
		m.preferred = map[string]string{}
	}
	m.preferred[group] = g.PreferredVersion.Version
	return g.PreferredVersion.Version, nil
}

// fetchLocked reads the discovery document of gv; a group version the
// server does not serve gives an empty (cached) map.
func (m *discoveryMapper) fetchLocked(ctx context.Context, gv schema.GroupVersion) (map[string]*meta.RESTMapping, error) {
	p := path.Join("/apis", gv.Group, gv.Version)
	if gv.Group == "" {
		p = path.Join("/api", gv.Version)
	}
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
	m.byGV[gv] = kinds
	return kinds, nil
}

// get decodes the JSON document at p into out; found is false on 404.
func (m *discoveryMapper) get(ctx context.Context, p string, out any) (found bool, err error) {
	if m.timeout > 0 && m.client.Timeout == 0 {
		// The config's Timeout, when set, bounds it through the client.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, m.timeout)
		defer cancel()
	}
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
