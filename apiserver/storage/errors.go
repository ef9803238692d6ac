package storage

import (
	"errors"
	"fmt"
)

// Errors returned by the store, wrapped with context; test them with
// errors.Is. The HTTP layer maps each to its Kubernetes status.
var (
	// ErrNotFound: the object does not exist (404 NotFound).
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists: an object with that key exists (409 AlreadyExists).
	ErrAlreadyExists = errors.New("already exists")
	// ErrConflict: a precondition on uid or resourceVersion failed (409 Conflict).
	ErrConflict = errors.New("conflict")
	// ErrExpired: the revision is older than the retained history (410 Gone, reason Expired).
	ErrExpired = errors.New("resource version too old")
	// ErrTooLargeResourceVersion: the revision is newer than the store's (504, cause ResourceVersionTooLarge).
	ErrTooLargeResourceVersion = errors.New("too large resource version")
	// ErrWatcherTooSlow: the watcher fell behind the retained history and was disconnected.
	ErrWatcherTooSlow = errors.New("watcher fell behind the event history and was disconnected")
	// ErrInvalidObject: the encoder returned an object that does not fit the key.
	ErrInvalidObject = errors.New("invalid object")
)

// ExpiredError is the [ErrExpired] of a revision older than the history:
// errors.Is(err, ErrExpired) holds.
type ExpiredError struct {
	// Requested is the revision asked for.
	Requested int64
	// Oldest is the oldest revision the history still holds.
	Oldest int64
}

func (e *ExpiredError) Error() string {
	return fmt.Sprintf("%v: requested %d, oldest retained %d", ErrExpired, e.Requested, e.Oldest)
}

func (e *ExpiredError) Unwrap() error { return ErrExpired }

// TooLargeError is the [ErrTooLargeResourceVersion] of a revision the store
// has not reached: errors.Is(err, ErrTooLargeResourceVersion) holds.
type TooLargeError struct {
	// Requested is the revision asked for.
	Requested int64
	// Current is the store's revision.
	Current int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%v: requested %d, current %d", ErrTooLargeResourceVersion, e.Requested, e.Current)
}

func (e *TooLargeError) Unwrap() error { return ErrTooLargeResourceVersion }
