package apiserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"kloop.dev/kloop/apiserver/internal/jsontree"
	"kloop.dev/kloop/apiserver/storage"
)

func (s *Server) serveDelete(w http.ResponseWriter, r *http.Request, k *kind, ns, name string, q url.Values) error {
	opts, err := s.deleteOptions(r, q)
	if err != nil {
		return err
	}
	if err := s.admitDelete(w, r, k, ns, name, opts); err != nil {
		return err
	}
	if k.checkDelete != nil {
		if err := k.checkDelete(name); err != nil {
			return err
		}
	}
	o, deleted, err := s.delete(k, ns, name, opts)
	if err != nil {
		return err
	}
	if deleted && !k.returnsDeleted {
		// kube-apiserver answers the immediate deletion of most kinds with
		// a Success Status naming the object (details.kind is the resource).
		writeObject(w, http.StatusOK, &metav1.Status{
			TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status:   metav1.StatusSuccess,
			Details:  &metav1.StatusDetails{Name: name, Group: k.gvr.Group, Kind: k.gvr.Resource, UID: types.UID(o.UID)},
		})
		return nil
	}
	out, err := s.output(k, o)
	if err != nil {
		return err
	}
	code := http.StatusOK
	//nolint:staticcheck // kube-apiserver answers 202 only for the deprecated orphanDependents=false
	if !deleted && opts.OrphanDependents != nil && !*opts.OrphanDependents {
		code = http.StatusAccepted
	}
	writeJSON(w, code, out)
	return nil
}

// deleteOptions reads DeleteOptions from the body (if any) and the query.
func (s *Server) deleteOptions(r *http.Request, q url.Values) (metav1.DeleteOptions, error) {
	var opts metav1.DeleteOptions
	body, _, err := s.readObjectBody(r, "DeleteOptions")
	if err != nil {
		return opts, err
	}
	if len(body) > 0 {
		// As kube-apiserver: options come from the body when there is one,
		// else from the query.
		var tm struct {
			APIVersion string `json:"apiVersion,omitempty"`
			Kind       string `json:"kind,omitempty"`
		}
		if err := json.Unmarshal(body, &tm); err != nil {
			return opts, badRequest("couldn't get version/kind; json parse error: %v", err)
		}
		if err := json.Unmarshal(body, &opts); err != nil {
			return opts, badRequest("%v", err)
		}
	} else {
		if v := q.Get("propagationPolicy"); v != "" {
			p := metav1.DeletionPropagation(v)
			opts.PropagationPolicy = &p
		}
		opts.DryRun = q["dryRun"]
		if v := q.Get("gracePeriodSeconds"); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return opts, badRequest("%v", err)
			}
			opts.GracePeriodSeconds = &n
		}
	}
	if errs := metavalidation.ValidateDeleteOptions(&opts); len(errs) > 0 {
		return opts, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "DeleteOptions"}, "", errs)
	}
	return opts, nil
}

