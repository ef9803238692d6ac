package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DeleteAllOfOptions tunes a DeleteAllOf: which objects (the list options)
// and how each is deleted (the delete options of the write options).
type DeleteAllOfOptions struct {
	// ListOptions selects the objects: Namespace ("" deletes in every
	// namespace), LabelSelector and FieldSelector. Limit and Continue do
	// not apply (a BadRequest): DeleteAllOf deletes every match.
	ListOptions
	// WriteOptions holds how each object is deleted: DryRun,
	// PropagationPolicy, Preconditions (checked against each object) and
	// GracePeriodSeconds. FieldManager and Force do not apply to a delete
	// and are ignored.
	WriteOptions
}

// DeleteAllOfOption sets a DeleteAllOfOptions field. Every ListOption
// (InNamespace, MatchingLabels, MatchingLabelsSelector, MatchingFields) and
// every WriteOption (DryRun, PropagationPolicy, Preconditions,
// GracePeriodSeconds) is one.
type DeleteAllOfOption interface {
	applyToDeleteAllOf(*DeleteAllOfOptions)
}

func (f ListOption) applyToDeleteAllOf(o *DeleteAllOfOptions)  { f(&o.ListOptions) }
func (f WriteOption) applyToDeleteAllOf(o *DeleteAllOfOptions) { f(&o.WriteOptions) }

// DeleteAllOf deletes every object of obj's kind that opts select, in one
// request (a DELETE of the collection), as controller-runtime's
// DeleteAllOf: obj names the kind only (its namespace and name are
// ignored; InNamespace picks the namespace, none deletes in all of them).
// A selector that matches nothing (labels.Nothing(), fields.Nothing())
// deletes nothing and sends no request. Objects with finalizers stay, with
// a deletionTimestamp, until they are removed. The request always goes to
// the API server, cached kind or not.
//
//	err := c.DeleteAllOf(ctx, &corev1.Pod{},
//		client.InNamespace(ns), client.MatchingLabels(map[string]string{"app": "web"}),
//		client.PropagationPolicy(metav1.DeletePropagationBackground))
func (c *Client) DeleteAllOf(ctx context.Context, obj Object, opts ...DeleteAllOfOption) error {
	o := DeleteAllOfOptions{}
	for _, opt := range opts {
		if opt == nil {
			return apierrors.NewBadRequest("client: nil DeleteAllOfOption")
		}
		opt.applyToDeleteAllOf(&o)
	}
	if o.Limit != 0 || o.Continue != "" {
		return apierrors.NewBadRequest("client: DeleteAllOf deletes every selected object: Limit and Continue do not apply")
	}
	gvk, err := c.gvkFor(obj)
	if err != nil {
		return err
	}
	m, err := c.mapping(ctx, gvk)
	if err != nil {
		return err
	}
	u, err := c.url(m, o.Namespace, "", "")
	if err != nil {
		return err
	}
	if selectsNothing(o.ListOptions) {
		// Its String() is "", which the server reads as "everything".
		return nil
	}
	q := url.Values{}
	if o.LabelSelector != nil && !o.LabelSelector.Empty() {
		q.Set("labelSelector", o.LabelSelector.String())
	}
	if o.FieldSelector != nil && !o.FieldSelector.Empty() {
		q.Set("fieldSelector", o.FieldSelector.String())
	}
	if o.DryRun {
		q.Set("dryRun", metav1.DryRunAll)
	}
	u.RawQuery = q.Encode()
	body, err := json.Marshal(deleteOptions(o.WriteOptions))
	if err != nil {
		return fmt.Errorf("client: encoding DeleteOptions: %w", err)
	}
	_, err = c.do(ctx, http.MethodDelete, u, "application/json", "application/json", body, m)
	return err
}

// deleteOptions returns the DeleteOptions body of a Delete or DeleteAllOf.
func deleteOptions(o WriteOptions) metav1.DeleteOptions {
	del := metav1.DeleteOptions{
		TypeMeta:           metav1.TypeMeta{Kind: "DeleteOptions", APIVersion: "v1"},
		PropagationPolicy:  o.PropagationPolicy,
		Preconditions:      o.Preconditions,
		GracePeriodSeconds: o.GracePeriodSeconds,
	}
	if o.DryRun {
		del.DryRun = []string{metav1.DryRunAll}
	}
	return del
}
