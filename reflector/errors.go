package reflector

import (
	"errors"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// isExpired reports a resourceVersion (or continue token) the server no
// longer has: 410 Gone / reason Expired. Servers before 1.18 used reason
// Gone, later ones Expired; both are 410.
func isExpired(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
}

// isTooLargeResourceVersion reports a resourceVersion newer than the server
// has seen (typically an API server behind the others after a failover).
func isTooLargeResourceVersion(err error) bool {
	if apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
		return true
	}
	// Servers 1.17.0–1.18.5 said so only in a Timeout's cause message, and
	// older ones in the status message.
	if !apierrors.IsTimeout(err) {
		return false
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return false
	}
	s := st.Status()
	if s.Details != nil {
		for _, c := range s.Details.Causes {
			if c.Message == "Too large resource version" {
				return true
			}
		}
	}
	return strings.Contains(s.Message, "Too large resource version")
}

// isRVUnavailable reports that the position the reflector asked for cannot
// be served: the reflector must relist with a consistent read
// (resourceVersion="").
func isRVUnavailable(err error) bool {
	return isExpired(err) || isTooLargeResourceVersion(err)
}

// isWatchListRejected reports that the server refused a streaming list
// request as such: it does not know sendInitialEvents (servers before 1.27
// reject resourceVersionMatch on a watch with 422 Invalid) or has the
// WatchList feature disabled (422 Invalid "sendInitialEvents is forbidden"),
// or it refuses the verb or the media type. These answers do not change
// between attempts, so the reflector remembers them and lists from then on.
func isWatchListRejected(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) ||
		apierrors.IsMethodNotSupported(err) || apierrors.IsNotAcceptable(err) ||
		apierrors.IsUnsupportedMediaType(err)
}

// retryAfter returns the wait the server asked for (Retry-After on a 429 or
// a server timeout), if any.
func retryAfter(err error) time.Duration {
	if s, ok := apierrors.SuggestsClientDelay(err); ok && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 0
}
