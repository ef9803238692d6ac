package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kloop.dev/kloop/builder"
	"kloop.dev/kloop/client"
	"kloop.dev/kloop/controller"
	"kloop.dev/kloop/controller/controllerutil"
	"kloop.dev/kloop/examples/cloud/cloudclient"
	examplev1 "kloop.dev/kloop/examples/widget/api/v1"
	"kloop.dev/kloop/handler/predicate"
	"kloop.dev/kloop/manager"
	"kloop.dev/kloop/reconcile"
)

// Finalizer holds a Widget until its instance is deleted.
const Finalizer = "example.kloop.dev/instance"

// The tags the operator sets on every instance; a spec's tags may not use
// keys under TagPrefix.
const (
	TagPrefix = "widget.kloop.dev/"
	// TagUID is the Widget's UID: what the operator searches by.
	TagUID = TagPrefix + "uid"
	// TagName is the Widget's namespace/name, for people.
	TagName = TagPrefix + "name"
)

// ClientToken is the client token of the create of w's instance: derived
// from its UID, so that every create for w — a retry, a second manager, a
// manager restarted after a crash — names the same instance.
func ClientToken(w *examplev1.Widget) string { return "widget-" + string(w.UID) }

// WidgetOptions configure a WidgetReconciler. The zero value works.
type WidgetOptions struct {
	// PendingPoll is how soon a Widget whose instance is not running yet
	// (or was just created) is reconciled again. Default 1 s.
	PendingPoll time.Duration
	// Poll is how often a Widget whose instance runs is checked against
	// the cloud. Default 30 s.
	Poll time.Duration
	// ConsistencyWindow is how long after its create an instance may
	// still be invisible to the cloud's describes: a deleted Widget whose
	// instance the operator has not recorded and cannot find is looked
	// for again until the window has passed since its deletion (or its
	// creation, if later) before its finalizer goes. Default 10 s (set it
	// at least to the cloud's visibility delay).
	ConsistencyWindow time.Duration
	// MaxConcurrentReconciles is the number of workers. Default 4.
	MaxConcurrentReconciles int
}

func (o *WidgetOptions) defaults() {
	if o.PendingPoll == 0 {
		o.PendingPoll = time.Second
	}
	if o.Poll == 0 {
		o.Poll = 30 * time.Second
	}
	if o.ConsistencyWindow == 0 {
		o.ConsistencyWindow = 10 * time.Second
	}
	if o.MaxConcurrentReconciles == 0 {
		o.MaxConcurrentReconciles = 4
	}
}

func (o *WidgetOptions) validate() error {
	var errs []error
	if o.PendingPoll < 0 || o.Poll < 0 || o.ConsistencyWindow < 0 {
		errs = append(errs, fmt.Errorf("negative durations (PendingPoll %v, Poll %v, ConsistencyWindow %v)", o.PendingPoll, o.Poll, o.ConsistencyWindow))
	}
	if o.MaxConcurrentReconciles < 0 {
		errs = append(errs, fmt.Errorf("MaxConcurrentReconciles %d is negative", o.MaxConcurrentReconciles))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("widget controller: %w", err)
	}
	return nil
}

// WidgetReconciler keeps one cloud instance per Widget: created with a
// client token after a search by tag, modified when the spec changes,
// deleted before the Widget's finalizer goes.
type WidgetReconciler struct {
	client *client.Client
	cloud  *cloudclient.Client
	rec    *client.Recorder
	opts   WidgetOptions
}