// delete deletes an object, or marks it deleted (deletionTimestamp) while it
// has finalizers. It reports whether the object is gone.
func (s *Server) delete(k *kind, ns, name string, opts metav1.DeleteOptions) (*storage.Object, bool, error) {
	if err := k.checkKey(ns, name); err != nil {
		return nil, false, err
	}
	dry := len(opts.DryRun) > 0
	var marked *storage.Object // the graceful deletion's first write
	if k.gracePeriod != nil && !dry {
		// As kube-apiserver deletes pods: an update first records the
		// deletion (deletionTimestamp, the grace period, generation + 1);
		// with a grace period of 0 (a pod no node runs, or asked for) the
		// object is then deleted, else it stays until a deletion with a
		// shorter period.
		proceed := false
		var cur *storage.Object
		o, _, err := s.store.Write(k.storageResource, ns, name, func(c *storage.Object) (storage.EncodeFunc, bool, error) {
			cur, proceed = c, false
			if err := checkDeletePreconditions(k, name, opts, c); err != nil {
				return nil, false, err
			}
			obj, err := decodeMap(c.Data)
			if err != nil {
				return nil, false, fmt.Errorf("decoding stored object: %w", err)
			}
			u := &unstructured.Unstructured{Object: obj}
			if ts := u.GetDeletionTimestamp(); ts != nil {
				d := u.GetDeletionGracePeriodSeconds()
				if d == nil || *d == 0 {
					proceed = true
					return nil, false, nil
				}
				if opts.GracePeriodSeconds == nil || *opts.GracePeriodSeconds >= *d {
					return nil, false, nil // pending; only a shorter period changes it
				}
				period := max(*opts.GracePeriodSeconds, 0)
				next := ts.Add(-time.Duration(*d) * time.Second).Add(time.Duration(period) * time.Second)
				if now := s.opts.Now(); next.Before(now) {
					next = now
					if period != 0 {
						period = 1
					}
				}
				nts := metav1.NewTime(next)
				u.SetDeletionTimestamp(&nts)
				u.SetDeletionGracePeriodSeconds(&period)
				proceed = period == 0
				return k.encoder(obj), false, nil
			}
			grace := k.gracePeriod(obj, opts)
			nts := metav1.NewTime(s.opts.Now().Add(time.Duration(grace) * time.Second))
			u.SetDeletionTimestamp(&nts)
			u.SetDeletionGracePeriodSeconds(&grace)
			if g := u.GetGeneration(); g > 0 {
				u.SetGeneration(g + 1)
			}
			// The same update takes the garbage collector's finalizers,
			// as kube-apiserver's registry adds them.
			if fs, changed := s.gcFinalizers(k, u.GetFinalizers(), opts); changed {
				u.SetFinalizers(fs)
			}
			proceed = grace == 0
			return k.encoder(obj), false, nil
		})
		if err != nil {
			return nil, false, err
		}
		if o != cur {
			s.afterWrite(k, cur, o)
			marked = o
			opts.Preconditions = nil // checked; the revision is now ours
		}
		if !proceed {
			return o, false, nil
		}
	}
	var before *storage.Object
	dryDeleted := false // a dry run that would delete at once
	o, deleted, err := s.store.Write(k.storageResource, ns, name, func(cur *storage.Object) (storage.EncodeFunc, bool, error) {
		before = cur
		if err := checkDeletePreconditions(k, name, opts, cur); err != nil {
			return nil, false, err
		}
		obj, err := decodeMap(cur.Data)
		if err != nil {
			return nil, false, fmt.Errorf("decoding stored object: %w", err)
		}
		u := &unstructured.Unstructured{Object: obj}
		if k.terminate != nil {
			// Namespaces and CRDs first terminate: what they hold is
			// deleted below (deleteContent), then the object.
			switch {
			case dry:
				return nil, false, nil
			case u.GetDeletionTimestamp() == nil:
				k.terminate(obj)
				// The first deletion takes the collector's finalizers:
				// kube's namespace registry by its own rules, CRDs by the
				// registry's.
				fs, changed := s.gcFinalizers(k, u.GetFinalizers(), opts)
				if k.gvr == namespaceGVR {
					fs, changed = s.namespaceGCFinalizers(u.GetFinalizers(), opts)
				}
				if changed {
					u.SetFinalizers(fs)
				}
			case len(u.GetFinalizers()) == 0 && (k.waitsForContent == nil || !k.waitsForContent(s, name)):
				return k.encoder(obj), true, nil
			default:
				return nil, false, nil // deletion already in progress
			}
			s.markDeleted(u)
			if k.gvr == namespaceGVR {
				// kube's namespace registry records no grace period.
				unstructured.RemoveNestedField(obj, "metadata", "deletionGracePeriodSeconds")
			}
			return k.encoder(obj), false, nil
		}
		// As kube-apiserver's registry (updateForGracefulDeletionAndFinalizers):
		// the deletion's options set the garbage collector's finalizers;
		// with finalizers the object is marked deleted and stays, without
		// any it goes. A later deletion may change the collector's
		// finalizers again (an Orphan delete turned Foreground).
		fs, changed := s.gcFinalizers(k, u.GetFinalizers(), opts)
		if dry {
			dryDeleted = len(fs) == 0
			return nil, false, nil
		}
		if len(fs) == 0 {
			return k.encoder(obj), true, nil
		}
		if u.GetDeletionTimestamp() != nil && !changed && ptrIsZero(u.GetDeletionGracePeriodSeconds()) {
			return nil, false, nil // deletion already in progress, nothing changes
		}
		u.SetFinalizers(fs)
		s.markAsDeleting(u)
		return k.encoder(obj), false, nil
	})
	if err != nil {
		return nil, false, err
	}
	if dryDeleted {
		return o, true, nil
	}
	if deleted {
		s.decoded.forget(ns, name)
	}
	if marked != nil && deleted {
		// The answer is the deleted object: the marked state at the
		// deletion's revision, as kube-apiserver's.
		s.afterDelete(k, o)
		return o, true, nil
	}
	if o != before {
		s.afterWrite(k, before, o)
	}
	switch {
	case deleted:
		s.afterDelete(k, o)
	case dry || o == before:
	case k.deleteContent != nil:
		k.deleteContent(s, name)
	}
	return o, deleted, nil
}

