// Package cloudclient is the Go client of the local cloud (package
// kloop.dev/kloop/examples/cloud) and the types of its HTTP API.
//
// The API, JSON over HTTP:
//
//	POST   /v1/instances               create (CreateInput); the same ClientToken returns the same instance
//	GET    /v1/instances/{id}          describe one (404 while a new instance is not yet visible)
//	GET    /v1/instances?tag=KEY=VALUE describe by tags (every tag given must match; terminated ones left out)
//	PATCH  /v1/instances/{id}          modify size and tags (ModifyInput)
//	DELETE /v1/instances/{id}          terminate (idempotent)
//
// Errors are an [Error] body with the HTTP status: 400 InvalidParameter,
// 404 NotFound, 409 IdempotentParameterMismatch (a ClientToken reused with
// other parameters), 429 Throttled (with Retry-After), 500 InternalError.
//
// A [Client] retries a 429 after the Retry-After the cloud sent, up to
// Options.MaxRetries times; every other error is returned as an *[Error]
// (see [IsNotFound], [IsThrottled]) for the caller to retry.
package cloudclient
