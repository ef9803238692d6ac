package manager

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"kloop.dev/kloop/internal/certreload"
	irest "kloop.dev/kloop/internal/rest"
	"kloop.dev/kloop/internal/selfsigned"
)

// Defaults of the metrics server's options.
const (
	DefaultMetricsCertName = "tls.crt"
	DefaultMetricsKeyName  = "tls.key"
)

// The caches of scrapers' reviews, with controller-runtime's TTLs
// (filters.WithAuthenticationAndAuthorization: k8s.io/apiserver's
// delegating authenticator and authorizer).
const (
	tokenCacheTTL   = time.Minute     // TokenReviews, authenticated or not
	allowCacheTTL   = 5 * time.Minute // SubjectAccessReviews that allowed
	denyCacheTTL    = 30 * time.Second
	reviewTimeout   = 10 * time.Second // one review request
	reviewCacheSize = 1024             // entries per cache
	maxReviewBody   = 1 << 20          // bytes of a review's answer read
)

func (o *Options) setMetricsDefaults() {
	if o.MetricsCertDir == "" {
		return
	}
	if o.MetricsCertName == "" {
		o.MetricsCertName = DefaultMetricsCertName
	}
	if o.MetricsKeyName == "" {
		o.MetricsKeyName = DefaultMetricsKeyName
	}
}

func (o *Options) validateMetrics() []error {
	var errs []error
	if !o.MetricsSecureServing {
		for _, f := range []struct {
			name string
			set  bool
		}{
			{"MetricsCertDir", o.MetricsCertDir != ""},
			{"MetricsTLSOptions", len(o.MetricsTLSOptions) > 0},
			{"MetricsAuth", o.MetricsAuth},
		} {
			if f.set {
				errs = append(errs, fmt.Errorf("%s requires MetricsSecureServing", f.name))
			}
		}
	}
	if o.MetricsCertDir == "" {
		if o.MetricsCertName != "" || o.MetricsKeyName != "" {
			errs = append(errs, errors.New("MetricsCertName and MetricsKeyName require MetricsCertDir"))
		}
	}
	for i, f := range o.MetricsTLSOptions {
		if f == nil {
			errs = append(errs, fmt.Errorf("MetricsTLSOptions[%d] is nil", i))
		}
	}
	return errs
}

// metricsTLSConfig returns the metrics server's TLS configuration: the
// options' changes over TLS 1.2+ with HTTP/2, then the certificate of
// MetricsCertDir, or a self-signed one.
func (m *Manager) metricsTLSConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}}
	for _, f := range m.opts.MetricsTLSOptions {
		f(cfg)
	}
	if cfg.GetCertificate != nil || len(cfg.Certificates) > 0 {
		return cfg, nil
	}
	if dir := m.opts.MetricsCertDir; dir != "" {
		r, err := certreload.New(filepath.Join(dir, m.opts.MetricsCertName), filepath.Join(dir, m.opts.MetricsKeyName), "metrics server", m.log)
		if err != nil {
			return nil, fmt.Errorf("certificate: %w", err)
		}
		cfg.GetCertificate = r.GetCertificate
		return cfg, nil
	}
	now := time.Now()
	cert, _, err := selfsigned.New(now, fmt.Sprintf("localhost@%d", now.Unix()))
	if err != nil {
		return nil, fmt.Errorf("self-signed certificate: %w", err)
	}
	m.log.Info("metrics server: serving a self-signed certificate (set MetricsCertDir in production)")
	cfg.Certificates = []tls.Certificate{cert}
	return cfg, nil
}

// scrapeAuth authenticates the requests to the metrics server with
// TokenReviews and authorizes them with SubjectAccessReviews, as
// controller-runtime's filters.WithAuthenticationAndAuthorization.
type scrapeAuth struct {
	hc   *http.Client
	base *url.URL
	ua   string
	log  *slog.Logger
	now  func() time.Time

	tokens    ttlCache[[sha256.Size]byte, tokenResult]
	decisions ttlCache[string, bool]
}