// NewWidget returns the Widget reconciler and registers its controller
// (named "widget") with mgr: For Widgets, reconciled when their generation
// changes (a spec change, a deletion), and by its own requeues. mgr's
// scheme must hold examplev1.
func NewWidget(mgr *manager.Manager, cloud *cloudclient.Client, opts WidgetOptions) (*WidgetReconciler, error) {
	opts.defaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if cloud == nil {
		return nil, errors.New("widget controller: nil cloud client")
	}
	rec, err := mgr.Recorder("widget-controller")
	if err != nil {
		return nil, err
	}
	r := &WidgetReconciler{client: mgr.Client(), cloud: cloud, rec: rec, opts: opts}
	err = builder.ControllerManagedBy(mgr).
		Named("widget").
		For(&examplev1.Widget{}, builder.WithPredicates(predicate.GenerationChanged{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}).
		Complete(r)
	if err != nil {
		return nil, fmt.Errorf("widget controller: %w", err)
	}
	return r, nil
}

// Reconcile makes the cloud hold exactly one instance as w's spec asks
// while w exists, and none once it is deleted.
func (r *WidgetReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var w examplev1.Widget
	if err := r.client.Get(ctx, req.NamespacedName, &w); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !w.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, &w)
	}

	// The finalizer first: nothing exists outside the cluster before the
	// Widget's deletion is sure to wait for its cleanup.
	if added, err := controllerutil.AddFinalizer(&w, Finalizer); err != nil {
		return reconcile.Result{}, reconcile.Terminal(err)
	} else if added {
		if err := r.client.Update(ctx, &w); err != nil {
			return reconcile.Result{}, err
		}
	}

	if err := validate(&w.Spec); err != nil {
		r.rec.Eventf(&w, corev1.EventTypeWarning, "InvalidSpec", "%v", err)
		if _, serr := r.setStatus(ctx, &w, examplev1.StateFailed, w.Status.InstanceID, w.Status.Endpoint,
			metav1.ConditionFalse, "InvalidSpec", err.Error()); serr != nil {
			return reconcile.Result{}, serr
		}
		return reconcile.Result{}, reconcile.Terminal(err) // the same spec fails the same way: wait for an edit
	}

	inst, err := r.lookup(ctx, &w)
	if err != nil {
		return reconcile.Result{}, err
	}
	created := false
	if inst == nil {
		in, err := r.cloud.Create(ctx, cloudclient.CreateInput{
			ClientToken: ClientToken(&w), Region: w.Spec.Region, Size: size(&w.Spec), Tags: desiredTags(&w),
		})
		if cloudclient.IsParameterMismatch(err) {
			// The token made w's instance already, with the size w had
			// then (the region cannot change): describes do not show it
			// yet. Once they do, lookup finds it and Modify resizes it.
			return reconcile.Result{RequeueAfter: r.opts.PendingPoll}, nil
		}
		if cloudclient.IsInvalid(err) {
			r.rec.Eventf(&w, corev1.EventTypeWarning, "CloudRejected", "%v", err)
			if _, serr := r.setStatus(ctx, &w, examplev1.StateFailed, w.Status.InstanceID, w.Status.Endpoint, metav1.ConditionFalse, "CloudRejected", err.Error()); serr != nil {
				return reconcile.Result{}, serr
			}
			return reconcile.Result{}, reconcile.Terminal(err)
		}
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("creating the instance: %w", err)
		}
		inst, created = &in, true
		r.rec.Eventf(&w, corev1.EventTypeNormal, "Created", "instance %s (%s, %s)", in.ID, in.Region, in.Size)
	}

	if !inst.Live() {
		msg := fmt.Sprintf("instance %s was %s outside the operator; delete the Widget to clean up", inst.ID, inst.State)
		if _, err := r.setStatus(ctx, &w, examplev1.StateFailed, inst.ID, "", metav1.ConditionFalse, "InstanceTerminated", msg); err != nil {
			return reconcile.Result{}, err
		}
		r.rec.Event(&w, corev1.EventTypeWarning, "InstanceTerminated", msg)
		return reconcile.Result{}, reconcile.Terminal(errors.New(msg))
	}

	if want := desiredTags(&w); inst.Size != size(&w.Spec) || !maps.Equal(inst.Tags, want) {
		in, err := r.cloud.Modify(ctx, inst.ID, cloudclient.ModifyInput{Size: size(&w.Spec), Tags: want})
		if cloudclient.IsInvalid(err) {
			r.rec.Eventf(&w, corev1.EventTypeWarning, "CloudRejected", "%v", err)
			if _, serr := r.setStatus(ctx, &w, examplev1.StateFailed, inst.ID, inst.Endpoint, metav1.ConditionFalse, "CloudRejected", err.Error()); serr != nil {
				return reconcile.Result{}, serr
			}
			return reconcile.Result{}, reconcile.Terminal(err) // the same spec is refused the same way: wait for an edit
		}
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("modifying instance %s: %w", inst.ID, err)
		}
		inst = &in
		r.rec.Eventf(&w, corev1.EventTypeNormal, "Modified", "instance %s: size %s, %d tags", in.ID, in.Size, len(in.Tags))
	}

	state, status, reason, msg := examplev1.StatePending, metav1.ConditionFalse, "Provisioning", "instance "+inst.ID+" is "+string(inst.State)
	if inst.State == cloudclient.Running {
		state, status, reason, msg = examplev1.StateRunning, metav1.ConditionTrue, "Running", "instance "+inst.ID+" runs at "+inst.Endpoint
	}
	wasRunning := w.Status.State == examplev1.StateRunning
	if _, err := r.setStatus(ctx, &w, state, inst.ID, inst.Endpoint, status, reason, msg); err != nil {
		return reconcile.Result{}, err
	}
	if state == examplev1.StateRunning && !wasRunning {
		r.rec.Eventf(&w, corev1.EventTypeNormal, "Running", "instance %s runs at %s", inst.ID, inst.Endpoint)
	}
	if created || state != examplev1.StateRunning {
		return reconcile.Result{RequeueAfter: r.opts.PendingPoll}, nil
	}
	return reconcile.Result{RequeueAfter: r.opts.Poll}, nil
}

