package apiserver

import (
	"net/http"
	"testing"
)

// TestOtherKinds checks the defaults and validation of the table's
// discovery, networking, policy, storage, autoscaling, admissionregistration
// and certificates kinds.
func TestOtherKinds(t *testing.T) {
	const ns = "/namespaces/default"
	runKindCases(t, []kindCase{
		{name: "endpointslice port defaults", path: "/apis/discovery.k8s.io/v1" + ns + "/endpointslices", code: http.StatusCreated,
			body: `{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"es"},"addressType":"IPv4","endpoints":[{"addresses":["10.0.0.1"]}],"ports":[{"port":80}]}`,
			want: []string{`"ports":[{"name":"","port":80,"protocol":"TCP"}]`, `"generation":1`}},
		{name: "endpointslice labels move generation", method: http.MethodPatch, path: "/apis/discovery.k8s.io/v1" + ns + "/endpointslices/es", body: `{"metadata":{"labels":{"a":"b"}}}`,
			code: http.StatusOK, want: []string{`"generation":2`}},
		{name: "endpointslice address family", path: "/apis/discovery.k8s.io/v1" + ns + "/endpointslices", code: http.StatusUnprocessableEntity,
			body: `{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"v6"},"addressType":"IPv4","endpoints":[{"addresses":["fd00::1"]}]}`,
			want: []string{`must be an IPv4 address`}},
		{name: "networkpolicy defaults", path: "/apis/networking.k8s.io/v1" + ns + "/networkpolicies", code: http.StatusCreated,
			body: `{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"name":"np"},"spec":{"podSelector":{},"egress":[{"ports":[{"port":53}]}]}}`,
			want: []string{`"policyTypes":["Ingress","Egress"]`, `"protocol":"TCP"`}},
		{name: "ingress needs a path type", path: "/apis/networking.k8s.io/v1" + ns + "/ingresses", code: http.StatusUnprocessableEntity,
			body: `{"apiVersion":"networking.k8s.io/v1","kind":"Ingress","metadata":{"name":"i"},"spec":{"rules":[{"http":{"paths":[{"path":"/","backend":{"service":{"name":"s","port":{"number":80}}}}]}}]}}`,
			want: []string{`spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified`}},
		{name: "pdb status", path: "/apis/policy/v1" + ns + "/poddisruptionbudgets", code: http.StatusCreated,
			body: `{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"p"},"spec":{"maxUnavailable":1,"selector":{}}}`,
			want: []string{`"status":{"currentHealthy":0,"desiredHealthy":0,"disruptionsAllowed":0,"expectedPods":0}`, `"generation":1`}},
		{name: "storageclass defaults", path: "/apis/storage.k8s.io/v1/storageclasses", code: http.StatusCreated,
			body: `{"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"sc"},"provisioner":"example.com/p","parameters":{"a":"b"}}`,
			want: []string{`"reclaimPolicy":"Delete"`, `"volumeBindingMode":"Immediate"`}},
		{name: "storageclass parameters immutable", method: http.MethodPatch, path: "/apis/storage.k8s.io/v1/storageclasses/sc", body: `{"parameters":{"a":"c"}}`,
			code: http.StatusUnprocessableEntity, want: []string{`parameters: Invalid value: null: field is immutable`}},
		{name: "hpa defaults", path: "/apis/autoscaling/v2" + ns + "/horizontalpodautoscalers", code: http.StatusCreated,
			body: `{"apiVersion":"autoscaling/v2","kind":"HorizontalPodAutoscaler","metadata":{"name":"h"},"spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"d"},"maxReplicas":3,"behavior":{}}}`,
			want: []string{`"minReplicas":1`, `"averageUtilization":80`, `"scaleUp":{"policies":[{"periodSeconds":15,"type":"Pods","value":4}`, `"currentMetrics":null`}},
		{name: "hpa max below min", method: http.MethodPatch, path: "/apis/autoscaling/v2" + ns + "/horizontalpodautoscalers/h", body: `{"spec":{"minReplicas":5}}`,
			code: http.StatusUnprocessableEntity, want: []string{"spec.maxReplicas: Invalid value: 3: must be greater than or equal to `minReplicas`"}},
		{name: "hpa v1 create", path: "/apis/autoscaling/v1" + ns + "/horizontalpodautoscalers", code: http.StatusCreated,
			body: `{"apiVersion":"autoscaling/v1","kind":"HorizontalPodAutoscaler","metadata":{"name":"one"},"spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"d"},"maxReplicas":3,"targetCPUUtilizationPercentage":50}}`,
			want: []string{`"apiVersion":"autoscaling/v1"`, `"targetCPUUtilizationPercentage":50`, `"minReplicas":1`}},
		{name: "hpa v1 read as v2", method: http.MethodGet, path: "/apis/autoscaling/v2" + ns + "/horizontalpodautoscalers/one", code: http.StatusOK,
			want: []string{`"metrics":[{"resource":{"name":"cpu","target":{"averageUtilization":50,"type":"Utilization"}},"type":"Resource"}]`}},
		{name: "hpa v2 read as v1", method: http.MethodGet, path: "/apis/autoscaling/v1" + ns + "/horizontalpodautoscalers/h", code: http.StatusOK,
			want: []string{`"targetCPUUtilizationPercentage":80`, `"autoscaling.alpha.kubernetes.io/behavior":"{\"ScaleUp\":{\"StabilizationWindowSeconds\":0`}},
		{name: "webhook defaults", path: "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", code: http.StatusCreated,
			body: `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"MutatingWebhookConfiguration","metadata":{"name":"m"},"webhooks":[{"name":"m.example.com","clientConfig":{"service":{"namespace":"default","name":"s"}},"sideEffects":"None","admissionReviewVersions":["v1"],"rules":[{"operations":["CREATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["pods"]}]}]}`,
			want: []string{`"failurePolicy":"Fail"`, `"matchPolicy":"Equivalent"`, `"port":443`, `"reinvocationPolicy":"Never"`, `"scope":"*"`, `"timeoutSeconds":10`}},
		{name: "webhook side effects", path: "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", code: http.StatusUnprocessableEntity,
			body: `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration","metadata":{"name":"v"},"webhooks":[{"name":"v.example.com","clientConfig":{"url":"https://x"},"admissionReviewVersions":["v1"]}]}`,
			want: []string{`webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun`}},
		{name: "csr request", path: "/apis/certificates.k8s.io/v1/certificatesigningrequests", code: http.StatusUnprocessableEntity,
			body: `{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{"name":"c"},"spec":{"request":"eA==","signerName":"example.com/s","usages":["client auth"]}}`,
			want: []string{`PEM block type must be CERTIFICATE REQUEST`}},
	})
}