type tokenResult struct {
	ok   bool
	user authenticationv1.UserInfo
}

// newScrapeAuth returns the filter of cfg's identity. close releases its
// connections.
func newScrapeAuth(cfg *rest.Config, log *slog.Logger) (a *scrapeAuth, close func(), err error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, nil, err
	}
	base, err := irest.BaseURL(cfg)
	if err != nil {
		return nil, nil, err
	}
	a = &scrapeAuth{hc: hc, base: base, ua: irest.UserAgent(cfg), log: log, now: time.Now}
	return a, hc.CloseIdleConnections, nil
}

// wrap puts the authentication and authorization in front of next.
func (a *scrapeAuth) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, ok, err := a.authenticate(r)
		if err != nil {
			a.log.Error("metrics server: authentication failed", "err", err)
			http.Error(w, "Authentication failed", http.StatusInternalServerError)
			return
		}
		if !ok {
			a.log.Debug("metrics server: unauthenticated request", "path", r.URL.Path, "remote", r.RemoteAddr)
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		allowed, reason, err := a.authorize(r, user)
		if err != nil {
			msg := fmt.Sprintf("Authorization for user %s failed", user.Username)
			a.log.Error("metrics server: "+msg, "err", err)
			http.Error(w, msg, http.StatusInternalServerError)
			return
		}
		if !allowed {
			msg := fmt.Sprintf("Authorization denied for user %s", user.Username)
			a.log.Debug("metrics server: "+msg, "reason", reason, "path", r.URL.Path)
			http.Error(w, msg, http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// bearerToken returns the token of an "Authorization: Bearer <token>"
// header, as kube-apiserver reads it.
func bearerToken(r *http.Request) (string, bool) {
	scheme, token, found := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if !found || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	if token == "" || strings.ContainsAny(token, " \t") {
		return "", false
	}
	return token, true
}

func (a *scrapeAuth) authenticate(r *http.Request) (authenticationv1.UserInfo, bool, error) {
	token, ok := bearerToken(r)
	if !ok {
		return authenticationv1.UserInfo{}, false, nil
	}
	key := sha256.Sum256([]byte(token))
	if res, ok := a.tokens.get(key, a.now()); ok {
		return res.user, res.ok, nil
	}
	review := &authenticationv1.TokenReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "authentication.k8s.io/v1", Kind: "TokenReview"},
		Spec:     authenticationv1.TokenReviewSpec{Token: token},
	}
	if err := a.create(r.Context(), "authentication.k8s.io", "tokenreviews", review); err != nil {
		return authenticationv1.UserInfo{}, false, err
	}
	res := tokenResult{ok: review.Status.Authenticated, user: review.Status.User}
	if !res.ok && review.Status.Error != "" {
		a.log.Debug("metrics server: token rejected", "reason", review.Status.Error)
	}
	a.tokens.put(key, res, a.now(), tokenCacheTTL)
	return res.user, res.ok, nil
}

func (a *scrapeAuth) authorize(r *http.Request, u authenticationv1.UserInfo) (bool, string, error) {
	spec := authorizationv1.SubjectAccessReviewSpec{
		User:   u.Username,
		UID:    u.UID,
		Groups: u.Groups,
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{
			Path: r.URL.Path,
			Verb: strings.ToLower(r.Method),
		},
	}
	if len(u.Extra) > 0 {
		spec.Extra = make(map[string]authorizationv1.ExtraValue, len(u.Extra))
		for k, v := range u.Extra {
			spec.Extra[k] = authorizationv1.ExtraValue(v)
		}
	}
	keyJSON, err := json.Marshal(spec) // map keys sorted: a stable key
	if err != nil {
		return false, "", err
	}
	key := string(keyJSON)
	if allowed, ok := a.decisions.get(key, a.now()); ok {
		return allowed, "cached", nil
	}
	review := &authorizationv1.SubjectAccessReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "authorization.k8s.io/v1", Kind: "SubjectAccessReview"},
		Spec:     spec,
	}
	if err := a.create(r.Context(), "authorization.k8s.io", "subjectaccessreviews", review); err != nil {
		return false, "", err
	}
	st := review.Status
	if st.EvaluationError != "" && !st.Allowed && !st.Denied {
		// No decision because the authorizer failed: not cached.
		return false, st.EvaluationError, nil
	}
	ttl := denyCacheTTL
	if st.Allowed {
		ttl = allowCacheTTL
	}
	a.decisions.put(key, st.Allowed, a.now(), ttl)
	return st.Allowed, st.Reason, nil
}