// lookup finds w's instance: by the ID in its status, else by its UID tag.
// It returns nil when the cloud shows none (which, within the cloud's
// visibility delay, does not mean there is none: the create that follows
// carries w's client token). Duplicates, which the token should make
// impossible, are deleted, the oldest kept.
func (r *WidgetReconciler) lookup(ctx context.Context, w *examplev1.Widget) (*cloudclient.Instance, error) {
	if id := w.Status.InstanceID; id != "" {
		in, err := r.cloud.Get(ctx, id)
		if err == nil {
			return &in, nil
		}
		if !cloudclient.IsNotFound(err) {
			return nil, fmt.Errorf("describing instance %s: %w", id, err)
		}
	}
	found, err := r.cloud.ListByTags(ctx, map[string]string{TagUID: string(w.UID)})
	if err != nil {
		return nil, fmt.Errorf("describing instances by tag: %w", err)
	}
	if len(found) == 0 {
		return nil, nil
	}
	slices.SortFunc(found, func(a, b cloudclient.Instance) int { return a.CreatedAt.Compare(b.CreatedAt) })
	for _, dup := range found[1:] {
		if err := r.cloud.Delete(ctx, dup.ID); err != nil && !cloudclient.IsNotFound(err) {
			return nil, fmt.Errorf("deleting duplicate instance %s: %w", dup.ID, err)
		}
		r.rec.Eventf(w, corev1.EventTypeWarning, "DuplicateDeleted", "instance %s duplicated %s", dup.ID, found[0].ID)
	}
	return &found[0], nil
}

