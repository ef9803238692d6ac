package apiserver

import (
	"net/http"
	"testing"
)

// Answers are compared as compact JSON, keys sorted as the server writes
// them.

// TestAppsKinds checks the defaults and validation of apps/v1
// StatefulSets, DaemonSets and ControllerRevisions (the conformance suite
// compares them with kube-apiserver's).
func TestAppsKinds(t *testing.T) {
	const sts = "/apis/apps/v1/namespaces/default/statefulsets"
	const ds = "/apis/apps/v1/namespaces/default/daemonsets"
	const crs = "/apis/apps/v1/namespaces/default/controllerrevisions"
	tmpl := `"template":{"metadata":{"labels":{"app":"a"}},"spec":{"containers":[{"name":"c","image":"i"}]}}`
	runKindCases(t, []kindCase{
		{name: "statefulset defaults", path: sts, code: http.StatusCreated,
			body: `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"s"},"spec":{"selector":{"matchLabels":{"app":"a"}},` + tmpl + `,"volumeClaimTemplates":[{"metadata":{"name":"d"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}]},"status":{"replicas":3}}`,
			want: []string{`"generation":1`, `"replicas":1`, `"podManagementPolicy":"OrderedReady"`, `"updateStrategy":{"rollingUpdate":{"maxUnavailable":1,"partition":0},"type":"RollingUpdate"}`,
				`"revisionHistoryLimit":10`, `"persistentVolumeClaimRetentionPolicy":{"whenDeleted":"Retain","whenScaled":"Retain"}`,
				`"volumeClaimTemplates":[{"apiVersion":"v1","kind":"PersistentVolumeClaim"`, `"volumeMode":"Filesystem"`, `"dnsPolicy":"ClusterFirst"`, `"status":{"availableReplicas":0,"replicas":0}`}},
		{name: "statefulset claim template without storage", path: sts, code: http.StatusUnprocessableEntity,
			body: `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"t"},"spec":{"selector":{"matchLabels":{"app":"a"}},` + tmpl + `,"volumeClaimTemplates":[{"metadata":{"name":"d"},"spec":{"accessModes":["ReadWriteOnce"]}}]}}`,
			want: []string{`spec.volumeClaimTemplates[0].spec.resources[storage]: Required value`}},
		{name: "statefulset container name", path: sts, code: http.StatusUnprocessableEntity,
			body: `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"u"},"spec":{"selector":{"matchLabels":{"app":"a"}},"template":{"metadata":{"labels":{"app":"a"}},"spec":{"containers":[{"name":"C","image":"i"}]}}}}`,
			want: []string{`spec.template.spec.containers[0].name: Invalid value: \"C\": a lowercase RFC 1123 label`}},
		{name: "statefulset scale", method: http.MethodPatch, path: sts + "/s/scale", body: `{"spec":{"replicas":4}}`, code: http.StatusOK, want: []string{`"kind":"Scale"`, `"replicas":4`, `"selector":"app=a"`}},
		{name: "statefulset service name immutable", method: http.MethodPatch, path: sts + "/s", body: `{"spec":{"serviceName":"x"}}`, code: http.StatusUnprocessableEntity,
			want: []string{`spec.serviceName: Invalid value: \"x\": field is immutable`}},
		{name: "statefulset name is a DNS label", path: sts, code: http.StatusUnprocessableEntity,
			body: `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"a.b"},"spec":{"selector":{"matchLabels":{"app":"a"}},` + tmpl + `}}`,
			want: []string{`"field":"metadata.name"`}},
		{name: "statefulset restart policy", path: sts, code: http.StatusUnprocessableEntity,
			body: `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"r"},"spec":{"selector":{"matchLabels":{"app":"a"}},"template":{"metadata":{"labels":{"app":"a"}},"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"i"}]}}}}`,
			want: []string{`spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"`}},
		{name: "statefulset ready above replicas", method: http.MethodPatch, path: sts + "/s/status", body: `{"status":{"replicas":1,"readyReplicas":2}}`, code: http.StatusUnprocessableEntity,
			want: []string{`status.readyReplicas: Invalid value: 2: cannot be greater than status.replicas`}},
		{name: "daemonset defaults", path: ds, code: http.StatusCreated,
			body: `{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"d"},"spec":{"selector":{"matchLabels":{"app":"a"}},` + tmpl + `}}`,
			want: []string{`"annotations":{"deprecated.daemonset.template.generation":"1"}`, `"updateStrategy":{"rollingUpdate":{"maxSurge":0,"maxUnavailable":1},"type":"RollingUpdate"}`,
				`"status":{"currentNumberScheduled":0,"desiredNumberScheduled":0,"numberMisscheduled":0,"numberReady":0}`}},
		{name: "daemonset template change", method: http.MethodPatch, path: ds + "/d", body: `{"metadata":{"annotations":{"deprecated.daemonset.template.generation":"7"}},"spec":{"template":{"metadata":{"labels":{"app":"a","v":"2"}}}}}`,
			code: http.StatusOK, want: []string{`"deprecated.daemonset.template.generation":"2"`, `"generation":2`}},
		{name: "daemonset spec change", method: http.MethodPatch, path: ds + "/d", body: `{"spec":{"minReadySeconds":3}}`,
			code: http.StatusOK, want: []string{`"deprecated.daemonset.template.generation":"2"`, `"generation":3`}},
		{name: "daemonset surge and unavailable", method: http.MethodPatch, path: ds + "/d", body: `{"spec":{"updateStrategy":{"rollingUpdate":{"maxSurge":1}}}}`,
			code: http.StatusUnprocessableEntity, want: []string{`spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: 1: may not be set when maxUnavailable is non-zero`}},
		{name: "daemonset empty selector", path: ds, code: http.StatusUnprocessableEntity,
			body: `{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"e"},"spec":{"selector":{},` + tmpl + `}}`,
			want: []string{`empty selector is invalid for daemonset`}},
		{name: "controllerrevision", path: crs, code: http.StatusCreated,
			body: `{"apiVersion":"apps/v1","kind":"ControllerRevision","metadata":{"name":"r"},"revision":1,"data":{"a":1}}`, want: []string{`"revision":1`}},
		{name: "controllerrevision data immutable", method: http.MethodPatch, path: crs + "/r", body: `{"data":{"a":2}}`,
			code: http.StatusUnprocessableEntity, want: []string{`data: Invalid value`, `field is immutable`}},
		{name: "controllerrevision without data", path: crs, code: http.StatusUnprocessableEntity,
			body: `{"apiVersion":"apps/v1","kind":"ControllerRevision","metadata":{"name":"n"},"revision":1}`, want: []string{`data: Required value: data is mandatory`}},
	})
}
