package cloudclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Options configure a Client. The zero value works.
type Options struct {
	// HTTPClient sends the requests. Default: an http.Client with a 30 s
	// timeout.
	HTTPClient *http.Client
	// MaxRetries is how many times a throttled request (429) is sent again,
	// each after the Retry-After the cloud asked for. Default 5; negative:
	// never.
	MaxRetries int
	// MaxRetryAfter bounds the wait of one retry: a longer Retry-After is
	// returned as the error instead. Default 10 s.
	MaxRetryAfter time.Duration
}

func (o *Options) defaults() {
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	switch {
	case o.MaxRetries == 0:
		o.MaxRetries = 5
	case o.MaxRetries < 0:
		o.MaxRetries = 0
	}
	if o.MaxRetryAfter == 0 {
		o.MaxRetryAfter = 10 * time.Second
	}
}

func (o *Options) validate() error {
	if o.MaxRetryAfter < 0 {
		return fmt.Errorf("cloudclient: MaxRetryAfter %v is negative", o.MaxRetryAfter)
	}
	return nil
}

// Client calls the cloud's API. It is safe for concurrent use.
type Client struct {
	base *url.URL
	opts Options

	requests  atomic.Int64
	throttled atomic.Int64
}

// Stats counts what a Client did.
type Stats struct {
	// Requests is how many HTTP requests it sent, retries included.
	Requests int64
	// Throttled is how many 429s it was answered.
	Throttled int64
}

// New returns a client of the cloud at baseURL (http://host:port).
func New(baseURL string, opts Options) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("cloudclient: base URL %q: %w", baseURL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("cloudclient: base URL %q: want http://host:port", baseURL)
	}
	opts.defaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	return &Client{base: u, opts: opts}, nil
}

// Stats returns the client's counters.
func (c *Client) Stats() Stats {
	return Stats{Requests: c.requests.Load(), Throttled: c.throttled.Load()}
}

// Create creates an instance, or returns the one an earlier create with the
// same ClientToken made.
func (c *Client) Create(ctx context.Context, in CreateInput) (Instance, error) {
	var out Instance
	err := c.do(ctx, http.MethodPost, "/v1/instances", nil, in, &out)
	return out, err
}

// Get describes one instance. A new instance may be NotFound for a while
// (the cloud is eventually consistent); a terminated one is found.
func (c *Client) Get(ctx context.Context, id string) (Instance, error) {
	var out Instance
	err := c.do(ctx, http.MethodGet, "/v1/instances/"+url.PathEscape(id), nil, nil, &out)
	return out, err
}

// ListByTags describes the live instances carrying every tag of tags. A new
// instance may be missing for a while.
func (c *Client) ListByTags(ctx context.Context, tags map[string]string) ([]Instance, error) {
	q := url.Values{}
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		q.Add("tag", k+"="+tags[k])
	}
	var out InstanceList
	err := c.do(ctx, http.MethodGet, "/v1/instances", q, nil, &out)
	return out.Items, err
}

// Modify changes an instance's size or tags.
func (c *Client) Modify(ctx context.Context, id string, in ModifyInput) (Instance, error) {
	var out Instance
	err := c.do(ctx, http.MethodPatch, "/v1/instances/"+url.PathEscape(id), nil, in, &out)
	return out, err
}

// Delete terminates an instance. Deleting a terminated one succeeds; an
// unknown ID is NotFound.
func (c *Client) Delete(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/v1/instances/"+url.PathEscape(id), nil, nil, nil)
}

// do sends one call, retrying 429s, and decodes the answer into out.
func (c *Client) do(ctx context.Context, method, path string, q url.Values, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return fmt.Errorf("cloudclient: %s %s: %w", method, path, err)
		}
	}
	u := c.base.JoinPath(path)
	u.RawQuery = q.Encode()
	for attempt := 0; ; attempt++ {
		err := c.once(ctx, method, u.String(), body, out)
		var e *Error
		if !errors.As(err, &e) || e.StatusCode != http.StatusTooManyRequests {
			return err
		}
		c.throttled.Add(1)
		if attempt >= c.opts.MaxRetries || e.RetryAfter > c.opts.MaxRetryAfter {
			return err
		}
		t := time.NewTimer(e.RetryAfter)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("cloudclient: %s %s: waiting %v to retry after a 429: %w", method, path, e.RetryAfter, ctx.Err())
		case <-t.C:
		}
	}
}

func (c *Client) once(ctx context.Context, method, u string, body []byte, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return fmt.Errorf("cloudclient: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	c.requests.Add(1)
	resp, err := c.opts.HTTPClient.Do(req)
	if err != nil {
		return fmt.Errorf("cloudclient: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("cloudclient: %s %s: reading the answer: %w", method, u, err)
	}
	if resp.StatusCode >= 300 {
		e := &Error{StatusCode: resp.StatusCode}
		if json.Unmarshal(data, e) != nil || e.Code == "" {
			e.Code, e.Message = http.StatusText(resp.StatusCode), strings.TrimSpace(string(data))
		}
		if s := resp.Header.Get("Retry-After"); s != "" {
			if n, err := strconv.Atoi(s); err == nil && n >= 0 {
				e.RetryAfter = time.Duration(n) * time.Second
			}
		}
		return e
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("cloudclient: %s %s: decoding the answer: %w", method, u, err)
	}
	return nil
}
