package client

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// IgnoreNotFound returns nil for a NotFound error, err otherwise: a
// reconcile whose object is gone has nothing to do.
func IgnoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// IgnoreAlreadyExists returns nil for an AlreadyExists error, err
// otherwise: creating an object with a deterministic name twice is success.
func IgnoreAlreadyExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
