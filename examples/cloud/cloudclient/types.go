package cloudclient

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// State is an instance's lifecycle state.
type State string

// The states, in the order an instance goes through them.
const (
	// Pending: created or modified, not serving yet.
	Pending State = "pending"
	// Running: serving at its Endpoint.
	Running State = "running"
	// ShuttingDown: terminated, still releasing its resources.
	ShuttingDown State = "shutting-down"
	// Terminated: gone; it stays describable by ID.
	Terminated State = "terminated"
)

// Sizes are the instance sizes the cloud offers.
var Sizes = []string{"small", "medium", "large"}

// Instance is one machine in the cloud.
type Instance struct {
	ID          string            `json:"id"`
	ClientToken string            `json:"clientToken,omitempty"`
	Region      string            `json:"region"`
	Size        string            `json:"size"`
	Tags        map[string]string `json:"tags,omitempty"`
	State       State             `json:"state"`
	// Endpoint is host:port, set once the instance runs.
	Endpoint string `json:"endpoint,omitempty"`
	// CreatedAt and ChangedAt are when it was created and when its state
	// last changed (a modify or terminate).
	CreatedAt time.Time `json:"createdAt"`
	ChangedAt time.Time `json:"changedAt"`
}

// Live reports whether the instance still exists: neither shutting down nor
// terminated.
func (i Instance) Live() bool { return i.State == Pending || i.State == Running }

// CreateInput is the body of a create.
type CreateInput struct {
	// ClientToken makes the create idempotent: a create with a token the
	// cloud has seen returns the instance the first one made, whatever its
	// state. Empty: every create makes an instance.
	ClientToken string            `json:"clientToken,omitempty"`
	Region      string            `json:"region"`
	Size        string            `json:"size"`
	Tags        map[string]string `json:"tags,omitempty"`
}

// The cloud's limits on an instance's tags: at most MaxTags, keys of 1 to
// MaxTagKey bytes without '=' (describes filter by KEY=VALUE), values of
// at most MaxTagValue bytes.
const (
	MaxTags     = 50
	MaxTagKey   = 128
	MaxTagValue = 256
)

// ModifyInput is the body of a modify. Empty fields are left as they are:
// Tags, when not empty, replace the instance's tags (an empty map is not
// sent, so a modify cannot remove every tag).
type ModifyInput struct {
	Size string            `json:"size,omitempty"`
	Tags map[string]string `json:"tags,omitempty"`
}

// InstanceList is the answer to a describe by tags.
type InstanceList struct {
	Items []Instance `json:"items"`
}

// Error codes.
const (
	CodeInvalidParameter  = "InvalidParameter"
	CodeNotFound          = "NotFound"
	CodeParameterMismatch = "IdempotentParameterMismatch"
	CodeThrottled         = "Throttled"
	CodeInternal          = "InternalError"
)

// Error is an error answer of the cloud.
type Error struct {
	// StatusCode is the HTTP status (not in the body).
	StatusCode int    `json:"-"`
	Code       string `json:"code"`
	Message    string `json:"message"`
	// RetryAfter is the Retry-After of a 429 (not in the body).
	RetryAfter time.Duration `json:"-"`
}

func (e *Error) Error() string {
	return fmt.Sprintf("cloud: %d %s: %s", e.StatusCode, e.Code, e.Message)
}

// IsNotFound reports whether err is the cloud's 404.
func IsNotFound(err error) bool { return hasStatus(err, http.StatusNotFound) }

// IsThrottled reports whether err is the cloud's 429 (after the client's
// retries).
func IsThrottled(err error) bool { return hasStatus(err, http.StatusTooManyRequests) }

// IsInternal reports whether err is the cloud's 500: the request may or
// may not have taken effect.
func IsInternal(err error) bool { return hasStatus(err, http.StatusInternalServerError) }

// IsInvalid reports whether err is a 400 or a 409 parameter mismatch:
// the same request will fail again.
func IsInvalid(err error) bool {
	return hasStatus(err, http.StatusBadRequest) || hasStatus(err, http.StatusConflict)
}

// IsParameterMismatch reports whether err is the cloud's 409
// IdempotentParameterMismatch: the create's client token made an instance
// already, with other parameters.
func IsParameterMismatch(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.StatusCode == http.StatusConflict && e.Code == CodeParameterMismatch
}

func hasStatus(err error, code int) bool {
	var e *Error
	return errors.As(err, &e) && e.StatusCode == code
}
