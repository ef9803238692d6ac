package apiserver

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"kloop.dev/kloop/apiserver/internal/jsontree"
	"kloop.dev/kloop/apiserver/storage"
)

// The kubernetes Service in the default namespace, which kube-apiserver
// creates for itself: the first address of the service range, port 443 to
// the server's own port (known once it serves; 443 until then).

var servicesGVR = schema.GroupVersionResource{Version: "v1", Resource: "services"}

// kubernetesServiceIP is the first address of the service range
// (10.96.0.0/12), kube-apiserver's own.
const kubernetesServiceIP = "10.96.0.1"

// createKubernetesService creates the Service, recorded as kube-apiserver
// records it (its managedFields written by hand, as New needs no schema).
func (s *Server) createKubernetesService() error {
	if _, err := s.store.Get(s.reg.get(servicesGVR).storageResource, "default", "kubernetes"); err == nil {
		return nil // kept in a data directory
	}
	now := s.opts.Now().UTC().Truncate(time.Second)
	fields := map[string]any{
		"f:metadata": map[string]any{"f:labels": map[string]any{".": map[string]any{}, "f:component": map[string]any{}, "f:provider": map[string]any{}}},
		"f:spec": map[string]any{
			"f:clusterIP": map[string]any{}, "f:internalTrafficPolicy": map[string]any{}, "f:ipFamilyPolicy": map[string]any{},
			"f:ports": map[string]any{".": map[string]any{}, `k:{"port":443,"protocol":"TCP"}`: map[string]any{
				".": map[string]any{}, "f:name": map[string]any{}, "f:port": map[string]any{}, "f:protocol": map[string]any{}, "f:targetPort": map[string]any{}}},
			"f:sessionAffinity": map[string]any{}, "f:type": map[string]any{},
		},
	}
	obj := map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{
			"name": "kubernetes", "namespace": "default",
			"labels": map[string]any{"component": "apiserver", "provider": "kubernetes"},
			"managedFields": []any{map[string]any{
				"manager": "kube-apiserver", "operation": "Update", "apiVersion": "v1",
				"time": now.Format(time.RFC3339), "fieldsType": "FieldsV1", "fieldsV1": fields,
			}},
		},
		"spec": map[string]any{
			"type": "ClusterIP", "clusterIP": kubernetesServiceIP, "clusterIPs": []any{kubernetesServiceIP},
			"ipFamilies": []any{"IPv4"}, "ipFamilyPolicy": "SingleStack", "internalTrafficPolicy": "Cluster",
			"sessionAffinity": "None",
			"ports":           []any{map[string]any{"name": "https", "port": int64(443), "protocol": "TCP", "targetPort": int64(443)}},
		},
	}
	// The server's own write: it keeps the managedFields it carries.
	if _, err := s.create(s.reg.get(servicesGVR), obj, "default", &writeOpts{keepManagedFields: true}); err != nil {
		return fmt.Errorf("apiserver: the kubernetes Service: %w", err)
	}
	return nil
}

// pointKubernetesService makes the kubernetes Service's target port the
// port the server listens on (addr), as kube-apiserver's is its secure
// port. A deleted or changed Service is left as it is.
func (s *Server) pointKubernetesService(addr net.Addr) {
	_, p, err := net.SplitHostPort(addr.String())
	if err != nil {
		return
	}
	port, err := strconv.ParseInt(p, 10, 32)
	if err != nil || port == 443 {
		return
	}
	k := s.reg.get(servicesGVR)
	ri := requestInfo{gv: servicesGVR.GroupVersion(), resource: servicesGVR.Resource, namespace: "default", name: "kubernetes"}
	_, err = s.update(k, ri, &writeOpts{}, func(cur *storage.Object) (map[string]any, error) {
		obj, err := decodeMap(cur.Data)
		if err != nil {
			return nil, err
		}
		ports, _ := jsontree.Get(obj, "spec", "ports").([]any)
		if len(ports) != 1 {
			return obj, nil
		}
		if p, ok := ports[0].(map[string]any); ok && jsontree.Int(p, "port") == 443 {
			p["targetPort"] = port
		}
		return obj, nil
	})
	if err != nil {
		s.opts.Logger.Debug("apiserver: pointing the kubernetes Service at the server", "err", err)
	}
}
