package apiserver

import (
	"fmt"
	"net/netip"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"kloop.dev/kloop/apiserver/internal/jsontree"
)

// serviceCIDR is the range Service cluster IPs are allocated from, as
// kube-apiserver's default --service-cluster-ip-range.
var serviceCIDR = netip.MustParsePrefix("10.96.0.0/12")

// ipAllocator hands out Service cluster IPs, as kube-apiserver's allocator:
// unique while the Service exists, released when it is deleted.
type ipAllocator struct {
	mu   sync.Mutex // guards used and next
	used map[netip.Addr]bool
	next netip.Addr // where the search for a free address starts
}

func newIPAllocator() *ipAllocator {
	// .0 is the network and .1 belongs to the "kubernetes" Service in a cluster.
	return &ipAllocator{used: map[netip.Addr]bool{}, next: serviceCIDR.Addr().Next().Next()}
}

// allocate reserves ip, or the next free address when ip is empty.
func (a *ipAllocator) allocate(ip string) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if ip != "" {
		addr, err := netip.ParseAddr(ip)
		if err != nil || !serviceCIDR.Contains(addr) {
			return "", fmt.Errorf("the provided IP (%s) is not in the valid range %s", ip, serviceCIDR)
		}
		if a.used[addr] {
			return "", fmt.Errorf("the provided IP (%s) is already allocated", ip)
		}
		a.used[addr] = true
		return ip, nil
	}
	size := 1 << (32 - serviceCIDR.Bits())
	for range size {
		addr := a.next
		if a.next = a.next.Next(); !serviceCIDR.Contains(a.next) {
			a.next = serviceCIDR.Addr().Next().Next()
		}
		if !a.used[addr] && serviceCIDR.Contains(addr) {
			a.used[addr] = true
			return addr.String(), nil
		}
	}
	return "", fmt.Errorf("range is full")
}

func (a *ipAllocator) release(ip string) {
	if addr, err := netip.ParseAddr(ip); err == nil {
		a.mu.Lock()
		delete(a.used, addr)
		a.mu.Unlock()
	}
}

// releaseServiceIP releases the cluster IP of a Service (stored form) that
// is not, or no longer, stored.
func (s *Server) releaseServiceIP(obj map[string]any) {
	if ip := jsontree.Str(obj, "spec", "clusterIP"); ip != "" && ip != "None" {
		s.ips.release(ip)
	}
}

// allocateServiceIP sets spec.clusterIP(s) of a new Service (stored form).
func (s *Server) allocateServiceIP(obj map[string]any) error {
	spec, _ := obj["spec"].(map[string]any)
	if spec == nil || jsontree.Str(spec, "type") == "ExternalName" {
		return nil
	}
	ip := jsontree.Str(spec, "clusterIP")
	if ip == "None" {
		spec["clusterIPs"] = []any{"None"}
		if sel, _ := spec["selector"].(map[string]any); len(sel) > 0 {
			// A headless service with a selector gets the cluster's family.
			spec["ipFamilies"], spec["ipFamilyPolicy"] = []any{"IPv4"}, "SingleStack"
		}
		return nil
	}
	got, err := s.ips.allocate(ip)
	if err != nil {
		return apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, jsontree.Str(obj, "metadata", "name"),
			field.ErrorList{field.Invalid(field.NewPath("spec", "clusterIPs").Index(0), ip, err.Error())})
	}
	spec["clusterIP"], spec["clusterIPs"] = got, []any{got}
	spec["ipFamilies"], spec["ipFamilyPolicy"] = []any{"IPv4"}, "SingleStack"
	return nil
}
