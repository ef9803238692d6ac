package leaderelection

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
)

// leaseClient reads and writes one Lease through a REST client for
// coordination.k8s.io/v1. Updates carry the resourceVersion of the Lease they
// modify, so the API server rejects (409 Conflict) a write based on a stale
// read: that is the whole of the election's mutual exclusion.
type leaseClient struct {
	rest      rest.Interface
	namespace string
	name      string
}

func newLeaseClient(cfg *rest.Config, namespace, name string) (*leaseClient, error) {
	if cfg == nil {
		return nil, fmt.Errorf("leaderelection: New needs a *rest.Config")
	}
	scheme := runtime.NewScheme()
	if err := coordinationv1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("leaderelection: scheme: %w", err)
	}
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &coordinationv1.SchemeGroupVersion
	c.APIPath = "/apis"
	c.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("leaderelection: REST client: %w", err)
	}
	return &leaseClient{rest: rc, namespace: namespace, name: name}, nil
}

func (c *leaseClient) get(ctx context.Context) (*coordinationv1.Lease, error) {
	out := &coordinationv1.Lease{}
	err := c.rest.Get().Namespace(c.namespace).Resource("leases").Name(c.name).Do(ctx).Into(out)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *leaseClient) create(ctx context.Context, spec coordinationv1.LeaseSpec) (*coordinationv1.Lease, error) {
	in := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.namespace, Name: c.name},
		Spec:       spec,
	}
	out := &coordinationv1.Lease{}
	err := c.rest.Post().Namespace(c.namespace).Resource("leases").Body(in).Do(ctx).Into(out)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// update writes spec onto base (which it does not modify), with base's
// resourceVersion.
func (c *leaseClient) update(ctx context.Context, base *coordinationv1.Lease, spec coordinationv1.LeaseSpec) (*coordinationv1.Lease, error) {
	in := base.DeepCopy()
	in.Spec = spec
	out := &coordinationv1.Lease{}
	err := c.rest.Put().Namespace(c.namespace).Resource("leases").Name(c.name).Body(in).Do(ctx).Into(out)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// record is the part of a Lease's spec that the election reads and writes,
// as client-go's LeaderElectionRecord.
type record struct {
	holder               string
	leaseDurationSeconds int32
	acquireTime          time.Time
	renewTime            time.Time
	transitions          int32
}

func recordOf(spec *coordinationv1.LeaseSpec) record {
	var r record
	if spec.HolderIdentity != nil {
		r.holder = *spec.HolderIdentity
	}
	if spec.LeaseDurationSeconds != nil {
		r.leaseDurationSeconds = *spec.LeaseDurationSeconds
	}
	if spec.AcquireTime != nil {
		r.acquireTime = spec.AcquireTime.Time
	}
	if spec.RenewTime != nil {
		r.renewTime = spec.RenewTime.Time
	}
	if spec.LeaseTransitions != nil {
		r.transitions = *spec.LeaseTransitions
	}
	return r
}

// equal reports whether two records are the same observation: any change
// (a renewal changes renewTime) restarts the observer's expiry clock.
func (r record) equal(o record) bool {
	return r.holder == o.holder && r.leaseDurationSeconds == o.leaseDurationSeconds &&
		r.acquireTime.Equal(o.acquireTime) && r.renewTime.Equal(o.renewTime) && r.transitions == o.transitions
}

// spec returns the Lease spec that writes r. Times are written as MicroTime
// without a monotonic reading.
func (r record) spec() coordinationv1.LeaseSpec {
	holder, d, tr := r.holder, r.leaseDurationSeconds, r.transitions
	return coordinationv1.LeaseSpec{
		HolderIdentity:       &holder,
		LeaseDurationSeconds: &d,
		AcquireTime:          &metav1.MicroTime{Time: r.acquireTime.Round(0)},
		RenewTime:            &metav1.MicroTime{Time: r.renewTime.Round(0)},
		LeaseTransitions:     &tr,
	}
}
