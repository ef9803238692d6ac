package client

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// ListOptions restricts a List. Build it with ListOption funcs.
type ListOptions struct {
	// Namespace lists one namespace; "" lists all.
	Namespace string
	// LabelSelector keeps matching objects; nil keeps all. labels.Nothing()
	// (metav1.LabelSelectorAsSelector of a nil selector) keeps none, cached
	// or not, as fields.Nothing() does.
	LabelSelector labels.Selector
	// FieldSelector keeps matching objects; nil keeps all. From the cache,
	// only metadata.name, metadata.namespace and the fields indexed with
	// Client.IndexField (or a cache index named "field:<field>") can be
	// selected on, with = or ==.
	FieldSelector fields.Selector
	// Limit returns at most this many objects (0: all). Uncached lists
	// return a Continue token on the list's metadata for the next page. A
	// cached List cut by Limit returns a Continue token too, but the cache
	// refuses it: it does not paginate.
	Limit int64
	// Continue is the token of the next page (uncached lists only: a
	// cached List with a Continue is a BadRequest).
	Continue string
}

// ListOption sets a ListOptions field.
type ListOption func(*ListOptions)

// InNamespace lists namespace ns only.
func InNamespace(ns string) ListOption { return func(o *ListOptions) { o.Namespace = ns } }

// MatchingLabels keeps objects that have all these labels.
func MatchingLabels(m map[string]string) ListOption {
	return func(o *ListOptions) { o.LabelSelector = labels.SelectorFromValidatedSet(m) }
}

// MatchingLabelsSelector keeps objects matched by s.
func MatchingLabelsSelector(s labels.Selector) ListOption {
	return func(o *ListOptions) { o.LabelSelector = s }
}

// MatchingFields keeps objects whose fields have these values.
func MatchingFields(m map[string]string) ListOption {
	return func(o *ListOptions) { o.FieldSelector = fields.SelectorFromSet(m) }
}

// MatchingFieldsSelector keeps objects matched by s.
func MatchingFieldsSelector(s fields.Selector) ListOption {
	return func(o *ListOptions) { o.FieldSelector = s }
}

// Limit returns at most n objects.
func Limit(n int64) ListOption { return func(o *ListOptions) { o.Limit = n } }

// Continue asks for the page after token (uncached lists).
func Continue(token string) ListOption { return func(o *ListOptions) { o.Continue = token } }

// WriteOptions tunes a write. Build it with WriteOption funcs; each write
// uses the fields that apply to it.
type WriteOptions struct {
	// DryRun asks the server to validate and not persist.
	DryRun bool
	// FieldManager names the writer in managedFields (required by
	// server-side apply). Default: the Client's Options.FieldOwner.
	FieldManager string
	// Force takes conflicting fields over in a server-side apply.
	Force bool
	// PropagationPolicy of a Delete (Orphan, Background, Foreground).
	PropagationPolicy *metav1.DeletionPropagation
	// Preconditions of a Delete.
	Preconditions *metav1.Preconditions
	// GracePeriodSeconds of a Delete.
	GracePeriodSeconds *int64
}

// WriteOption sets a WriteOptions field.
type WriteOption func(*WriteOptions)

// DryRun makes the write a dry run.
func DryRun() WriteOption { return func(o *WriteOptions) { o.DryRun = true } }

// FieldOwner sets the field manager.
func FieldOwner(name string) WriteOption { return func(o *WriteOptions) { o.FieldManager = name } }

// ForceOwnership forces a server-side apply.
func ForceOwnership() WriteOption { return func(o *WriteOptions) { o.Force = true } }

// PropagationPolicy sets how a Delete treats dependents.
func PropagationPolicy(p metav1.DeletionPropagation) WriteOption {
	return func(o *WriteOptions) { o.PropagationPolicy = &p }
}

// Preconditions makes a Delete fail unless the object has this UID and/or
// resourceVersion (empty: not checked).
func Preconditions(uid types.UID, resourceVersion string) WriteOption {
	return func(o *WriteOptions) {
		p := &metav1.Preconditions{}
		if uid != "" {
			p.UID = &uid
		}
		if resourceVersion != "" {
			p.ResourceVersion = &resourceVersion
		}
		o.Preconditions = p
	}
}

// GracePeriodSeconds sets a Delete's grace period.
func GracePeriodSeconds(s int64) WriteOption {
	return func(o *WriteOptions) { o.GracePeriodSeconds = &s }
}
