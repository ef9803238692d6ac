package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kloop.dev/kloop/informer"
)

// ReadScopes maps kinds to the scope a controller watches them with: a
// Client's cached reads of such a kind, with a context made by
// WithReadScopes, go to the factory's shared informer of that scope — the one
// the controller's watch is served by — instead of the informer of the whole
// kind. A missing kind, or the zero informer.Scope, means the whole kind. A
// scope applies to the kind in every form (typed, unstructured,
// metadata-only): each read uses the informer of its object's form within
// the scope.
//
// kloop.dev/kloop/builder fills it from WithScope for each controller and
// puts it in the context of the controller's reconciles and handlers; a
// controller made without the builder can do the same with
// controller.Options.BaseContext:
//
//	BaseContext: func(ctx context.Context) context.Context {
//		return client.WithReadScopes(ctx, client.ReadScopes{configMapGVK: {Namespace: "team-a"}})
//	},
type ReadScopes map[schema.GroupVersionKind]informer.Scope

// readScopesKey is the context key of the ReadScopes.
type readScopesKey struct{}

// ErrOutOfScope is wrapped by the error of a cached Get or List in a
// namespace the context's ReadScopes or the factory's namespaces
// (FactoryOptions.DefaultNamespaces, ObjectOptions.Namespaces)
// exclude: the scoped cache cannot answer it, and NotFound (or an empty
// list) would wrongly say that the object (or the namespace's objects) does
// not exist.
// The error is also a BadRequest (apierrors.IsBadRequest). Read other
// namespaces with Client.Uncached or a context without scopes.
var ErrOutOfScope = errors.New("client: read outside the controller's scope")

// WithReadScopes returns a copy of ctx whose cached reads of the kinds of
// scopes see only their scope:
//
//   - Get of an object in another namespace than the scope's fails with an
//     error wrapping ErrOutOfScope; Get of an object in the scope's
//     namespace that its labels or fields exclude answers NotFound, as if it
//     did not exist (for this controller, it does not).
//   - List returns the objects of the scope that match its options. A List
//     in a namespace other than the scope's namespace fails with an error
//     wrapping ErrOutOfScope (as controller-runtime's namespaced cache
//     refuses an unknown namespace).
//
// Reads of other kinds, of kinds in Options.Uncached, and through
// Client.Uncached are unchanged. ctx keeps scopes itself, not a copy: do not
// modify the map afterwards. Scopes in ctx already are replaced, not merged;
// a nil or empty map removes them.
func WithReadScopes(ctx context.Context, scopes ReadScopes) context.Context {
	return context.WithValue(ctx, readScopesKey{}, scopes)
}

// ReadScopesFrom returns the ReadScopes of ctx, nil if it has none.
func ReadScopesFrom(ctx context.Context) ReadScopes {
	s, _ := ctx.Value(readScopesKey{}).(ReadScopes)
	return s
}

// readScope returns the scope of the cached reads of gvk with ctx: the zero
// Scope (the whole kind) unless ctx has ReadScopes for gvk.
func readScope(ctx context.Context, gvk schema.GroupVersionKind) informer.Scope {
	s, _ := ctx.Value(readScopesKey{}).(ReadScopes)
	return s[gvk]
}

// scopeNamespace returns the one namespace scope holds (its Namespace, or a
// metadata.namespace=X in its FieldSelector), "" when it holds them all.
func scopeNamespace(scope informer.Scope) string {
	if scope.Namespace != "" || scope.FieldSelector == "" {
		return scope.Namespace
	}
	// A scope of one namespace by field selector excludes the others just
	// as well. (An invalid selector has no informer: the read fails there.)
	if sel, err := fields.ParseSelector(scope.FieldSelector); err == nil {
		ns, _ := sel.RequiresExactMatch("metadata.namespace")
		return ns
	}
	return ""
}

// outOfScopeGet is the error of a cached Get in a namespace other than the
// ones the cache holds (nss), as controller-runtime's cache restricted to
// namespaces fails it: NotFound would tell the caller that an object which
// may well exist does not. The wording follows kube-apiserver's errors
// (resource "name"), e.g. `configmaps "cm" in namespace "c" is not in the
// cache: it holds namespaces "a", "b" only …`.
func outOfScopeGet(m *meta.RESTMapping, key ObjectKey, nss []string) error {
	msg := fmt.Sprintf("%s %q in namespace %q is not in the cache: it holds %s only (FactoryOptions.DefaultNamespaces, ByObject or builder.WithScope); use Uncached() to read other namespaces",
		m.Resource.GroupResource(), key.Name, key.Namespace, quoteNamespaces(nss))
	return fmt.Errorf("%w: %w", ErrOutOfScope, apierrors.NewBadRequest(msg))
}

// quoteNamespaces names nss in an error: `namespace "a"`, `namespaces "a", "b"`.
func quoteNamespaces(nss []string) string {
	q := make([]string, len(nss))
	for i, ns := range nss {
		q[i] = strconv.Quote(ns)
	}
	if len(q) == 1 {
		return "namespace " + q[0]
	}
	return "namespaces " + strings.Join(q, ", ")
}

// listNamespace returns the namespace o asks for: InNamespace, else a
// metadata.namespace=X field requirement; "" for all.
func listNamespace(o ListOptions) string {
	if o.Namespace != "" {
		return o.Namespace
	}
	if o.FieldSelector != nil {
		for _, r := range o.FieldSelector.Requirements() {
			if r.Field == "metadata.namespace" && (r.Operator == "=" || r.Operator == "==") {
				return r.Value
			}
		}
	}
	return ""
}

// checkListScope returns an error wrapping ErrOutOfScope when o asks for a
// namespace (InNamespace or a metadata.namespace field) outside nss, the
// namespaces the cache holds for the kind (of mapping m).
func checkListScope(m *meta.RESTMapping, nss []string, o ListOptions) error {
	asked := []string{o.Namespace}
	if o.FieldSelector != nil {
		for _, r := range o.FieldSelector.Requirements() {
			if r.Field == "metadata.namespace" && (r.Operator == "=" || r.Operator == "==") {
				asked = append(asked, r.Value)
			}
		}
	}
	for _, ns := range asked {
		if ns != "" && !slices.Contains(nss, ns) {
			msg := fmt.Sprintf("cannot list %s in namespace %q: the cache holds %s only (FactoryOptions.DefaultNamespaces, ByObject or builder.WithScope); use Uncached() to read other namespaces",
				m.Resource.GroupResource(), ns, quoteNamespaces(nss))
			return fmt.Errorf("%w: %w", ErrOutOfScope, apierrors.NewBadRequest(msg))
		}
	}
	return nil
}
