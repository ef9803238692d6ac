package cache

import (
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ErrInvalidKey is returned (wrapped) by [SplitKey] for a key that is not
// "namespace/name" or "name".
var ErrInvalidKey = errors.New("invalid cache key")

// Key returns the cache key of obj: "namespace/name", or just "name" when the
// object is cluster-scoped (empty namespace). It is the rule of client-go's
// MetaNamespaceKeyFunc. Key does not validate obj; the [Indexer] rejects
// objects with an empty name.
func Key(obj metav1.Object) string {
	ns := obj.GetNamespace()
	if ns == "" {
		return obj.GetName()
	}
	return ns + "/" + obj.GetName()
}

// SplitKey splits a key made by [Key] into its namespace and name. A key
// without a slash is a cluster-scoped name. It returns an error wrapping
// [ErrInvalidKey] for an empty key, more than one slash, or an empty
// namespace or name part.
func SplitKey(key string) (namespace, name string, err error) {
	if key == "" {
		return "", "", fmt.Errorf("%w: empty key", ErrInvalidKey)
	}
	i := strings.IndexByte(key, '/')
	if i < 0 {
		return "", key, nil
	}
	namespace, name = key[:i], key[i+1:]
	switch {
	case namespace == "":
		return "", "", fmt.Errorf("%w: %q has an empty namespace", ErrInvalidKey, key)
	case name == "":
		return "", "", fmt.Errorf("%w: %q has an empty name", ErrInvalidKey, key)
	case strings.IndexByte(name, '/') >= 0:
		return "", "", fmt.Errorf("%w: %q has more than one '/'", ErrInvalidKey, key)
	}
	return namespace, name, nil
}

// keyBufSize covers a namespace (≤ 63 bytes) and a name (≤ 253 bytes) so that
// lookup keys are built on the stack.
const keyBufSize = 320

// appendKey appends the key of (namespace, name) to dst. With a stack array as
// dst and the result used directly in a map index expression
// (m[string(b)]), a lookup allocates nothing.
func appendKey(dst []byte, namespace, name string) []byte {
	if namespace == "" {
		return append(dst, name...)
	}
	dst = append(dst, namespace...)
	dst = append(dst, '/')
	return append(dst, name...)
}
