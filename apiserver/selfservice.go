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

// What kube-apiserver creates for itself: the namespaces default,
// kube-system, kube-public and kube-node-lease; the kubernetes Service in
// default, the first address of the service range, port 443 to the server's
// own port (known once it serves; 443 until then); and, once it serves, the
// Service's Endpoints and EndpointSlice, which name the address and port the
// server listens on (kube-apiserver's endpoint reconciler: its advertise
// address and secure port). Each is recorded as kube-apiserver's writes
// record it, their managedFields written by hand, as New needs no schema.

var (
	servicesGVR       = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	endpointsGVR      = schema.GroupVersionResource{Version: "v1", Resource: "endpoints"}
	endpointSlicesGVR = schema.GroupVersionResource{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"}
)

// systemNamespaces are the namespaces kube-apiserver creates.
var systemNamespaces = []string{"default", "kube-system", "kube-public", "kube-node-lease"}

// ownManagedFields is the managedFields of a write of kube-apiserver's own:
// an Update by kube-apiserver of fields (FieldsV1) at apiVersion.
func (s *Server) ownManagedFields(apiVersion string, fields map[string]any) []any {
	return []any{map[string]any{
		"manager": "kube-apiserver", "operation": "Update", "apiVersion": apiVersion,
		"time": s.opts.Now().UTC().Truncate(time.Second).Format(time.RFC3339), "fieldsType": "FieldsV1", "fieldsV1": fields,
	}}
}

// createSystemNamespaces creates the namespaces kube-apiserver creates,
// those a data directory does not hold already. Their managedFields are
// kube-apiserver's: the name label its namespace strategy adds.
func (s *Server) createSystemNamespaces() error {
	for _, name := range systemNamespaces {
		if _, err := s.store.Get("/namespaces", "", name); err == nil {
			continue // kept in a data directory
		}
		obj := map[string]any{"apiVersion": "v1", "kind": "Namespace", "spec": map[string]any{}, "metadata": map[string]any{
			"name": name,
			"managedFields": s.ownManagedFields("v1", map[string]any{
				"f:metadata": map[string]any{"f:labels": map[string]any{".": map[string]any{}, "f:kubernetes.io/metadata.name": map[string]any{}}},
			}),
		}}
		if _, err := s.create(s.reg.get(namespaceGVR), obj, "", &writeOpts{keepManagedFields: true}); err != nil {
			return fmt.Errorf("apiserver: namespace %s: %w", name, err)
		}
	}
	return nil
}

// kubernetesServiceIP is the first address of the service range
// (10.96.0.0/12), kube-apiserver's own.
const kubernetesServiceIP = "10.96.0.1"

// createKubernetesService creates the Service, recorded as kube-apiserver
// records it (its managedFields written by hand, as New needs no schema).
func (s *Server) createKubernetesService() error {
	if _, err := s.store.Get(s.reg.get(servicesGVR).storageResource, "default", "kubernetes"); err == nil {
		return nil // kept in a data directory
	}
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
			"labels":        map[string]any{"component": "apiserver", "provider": "kubernetes"},
			"managedFields": s.ownManagedFields("v1", fields),
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
// port, and publishes the Service's Endpoints and EndpointSlice. A deleted
// or changed Service is left as it is.
func (s *Server) pointKubernetesService(addr net.Addr) {
	host, p, err := net.SplitHostPort(clientAddr(addr))
	if err != nil {
		return
	}
	port, err := strconv.ParseInt(p, 10, 32)
	if err != nil {
		return
	}
	if port != 443 {
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
	if err := s.publishKubernetesEndpoints(host, port); err != nil {
		s.opts.Logger.Debug("apiserver: the kubernetes Service's endpoints", "err", err)
	}
}

// publishKubernetesEndpoints writes the Endpoints and the EndpointSlice of
// the kubernetes Service as kube-apiserver's endpoint reconciler writes
// them: the address ip and the port, named https; created when missing,
// their addresses and ports set when they name others (a server restarted
// on a data directory at another address), left as they are otherwise.
func (s *Server) publishKubernetesEndpoints(ip string, port int64) error {
	ports := []any{map[string]any{"name": "https", "port": port, "protocol": "TCP"}}
	subsets := []any{map[string]any{"addresses": []any{map[string]any{"ip": ip}}, "ports": ports}}
	addressType := "IPv4"
	if a := net.ParseIP(ip); a != nil && a.To4() == nil {
		addressType = "IPv6"
	}
	endpoints := []any{map[string]any{"addresses": []any{ip}, "conditions": map[string]any{"ready": true}}}

	err := s.ensureOwn(endpointsGVR, map[string]any{
		"apiVersion": "v1", "kind": "Endpoints",
		"metadata": map[string]any{
			"name": "kubernetes", "namespace": "default",
			"labels": map[string]any{"endpointslice.kubernetes.io/skip-mirror": "true"},
			"managedFields": s.ownManagedFields("v1", map[string]any{
				"f:metadata": map[string]any{"f:labels": map[string]any{".": map[string]any{}, "f:endpointslice.kubernetes.io/skip-mirror": map[string]any{}}},
				"f:subsets":  map[string]any{},
			}),
		},
		"subsets": subsets,
	}, func(obj map[string]any) { obj["subsets"] = subsets })
	if err != nil {
		return err
	}
	return s.ensureOwn(endpointSlicesGVR, map[string]any{
		"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
		"metadata": map[string]any{
			"name": "kubernetes", "namespace": "default",
			"labels": map[string]any{"kubernetes.io/service-name": "kubernetes"},
			"managedFields": s.ownManagedFields("discovery.k8s.io/v1", map[string]any{
				"f:addressType": map[string]any{}, "f:endpoints": map[string]any{}, "f:ports": map[string]any{},
				"f:metadata": map[string]any{"f:labels": map[string]any{".": map[string]any{}, "f:kubernetes.io/service-name": map[string]any{}}},
			}),
		},
		"addressType": addressType, "endpoints": endpoints, "ports": ports,
	}, func(obj map[string]any) {
		obj["addressType"], obj["endpoints"], obj["ports"] = addressType, endpoints, ports
	})
}

// ensureOwn creates want, an object of the server's own in default, when it
// is missing, and otherwise sets what set sets on the stored object (a write
// only when that changes it: no-op updates write nothing).
func (s *Server) ensureOwn(gvr schema.GroupVersionResource, want map[string]any, set func(obj map[string]any)) error {
	k := s.reg.get(gvr)
	name := jsontree.Str(meta(want), "name")
	if _, err := s.store.Get(k.storageResource, "default", name); err != nil {
		if _, err := s.create(k, want, "default", &writeOpts{keepManagedFields: true}); err != nil {
			return fmt.Errorf("%s %s: %w", gvr.Resource, name, err)
		}
		return nil
	}
	ri := requestInfo{gv: gvr.GroupVersion(), resource: gvr.Resource, namespace: "default", name: name}
	_, err := s.update(k, ri, &writeOpts{}, func(cur *storage.Object) (map[string]any, error) {
		obj, err := decodeMap(cur.Data)
		if err != nil {
			return nil, err
		}
		set(obj)
		return obj, nil
	})
	if err != nil {
		return fmt.Errorf("%s %s: %w", gvr.Resource, name, err)
	}
	return nil
}
