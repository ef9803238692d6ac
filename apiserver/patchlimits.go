package apiserver

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// The bounds on the work a patch may ask for. A patch is small (the body
// is at most Options.MaxRequestBytes) but may ask for much more work than
// its size: a JSON patch of 2 KB that copies an array into itself 24 times
// would build gigabytes.
const (
	// maxJSONPatchOperations caps the operations of a JSON patch, as
	// kube-apiserver (its patch handler's maxJSONPatchOperations): more
	// is a 413.
	maxJSONPatchOperations = 10000
	// maxJSONPatchCopyBytes bounds the bytes that the copy operations of a
	// JSON patch add in all, as kube-apiserver (its JSONPatchMaxCopyBytes,
	// 3 MiB, which it sets as json-patch's AccumulatedCopySizeLimit): past
	// it, the patch fails (422).
	maxJSONPatchCopyBytes = 3 << 20
)

// tooManyJSONPatchOperations is kube-apiserver's 413 for a JSON patch of
// n operations, more than the cap.
func tooManyJSONPatchOperations(n int) error {
	return apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("The allowed maximum operations in a JSON patch is %d, got %d", maxJSONPatchOperations, n))
}