func ptrIsZero(p *int64) bool { return p == nil || *p == 0 }

// checkDeletePreconditions checks the uid and resourceVersion
// preconditions of a deletion, with kube-apiserver's messages (which name
// the kind, not the resource).
func checkDeletePreconditions(k *kind, name string, opts metav1.DeleteOptions, cur *storage.Object) error {
	p := opts.Preconditions
	if p == nil {
		return nil
	}
	gk := schema.GroupResource{Group: k.gvr.Group, Resource: k.kind}
	if p.UID != nil && string(*p.UID) != cur.UID {
		return apierrors.NewConflict(gk, name, fmt.Errorf("the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *p.UID, cur.UID))
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != formatRV(cur.ResourceVersion) {
		return apierrors.NewConflict(gk, name, fmt.Errorf("the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%d). The object might have been modified", *p.ResourceVersion, cur.ResourceVersion))
	}
	return nil
}

// gcFinalizers returns the finalizers an object's deletion leaves it with,
// as kube-apiserver's registry computes them
// (deletionFinalizersForGarbageCollection), and whether they differ from
// fs as a set. The garbage collector's finalizers, orphan and
// foregroundDeletion, follow the deletion's orphanDependents, else its
// propagationPolicy, else the one the object already has, else the kind's
// default policy (orphan for the kinds that keep their dependents by
// default); the other finalizers stay. Without a garbage collector
// (Options.GarbageCollector.Disabled) deletions add none, as
// kube-apiserver's with --enable-garbage-collector=false.
func (s *Server) gcFinalizers(k *kind, fs []string, opts metav1.DeleteOptions) ([]string, bool) {
	if !s.gcEnabled() {
		return fs, false
	}
	orphan, foreground := k.orphanByDefault, false
	//nolint:staticcheck // orphanDependents is deprecated and still honoured, as kube-apiserver does
	od := opts.OrphanDependents
	switch p := opts.PropagationPolicy; {
	case od != nil:
		orphan, foreground = *od, false
	case p != nil && *p == metav1.DeletePropagationOrphan:
		orphan, foreground = true, false
	case p != nil && *p == metav1.DeletePropagationForeground:
		orphan, foreground = false, true
	case p != nil && *p == metav1.DeletePropagationBackground:
		orphan, foreground = false, false
	default:
		for _, f := range fs {
			if f == metav1.FinalizerOrphanDependents {
				orphan, foreground = true, false
				break
			}
			if f == metav1.FinalizerDeleteDependents {
				orphan, foreground = false, true
				break
			}
		}
	}
	return withGCFinalizers(fs, orphan, foreground)
}

// namespaceGCFinalizers is gcFinalizers for a namespace's first deletion,
// by kube's namespace registry's rules: orphanDependents true asks for the
// orphan finalizer and false for foregroundDeletion, else the
// propagationPolicy (Orphan, Foreground), else the finalizers it has stay.
func (s *Server) namespaceGCFinalizers(fs []string, opts metav1.DeleteOptions) ([]string, bool) {
	if !s.gcEnabled() {
		return fs, false
	}
	orphan := slices.Contains(fs, metav1.FinalizerOrphanDependents)
	foreground := slices.Contains(fs, metav1.FinalizerDeleteDependents)
	//nolint:staticcheck // orphanDependents is deprecated and still honoured, as kube-apiserver does
	if od := opts.OrphanDependents; od != nil {
		orphan, foreground = *od, !*od
	} else if p := opts.PropagationPolicy; p != nil {
		orphan, foreground = *p == metav1.DeletePropagationOrphan, *p == metav1.DeletePropagationForeground
	}
	return withGCFinalizers(fs, orphan, foreground)
}

// sameSet reports whether a and b hold the same strings.
func sameSet(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			return false
		}
	}
	return true
}

// markAsDeleting marks an object that finalizers hold, as kube-apiserver's
// registry does (markAsDeleting): deletionTimestamp now unless it has an
// earlier one, grace period 0, generation + 1 on the first deletion where
// generations are kept.
func (s *Server) markAsDeleting(u *unstructured.Unstructured) {
	now := s.opts.Now()
	ts := u.GetDeletionTimestamp()
	if ts == nil && u.GetGeneration() > 0 {
		u.SetGeneration(u.GetGeneration() + 1)
	}
	if ts == nil || ts.After(now) {
		mt := metav1.NewTime(now)
		u.SetDeletionTimestamp(&mt)
	}
	zero := int64(0)
	u.SetDeletionGracePeriodSeconds(&zero)
}

// markDeleted records a deletion in an object's metadata: deletionTimestamp
// now, grace period 0, generation + 1 where generations are kept.
func (s *Server) markDeleted(u *unstructured.Unstructured) {
	now := metav1.NewTime(s.opts.Now())
	u.SetDeletionTimestamp(&now)
	zero := int64(0)
	u.SetDeletionGracePeriodSeconds(&zero)
	if g := u.GetGeneration(); g > 0 {
		u.SetGeneration(g + 1)
	}
}

func (s *Server) serveDeleteCollection(w http.ResponseWriter, r *http.Request, k *kind, ns string, q url.Values) error {
	opts, err := s.deleteOptions(r, q)
	if err != nil {
		return err
	}
	pred, err := s.predicate(k, q)
	if err != nil {
		return err
	}
	if err := k.checkKey(ns, ""); err != nil {
		return err
	}
	res, err := s.store.List(k.storageResource, storage.ListOptions{Namespace: ns, Predicate: pred})
	if err != nil {
		return err
	}
	// As kube-apiserver: the list of what was deleted, each item as it was
	// listed (or its new state if a finalizer holds it), at the list's
	// revision.
	var buf bytes.Buffer
	lm, err := json.Marshal(metav1.ListMeta{ResourceVersion: formatRV(res.Revision)})
	if err != nil {
		return err
	}
	fmt.Fprintf(&buf, `{"kind":%q,"apiVersion":%q,"metadata":%s,"items":[`, k.listKind, k.apiVersion(), lm)
	n := 0
	for _, o := range res.Objects {
		if err := s.admitDelete(w, r, k, o.Namespace, o.Name, opts); err != nil {
			return err
		}
		d, deleted, err := s.delete(k, o.Namespace, o.Name, opts)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if deleted {
			d = o
		}
		b, err := s.output(k, d)
		if err != nil {
			return err
		}
		if k.crd == nil {
			b = jsontree.StripTypeMeta(b)
		}
		if n > 0 {
			buf.WriteByte(',')
		}
		buf.Write(b)
		n++
	}
	buf.WriteString("]}")
	writeJSON(w, http.StatusOK, buf.Bytes())
	return nil
}

// withGCFinalizers returns fs with the orphan finalizer if orphan and the
// foregroundDeletion one if foreground (and neither otherwise), and
// whether that changed the set.
func withGCFinalizers(fs []string, orphan, foreground bool) ([]string, bool) {
	var out []string
	for _, f := range fs {
		if f != metav1.FinalizerOrphanDependents && f != metav1.FinalizerDeleteDependents {
			out = append(out, f)
		}
	}
	if orphan {
		out = append(out, metav1.FinalizerOrphanDependents)
	}
	if foreground {
		out = append(out, metav1.FinalizerDeleteDependents)
	}
	if sameSet(fs, out) {
		return fs, false
	}
	return out, true
}
