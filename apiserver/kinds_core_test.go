package apiserver

import (
	"net/http"
	"testing"
)

// TestCoreKinds checks the defaults, admission and validation of the
// core/v1 kinds of the table.
func TestCoreKinds(t *testing.T) {
	const ns = "/api/v1/namespaces/default"
	runKindCases(t, []kindCase{
		{name: "node keeps its status and gets the not-ready taint", path: "/api/v1/nodes", code: http.StatusCreated,
			body: `{"apiVersion":"v1","kind":"Node","metadata":{"name":"n"},"status":{"capacity":{"cpu":"2"}}}`,
			want: []string{`"taints":[{"effect":"NoSchedule","key":"node.kubernetes.io/not-ready"}]`, `"allocatable":{"cpu":"2"}`, `"capacity":{"cpu":"2"}`}},
		{name: "node taint effect", method: http.MethodPatch, path: "/api/v1/nodes/n", body: `{"spec":{"taints":[{"key":"k","effect":"Never"}]}}`,
			code: http.StatusUnprocessableEntity, want: []string{`metadata.taints[0].effect: Unsupported value: \"Never\"`}},
		{name: "node unschedulable selector", method: http.MethodGet, path: "/api/v1/nodes?fieldSelector=spec.unschedulable%3Dfalse", code: http.StatusOK, want: []string{`"name":"n"`}},
		{name: "persistent volume", path: "/api/v1/persistentvolumes", code: http.StatusCreated,
			body: `{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pv"},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"hostPath":{"path":"/x"}}}`,
			want: []string{`"finalizers":["kubernetes.io/pv-protection"]`, `"persistentVolumeReclaimPolicy":"Retain"`, `"volumeMode":"Filesystem"`, `"status":{"lastPhaseTransitionTime":"`, `"phase":"Pending"`, `"hostPath":{"path":"/x","type":""}`}},
		{name: "persistent volume without source", path: "/api/v1/persistentvolumes", code: http.StatusUnprocessableEntity,
			body: `{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"nosource"},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"]}}`,
			want: []string{`spec: Required value: must specify a volume type`}},
		{name: "claim", path: ns + "/persistentvolumeclaims", code: http.StatusCreated,
			body: `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"c"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}`,
			want: []string{`"finalizers":["kubernetes.io/pvc-protection"]`, `"status":{"phase":"Pending"}`, `"volumeMode":"Filesystem"`}},
		{name: "claim resize unbound", method: http.MethodPatch, path: ns + "/persistentvolumeclaims/c", body: `{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}`,
			code: http.StatusUnprocessableEntity, want: []string{`spec is immutable after creation`}},
		{name: "claim bound", method: http.MethodPatch, path: ns + "/persistentvolumeclaims/c/status", body: `{"status":{"phase":"Bound"}}`, code: http.StatusOK},
		{name: "claim resize without class", method: http.MethodPatch, path: ns + "/persistentvolumeclaims/c", body: `{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}`,
			code: http.StatusForbidden, want: []string{`only dynamically provisioned pvc can be resized`}},
		{name: "claim access modes immutable", method: http.MethodPatch, path: ns + "/persistentvolumeclaims/c", body: `{"spec":{"accessModes":["ReadWriteMany"]}}`,
			code: http.StatusUnprocessableEntity, want: []string{`spec is immutable after creation`}},
		{name: "endpoints", path: ns + "/endpoints", code: http.StatusCreated,
			body: `{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"e"},"subsets":[{"addresses":[{"ip":"10.0.0.1"}],"ports":[{"port":80}]}]}`,
			want: []string{`"ports":[{"port":80,"protocol":"TCP"}]`}},
		{name: "quota", path: ns + "/resourcequotas", code: http.StatusCreated,
			body: `{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"q"},"spec":{"hard":{"pods":"3"}},"status":{"used":{"pods":"1"}}}`, want: []string{`"status":{}`}},
		{name: "quota not an integer", method: http.MethodPatch, path: ns + "/resourcequotas/q", body: `{"spec":{"hard":{"pods":"0.5"}}}`,
			code: http.StatusUnprocessableEntity, want: []string{`spec.hard[pods]: Invalid value: \"500m\": must be an integer`}},
		{name: "limit range defaults", path: ns + "/limitranges", code: http.StatusCreated,
			body: `{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"l"},"spec":{"limits":[{"type":"Container","max":{"cpu":"1"}}]}}`,
			want: []string{`"default":{"cpu":"1"}`, `"defaultRequest":{"cpu":"1"}`}},
		{name: "replication controller defaults", path: ns + "/replicationcontrollers", code: http.StatusCreated,
			body: `{"apiVersion":"v1","kind":"ReplicationController","metadata":{"name":"rc"},"spec":{"template":{"metadata":{"labels":{"app":"rc"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`,
			want: []string{`"labels":{"app":"rc"}`, `"replicas":1`, `"selector":{"app":"rc"}`, `"status":{"replicas":0}`}},
		{name: "replication controller scale", method: http.MethodGet, path: ns + "/replicationcontrollers/rc/scale", code: http.StatusOK, want: []string{`"selector":"app=rc"`}},
		{name: "replication controller orphans by default", method: http.MethodDelete, path: ns + "/replicationcontrollers/rc", code: http.StatusOK},
	})
}