// create POSTs review (a *TokenReview or *SubjectAccessReview) to the API
// server and decodes the answer into it.
func (a *scrapeAuth) create(ctx context.Context, group, resource string, review any) error {
	body, err := json.Marshal(review)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	u := a.base.JoinPath("apis", group, "v1", resource)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", a.ua)
	resp, err := a.hc.Do(req)
	if err != nil {
		return fmt.Errorf("create %s.%s: %w", resource, group, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return irest.ResponseError(resp, "create", schema.GroupResource{Group: group, Resource: resource})
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxReviewBody))
	if err != nil {
		return fmt.Errorf("create %s.%s: %w", resource, group, err)
	}
	if err := json.Unmarshal(data, review); err != nil {
		return fmt.Errorf("create %s.%s: decoding the answer: %w", resource, group, err)
	}
	return nil
}

// ttlCache is a small map whose entries expire; when full it drops the
// expired ones, and then, if still full, everything.
type ttlCache[K comparable, V any] struct {
	mu sync.Mutex // guards m
	m  map[K]ttlEntry[V]
}

type ttlEntry[V any] struct {
	v       V
	expires time.Time
}

func (c *ttlCache[K, V]) get(k K, now time.Time) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	if !ok || !now.Before(e.expires) {
		var zero V
		return zero, false
	}
	return e.v, true
}

func (c *ttlCache[K, V]) put(k K, v V, now time.Time, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[K]ttlEntry[V]{}
	}
	if _, ok := c.m[k]; !ok && len(c.m) >= reviewCacheSize {
		for k, e := range c.m {
			if !now.Before(e.expires) {
				delete(c.m, k)
			}
		}
		if len(c.m) >= reviewCacheSize {
			clear(c.m)
		}
	}
	c.m[k] = ttlEntry[V]{v, now.Add(ttl)}
}

// secureServing is what MetricsSecureServing and MetricsAuth add to the
// metrics server; its zero value adds nothing.
type secureServing struct {
	tls  *tls.Config
	auth *scrapeAuth
	done func()
}

// secureMetrics prepares the metrics server's TLS and authentication, if
// the server is on and asks for them.
func (m *Manager) secureMetrics() (secureServing, error) {
	if disabled(m.opts.MetricsBindAddress) || !m.opts.MetricsSecureServing {
		return secureServing{}, nil
	}
	cfg, err := m.metricsTLSConfig()
	if err != nil {
		return secureServing{}, err
	}
	s := secureServing{tls: cfg}
	if m.opts.MetricsAuth {
		if s.auth, s.done, err = newScrapeAuth(m.cfg, m.log); err != nil {
			return secureServing{}, fmt.Errorf("reviews of scrapers: %w", err)
		}
	}
	return s, nil
}

func (s secureServing) listener(l net.Listener) net.Listener {
	if s.tls == nil {
		return l
	}
	return tls.NewListener(l, s.tls)
}

func (s secureServing) handler(h http.Handler) http.Handler {
	if s.auth == nil {
		return h
	}
	return s.auth.wrap(h)
}

func (s secureServing) release() {
	if s.done != nil {
		s.done()
	}
}
