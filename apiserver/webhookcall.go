package apiserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Calling webhooks (the conversion webhooks of CRDs, admission webhooks):
// where a client configuration points, an HTTP client per CA bundle, and
// the POST of a review with kube-apiserver's timeout parameter.

// Bounds of what is read of a webhook's answer: an AdmissionReview's holds
// a patch of one object (at most 3 MiB written), a ConversionReview's one
// object (the server converts objects one by one).
const (
	maxAdmissionResponse  = 16 << 20
	maxConversionResponse = 16 << 20
)

// maxWebhookClients bounds the cached HTTP clients (one per CA bundle and
// server name); past it they are all closed and made again.
const maxWebhookClients = 64

// webhookEndpoint is where one webhook is reached.
type webhookEndpoint struct {
	url *url.URL // https://host:port/path
	// serverName is the name the webhook's certificate must have: the
	// URL's host, or <service>.<namespace>.svc for a Service reference
	// (dialled on loopback: the embedded server runs no cluster network).
	serverName string
	caBundle   []byte
}

// webhookService is a clientConfig.service reference.
type webhookService struct {
	Namespace string  `json:"namespace"`
	Name      string  `json:"name"`
	Path      *string `json:"path,omitempty"`
	Port      *int32  `json:"port,omitempty"`
}

// webhookClientConfig is a webhook's clientConfig, as both kinds of
// webhooks spell it.
type webhookClientConfig struct {
	URL      *string         `json:"url,omitempty"`
	Service  *webhookService `json:"service,omitempty"`
	CABundle []byte          `json:"caBundle,omitempty"`
}

// endpoint resolves a client configuration: a URL as it is; a Service to
// 127.0.0.1 at its port (443 by default), verified as
// <name>.<namespace>.svc, as kube-apiserver names it. The path is cleaned
// as kube-apiserver's REST client cleans it (path.Join: "//p/" is "/p", ""
// is "/").
func (c webhookClientConfig) endpoint() (webhookEndpoint, error) {
	switch {
	case c.URL != nil:
		u, err := url.Parse(*c.URL)
		if err != nil {
			return webhookEndpoint{}, err
		}
		u.Path, u.RawPath = path.Join("/", u.Path), ""
		return webhookEndpoint{url: u, serverName: u.Hostname(), caBundle: c.CABundle}, nil
	case c.Service != nil:
		port := int32(443)
		if c.Service.Port != nil {
			port = *c.Service.Port
		}
		p := ""
		if c.Service.Path != nil {
			p = *c.Service.Path
		}
		u := &url.URL{Scheme: "https", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port))), Path: path.Join("/", p)}
		return webhookEndpoint{url: u, serverName: c.Service.Name + "." + c.Service.Namespace + ".svc", caBundle: c.CABundle}, nil
	}
	return webhookEndpoint{}, errors.New("neither url nor service")
}

// webhookClients caches the HTTP clients of webhooks, by CA bundle and
// server name.
type webhookClients struct {
	mu sync.Mutex // guards m
	m  map[[sha256.Size]byte]*http.Client
}

func (c *webhookClients) client(ep webhookEndpoint) (*http.Client, error) {
	key := sha256.Sum256(append(append([]byte(ep.serverName), 0), ep.caBundle...))
	c.mu.Lock()
	defer c.mu.Unlock()
	if hc, ok := c.m[key]; ok {
		return hc, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: ep.serverName}
	if len(ep.caBundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ep.caBundle) {
			return nil, errors.New("unable to load root certificates: unable to parse bytes as PEM block")
		}
		cfg.RootCAs = pool
	}
	tr := &http.Transport{
		TLSClientConfig:     cfg,
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 100,
		IdleConnTimeout:     90 * time.Second,
		DialContext:         (&net.Dialer{Timeout: 30 * time.Second}).DialContext,
	}
	hc := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if c.m == nil || len(c.m) >= maxWebhookClients {
		for _, old := range c.m {
			old.CloseIdleConnections()
		}
		c.m = map[[sha256.Size]byte]*http.Client{}
	}
	c.m[key] = hc
	return hc, nil
}

// closeIdle closes the idle connections of every client (when the server
// stops).
func (c *webhookClients) closeIdle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, hc := range c.m {
		hc.CloseIdleConnections()
	}
}

// post sends body to the webhook with ?timeout=<timeout> (as
// kube-apiserver's webhook client does) and returns the answer's body. An
// error is what kube-apiserver's client would report: the transport's
// error (`Post "<url>": …`), or the status of an answer other than 200.
func (c *webhookClients) post(ctx context.Context, ep webhookEndpoint, timeout time.Duration, body []byte, limit int) ([]byte, error) {
	hc, err := c.client(ep)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	u := *ep.url
	q := u.Query()
	q.Set("timeout", formatTimeout(timeout))
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, */*")
	req.Header.Set("User-Agent", "kloop-apiserver")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(data) > limit {
		return nil, fmt.Errorf("the webhook's response is larger than %d bytes", limit)
	}
	if resp.StatusCode != http.StatusOK {
		// As client-go reports an answer that is not a Status.
		return nil, apierrors.NewGenericServerResponse(resp.StatusCode, http.MethodPost, schema.GroupResource{}, "", strings.TrimSpace(string(data)), 0, true)
	}
	return data, nil
}

// formatTimeout writes a timeout as kube-apiserver's webhook client does
// in the URL (time.Duration's String: "10s", "1m0s").
func formatTimeout(d time.Duration) string { return d.String() }
