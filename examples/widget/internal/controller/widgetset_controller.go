package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kloop.dev/kloop/builder"
	"kloop.dev/kloop/client"
	"kloop.dev/kloop/controller"
	"kloop.dev/kloop/controller/controllerutil"
	examplev1 "kloop.dev/kloop/examples/widget/api/v1"
	"kloop.dev/kloop/manager"
	"kloop.dev/kloop/reconcile"
)

// SetLabel names, on each of a WidgetSet's Widgets, the set.
const SetLabel = "example.kloop.dev/widgetset"

// WidgetSetOptions configure a WidgetSetReconciler. The zero value works.
type WidgetSetOptions struct {
	// MaxConcurrentReconciles is the number of workers. Default 2.
	MaxConcurrentReconciles int
}

func (o *WidgetSetOptions) defaults() {
	if o.MaxConcurrentReconciles == 0 {
		o.MaxConcurrentReconciles = 2
	}
}

func (o *WidgetSetOptions) validate() error {
	if o.MaxConcurrentReconciles < 0 {
		return fmt.Errorf("widgetset controller: MaxConcurrentReconciles %d is negative", o.MaxConcurrentReconciles)
	}
	return nil
}

// WidgetSetReconciler keeps a WidgetSet's Widgets: <set>-0 …
// <set>-<replicas-1>, each made from the template and controlled by the
// set (so that the garbage collector deletes them with it).
type WidgetSetReconciler struct {
	client *client.Client
	rec    *client.Recorder
}

// NewWidgetSet returns the WidgetSet reconciler and registers its
// controller (named "widgetset") with mgr: For WidgetSets, Owns Widgets.
// mgr's scheme must hold examplev1.
func NewWidgetSet(mgr *manager.Manager, opts WidgetSetOptions) (*WidgetSetReconciler, error) {
	opts.defaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	rec, err := mgr.Recorder("widgetset-controller")
	if err != nil {
		return nil, err
	}
	r := &WidgetSetReconciler{client: mgr.Client(), rec: rec}
	err = builder.ControllerManagedBy(mgr).
		Named("widgetset").
		For(&examplev1.WidgetSet{}).
		Owns(&examplev1.Widget{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}).
		Complete(r)
	if err != nil {
		return nil, fmt.Errorf("widgetset controller: %w", err)
	}
	return r, nil
}

// ChildName is the name of a set's Widget number i.
func ChildName(set string, i int) string { return set + "-" + strconv.Itoa(i) }

// childIndex returns i for a name ChildName(set, i), or -1.
func childIndex(set, name string) int {
	s, ok := strings.CutPrefix(name, set+"-")
	if !ok {
		return -1
	}
	i, err := strconv.Atoi(s)
	if err != nil || i < 0 || strconv.Itoa(i) != s {
		return -1
	}
	return i
}

// Reconcile creates the set's missing Widgets, brings the others to the
// template, deletes those beyond the replicas and counts them in the
// status.
func (r *WidgetSetReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var set examplev1.WidgetSet
	if err := r.client.Get(ctx, req.NamespacedName, &set); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !set.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil // the garbage collector deletes the Widgets
	}
	replicas := 1
	if set.Spec.Replicas != nil {
		replicas = int(*set.Spec.Replicas)
	}
	var list examplev1.WidgetList
	if err := r.client.List(ctx, &list, client.InNamespace(set.Namespace), client.MatchingLabels(map[string]string{SetLabel: set.Name})); err != nil {
		return reconcile.Result{}, err
	}
	have := map[int]*examplev1.Widget{}
	var errs []error
	for i := range list.Items {
		w := &list.Items[i]
		if ref := metav1.GetControllerOf(w); ref == nil || ref.UID != set.UID {
			continue // labelled, not ours
		}
		idx := childIndex(set.Name, w.Name)
		if idx < 0 || idx >= replicas {
			if w.DeletionTimestamp.IsZero() {
				if err := r.client.Delete(ctx, w, client.Preconditions(w.UID, "")); client.IgnoreNotFound(err) != nil {
					errs = append(errs, fmt.Errorf("deleting widget %s: %w", w.Name, err))
				} else {
					r.rec.Eventf(&set, corev1.EventTypeNormal, "ScaledDown", "deleted widget %s", w.Name)
				}
			}
			continue
		}
		have[idx] = w
	}

	ready := 0
	for i := range replicas {
		w, ok := have[i]
		if !ok {
			if err := r.create(ctx, &set, i); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if err := r.conform(ctx, &set, w); err != nil {
			errs = append(errs, err)
		}
		if w.Status.State == examplev1.StateRunning && w.Status.ObservedGeneration == w.Generation {
			ready++
		}
	}

	if _, err := controllerutil.UpdateStatus(ctx, r.client.Status(), &set, func() error {
		set.Status.Replicas = int32(len(have))
		set.Status.ReadyReplicas = int32(ready)
		set.Status.ObservedGeneration = set.Generation
		return nil
	}); err != nil {
		errs = append(errs, err)
	}
	return reconcile.Result{}, errors.Join(errs...)
}