// finalize deletes w's instance, then removes the finalizer. A failed
// cloud call returns the error: the finalizer stays and the reconcile is
// retried with backoff.
func (r *WidgetReconciler) finalize(ctx context.Context, w *examplev1.Widget) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(w, Finalizer) {
		return reconcile.Result{}, nil
	}
	var ids []string
	if w.Status.InstanceID != "" {
		ids = append(ids, w.Status.InstanceID)
	}
	found, err := r.cloud.ListByTags(ctx, map[string]string{TagUID: string(w.UID)})
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("describing instances by tag: %w", err)
	}
	for _, in := range found {
		if !slices.Contains(ids, in.ID) {
			ids = append(ids, in.ID)
		}
	}
	if len(ids) == 0 {
		// An instance created a moment ago may not show yet. Every create
		// for w came before this reconcile (a key is reconciled by one
		// worker at a time), so at the latest around w's deletion: wait
		// out the window from there, whenever w itself was created.
		// Both timestamps are cut to the second: the moment was up to a
		// second later.
		since := w.CreationTimestamp.Time
		if w.DeletionTimestamp != nil && w.DeletionTimestamp.After(since) {
			since = w.DeletionTimestamp.Time
		}
		if left := r.opts.ConsistencyWindow - time.Since(since.Add(time.Second)); left > 0 {
			return reconcile.Result{RequeueAfter: left}, nil
		}
	}
	if _, err := r.setStatus(ctx, w, examplev1.StateDeleting, w.Status.InstanceID, "", metav1.ConditionFalse, "Deleting",
		"deleting instance "+strings.Join(ids, ", ")); err != nil {
		return reconcile.Result{}, err
	}
	for _, id := range ids {
		if err := r.cloud.Delete(ctx, id); err != nil && !cloudclient.IsNotFound(err) {
			r.rec.Eventf(w, corev1.EventTypeWarning, "DeleteFailed", "instance %s: %v", id, err)
			return reconcile.Result{}, fmt.Errorf("deleting instance %s: %w", id, err)
		}
	}
	controllerutil.RemoveFinalizer(w, Finalizer)
	if err := r.client.Update(ctx, w); err != nil {
		return reconcile.Result{}, err
	}
	if len(ids) > 0 {
		r.rec.Eventf(w, corev1.EventTypeNormal, "Deleted", "instance %s deleted", strings.Join(ids, ", "))
	}
	return reconcile.Result{}, nil
}

// setStatus writes w's status if it changed.
func (r *WidgetReconciler) setStatus(ctx context.Context, w *examplev1.Widget, state, id, endpoint string,
	ready metav1.ConditionStatus, reason, msg string) (bool, error) {
	return controllerutil.UpdateStatus(ctx, r.client.Status(), w, func() error {
		w.Status.State, w.Status.InstanceID, w.Status.Endpoint = state, id, endpoint
		w.Status.ObservedGeneration = w.Generation
		meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{
			Type: examplev1.ConditionReady, Status: ready, Reason: reason, Message: msg, ObservedGeneration: w.Generation,
		})
		return nil
	})
}

// maxSpecTags is how many tags a spec may have: the operator adds its own
// two to them.
const maxSpecTags = cloudclient.MaxTags - 2

// validate checks what the CRD's schema cannot: the operator's tag keys,
// the cloud's tag limits, the size.
func validate(s *examplev1.WidgetSpec) error {
	var errs []error
	if len(s.Tags) > maxSpecTags {
		errs = append(errs, fmt.Errorf("spec.tags: %d tags, at most %d", len(s.Tags), maxSpecTags))
	}
	for _, k := range slices.Sorted(maps.Keys(s.Tags)) {
		switch v := s.Tags[k]; {
		case strings.HasPrefix(k, TagPrefix):
			errs = append(errs, fmt.Errorf("spec.tags[%q]: keys under %s are the operator's", k, TagPrefix))
		case k == "" || len(k) > cloudclient.MaxTagKey || strings.Contains(k, "="):
			errs = append(errs, fmt.Errorf("spec.tags[%q]: keys are 1 to %d bytes without '='", k, cloudclient.MaxTagKey))
		case len(v) > cloudclient.MaxTagValue:
			errs = append(errs, fmt.Errorf("spec.tags[%q]: values are at most %d bytes", k, cloudclient.MaxTagValue))
		}
	}
	if s.Size != "" && !slices.Contains(cloudclient.Sizes, s.Size) {
		errs = append(errs, fmt.Errorf("spec.size %q: want one of %s", s.Size, strings.Join(cloudclient.Sizes, ", ")))
	}
	return errors.Join(errs...)
}

func size(s *examplev1.WidgetSpec) string {
	if s.Size == "" {
		return "small"
	}
	return s.Size
}

// desiredTags are the spec's tags and the operator's.
func desiredTags(w *examplev1.Widget) map[string]string {
	tags := maps.Clone(w.Spec.Tags)
	if tags == nil {
		tags = map[string]string{}
	}
	tags[TagUID] = string(w.UID)
	// For people only; cut to the cloud's limit (a namespace and a name
	// may together be longer).
	name := w.Namespace + "/" + w.Name
	if len(name) > cloudclient.MaxTagValue {
		name = name[:cloudclient.MaxTagValue]
	}
	tags[TagName] = name
	return tags
}
