package client

import "context"

// Writer writes objects to the API server: *Client is one. Code that takes
// a Writer (or a [ReadWriter]) instead of *Client can be handed a wrapper
// or a fake in unit tests.
type Writer interface {
	// Create creates obj and fills it with the server's answer.
	Create(ctx context.Context, obj Object, opts ...WriteOption) error
	// Update replaces obj and fills it with the server's answer.
	Update(ctx context.Context, obj Object, opts ...WriteOption) error
	// Patch sends patch for obj and fills obj with the server's answer.
	Patch(ctx context.Context, obj Object, patch Patch, opts ...WriteOption) error
	// Delete deletes obj.
	Delete(ctx context.Context, obj Object, opts ...WriteOption) error
	// DeleteAllOf deletes every object of obj's kind that opts select.
	DeleteAllOf(ctx context.Context, obj Object, opts ...DeleteAllOfOption) error
	// Apply applies config with server-side apply and fills it with the
	// server's answer.
	Apply(ctx context.Context, config ApplyConfiguration, opts ...WriteOption) error
}

// SubResourceWriter writes a subresource of objects: Client.Status()
// returns one, for the status subresource.
type SubResourceWriter interface {
	// Update replaces obj's subresource and fills obj with the answer.
	Update(ctx context.Context, obj Object, opts ...WriteOption) error
	// Patch patches obj's subresource and fills obj with the answer.
	Patch(ctx context.Context, obj Object, patch Patch, opts ...WriteOption) error
	// Apply applies config to the subresource with server-side apply and
	// fills config with the answer.
	Apply(ctx context.Context, config ApplyConfiguration, opts ...WriteOption) error
}

// StatusClient hands out a writer of the status subresource.
type StatusClient interface {
	Status() SubResourceWriter
}

// ReadWriter is what a reconciler usually needs of a client: reads,
// writes and status writes. *Client is one.
type ReadWriter interface {
	Reader
	Writer
	StatusClient
}

var (
	_ ReadWriter        = (*Client)(nil)
	_ SubResourceWriter = (*StatusWriter)(nil)
	_ Reader            = apiReader{}
)