// create makes the set's Widget number i.
func (r *WidgetSetReconciler) create(ctx context.Context, set *examplev1.WidgetSet, i int) error {
	w := &examplev1.Widget{ObjectMeta: metav1.ObjectMeta{
		Namespace:   set.Namespace,
		Name:        ChildName(set.Name, i),
		Labels:      maps.Clone(set.Spec.Template.Metadata.Labels),
		Annotations: maps.Clone(set.Spec.Template.Metadata.Annotations),
	}, Spec: *set.Spec.Template.Spec.DeepCopy()}
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	w.Labels[SetLabel] = set.Name
	if err := controllerutil.SetControllerReference(set, w, r.client.Scheme()); err != nil {
		return reconcile.Terminal(err)
	}
	err := r.client.Create(ctx, w)
	switch {
	case err == nil:
		return nil
	case client.IgnoreAlreadyExists(err) == nil:
		// Ours, not in the cache yet (the next event brings it), or someone
		// else's with our name.
		var other examplev1.Widget
		if gerr := r.client.Uncached().Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: w.Name}, &other); gerr == nil {
			if ref := metav1.GetControllerOf(&other); ref == nil || ref.UID != set.UID {
				r.rec.Eventf(set, corev1.EventTypeWarning, "NameTaken", "widget %s exists and is not the set's", w.Name)
			}
		}
		return nil
	default:
		return fmt.Errorf("creating widget %s: %w", w.Name, err)
	}
}

// conform brings w's spec, labels and annotations to the template's. The
// region of a Widget cannot change: a template with another region is
// reported, and applies to new Widgets only.
func (r *WidgetSetReconciler) conform(ctx context.Context, set *examplev1.WidgetSet, w *examplev1.Widget) error {
	if !w.DeletionTimestamp.IsZero() {
		return nil
	}
	tmpl := set.Spec.Template
	want := *w.DeepCopy()
	want.Spec.Tags = maps.Clone(tmpl.Spec.Tags)
	if tmpl.Spec.Size != "" {
		want.Spec.Size = tmpl.Spec.Size
	}
	for k, v := range tmpl.Metadata.Labels {
		if k != SetLabel && want.Labels[k] != v { // the set's own label is the set's name, whatever the template says
			want.Labels[k] = v
		}
	}
	for k, v := range tmpl.Metadata.Annotations {
		if want.Annotations == nil {
			want.Annotations = map[string]string{}
		}
		want.Annotations[k] = v
	}
	if tmpl.Spec.Region != w.Spec.Region {
		r.rec.Eventf(set, corev1.EventTypeWarning, "RegionImmutable", "widget %s stays in %s: a Widget's region cannot change", w.Name, w.Spec.Region)
	}
	if want.Spec.Size == w.Spec.Size && maps.Equal(want.Spec.Tags, w.Spec.Tags) &&
		maps.Equal(want.Labels, w.Labels) && maps.Equal(want.Annotations, w.Annotations) {
		return nil
	}
	if err := r.client.Update(ctx, &want); err != nil {
		return fmt.Errorf("updating widget %s: %w", w.Name, err)
	}
	return nil
}
