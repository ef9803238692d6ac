package conformance

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"slices"
	"time"
)

// kindTranscripts: the kinds of the table of built-in kinds (apiserver's
// kinds.go), each created, read, updated, listed, watched and printed,
// through its status and scale subresources where it has them, with one
// refused write a controller would hit (kube-apiserver's 422).
var kindTranscripts = slices.Concat(appsKindTranscripts, batchKindTranscripts, coreKindTranscripts, otherKindTranscripts)

const (
	statefulsets        = "/apis/apps/v1/namespaces/{ns}/statefulsets"
	daemonsets          = "/apis/apps/v1/namespaces/{ns}/daemonsets"
	controllerrevisions = "/apis/apps/v1/namespaces/{ns}/controllerrevisions"
	jobs                = "/apis/batch/v1/namespaces/{ns}/jobs"
	cronjobs            = "/apis/batch/v1/namespaces/{ns}/cronjobs"
	nodes               = "/api/v1/nodes"
	pvs                 = "/api/v1/persistentvolumes"
	pvcs                = "/api/v1/namespaces/{ns}/persistentvolumeclaims"
	endpoints           = "/api/v1/namespaces/{ns}/endpoints"
	quotas              = "/api/v1/namespaces/{ns}/resourcequotas"
	limitranges         = "/api/v1/namespaces/{ns}/limitranges"
	rcs                 = "/api/v1/namespaces/{ns}/replicationcontrollers"
	endpointslices      = "/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices"
	ingresses           = "/apis/networking.k8s.io/v1/namespaces/{ns}/ingresses"
	ingressclasses      = "/apis/networking.k8s.io/v1/ingressclasses"
	networkpolicies     = "/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies"
	pdbs                = "/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets"
	storageclasses      = "/apis/storage.k8s.io/v1/storageclasses"
	hpas                = "/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers"
	hpasV1              = "/apis/autoscaling/v1/namespaces/{ns}/horizontalpodautoscalers"
	vwebhooks           = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
	mwebhooks           = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
	csrs                = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
)

const stsBody = `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"s"},
 "spec":{"serviceName":"s","selector":{"matchLabels":{"app":"s"}},
  "template":{"metadata":{"labels":{"app":"s"}},"spec":{"containers":[{"name":"c","image":"nginx:1.27"}]}},
  "volumeClaimTemplates":[{"metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}]},
 "status":{"replicas":5}}`

const dsBody = `{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"d","labels":{"app":"d"}},
 "spec":{"selector":{"matchLabels":{"app":"d"}},
  "template":{"metadata":{"labels":{"app":"d"}},"spec":{"nodeSelector":{"disk":"ssd"},"containers":[{"name":"c","image":"nginx"}]}}}}`

var appsKindTranscripts = []transcript{
	{"statefulset-crud-status-scale", func(tr *T) {
		c := tr.Post(statefulsets, stsBody).Want(http.StatusCreated)
		tr.Get(statefulsets + "/s").Want(http.StatusOK)
		tr.Put(statefulsets+"/s", fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"s","resourceVersion":%q},
 "spec":{"replicas":2,"serviceName":"s","selector":{"matchLabels":{"app":"s"}},
  "template":{"metadata":{"labels":{"app":"s"}},"spec":{"containers":[{"name":"c","image":"nginx:1.28"}]}},
  "volumeClaimTemplates":[{"metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}]}}`, c.RV())).Want(http.StatusOK)
		// Status: the spec of a status write is ignored, labels are taken.
		tr.Patch(statefulsets+"/s/status", "merge", `{"metadata":{"labels":{"l":"1"}},"spec":{"replicas":9},"status":{"replicas":2,"readyReplicas":1,"availableReplicas":1,"observedGeneration":2}}`).Want(http.StatusOK)
		tr.Get(statefulsets + "/s/scale").Want(http.StatusOK)
		tr.Put(statefulsets+"/s/scale", `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"s"},"spec":{"replicas":4}}`).Want(http.StatusOK)
		tr.Patch(statefulsets+"/s/scale", "merge", `{"spec":{"replicas":3}}`).Want(http.StatusOK)
		tr.Watch(statefulsets+"?watch=1&resourceVersion="+c.RV(), Events(4)).Want(http.StatusOK)
		tr.Get(statefulsets).Want(http.StatusOK)
		tr.GetTable(statefulsets).Want(http.StatusOK)
		tr.GetTable(statefulsets + "?includeObject=None").Want(http.StatusOK)
		// serviceName is immutable; a name must be a DNS label; the
		// selector must match the template; status counts are bounded.
		tr.Patch(statefulsets+"/s", "merge", `{"spec":{"serviceName":"other"}}`).Want(http.StatusUnprocessableEntity)
		tr.Post(statefulsets, `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"a.b"},"spec":{"selector":{"matchLabels":{"app":"x"}},"template":{"metadata":{"labels":{"app":"x"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`).Want(http.StatusUnprocessableEntity)
		tr.Post(statefulsets, `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"bad"},"spec":{"selector":{"matchLabels":{"app":"x"}},"template":{"metadata":{"labels":{"app":"y"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`).Want(http.StatusUnprocessableEntity)
		tr.Patch(statefulsets+"/s/status", "merge", `{"status":{"readyReplicas":7}}`).Want(http.StatusUnprocessableEntity)
		tr.Put(statefulsets+"/s/scale", `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"s"},"spec":{"replicas":-1}}`).Want(http.StatusUnprocessableEntity)
		tr.Delete(statefulsets+"/s", "").Want(http.StatusOK)
		tr.Get(statefulsets + "/s").Want(http.StatusNotFound)
	}},
	{"statefulset-apply", func(tr *T) {
		tr.Patch(statefulsets+"/a?fieldManager=ctl", "apply", `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"a"},"spec":{"replicas":2,"selector":{"matchLabels":{"app":"a"}},"template":{"metadata":{"labels":{"app":"a"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}`).Want(http.StatusCreated)
		tr.Patch(statefulsets+"/a?fieldManager=other", "apply", `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"a"},"spec":{"replicas":3}}`).Want(http.StatusConflict)
		tr.Patch(statefulsets+"/a/scale?fieldManager=hpa", "merge", `{"spec":{"replicas":5}}`).Want(http.StatusOK)
		tr.Get(statefulsets + "/a").Want(http.StatusOK)
	}},
	{"kinds-server-side-apply", func(tr *T) {
		// Server-side apply creates and updates the table's kinds; the
		// field manager records what each manager owns.
		tr.Patch(jobs+"/a?fieldManager=ctl", "apply", `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"a"},"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}`).Want(http.StatusCreated)
		tr.Patch(jobs+"/a?fieldManager=ctl", "apply", `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"a","labels":{"team":"x"}},"spec":{"suspend":true,"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}`).Want(http.StatusOK)
		tr.Patch(jobs+"/a/status?fieldManager=job-controller", "apply", `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"a"},"status":{"active":1}}`).Want(http.StatusOK)
		tr.Patch(cronjobs+"/c?fieldManager=ctl", "apply", `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"c"},"spec":{"schedule":"@daily","jobTemplate":{"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}}}`).Want(http.StatusCreated)
		tr.Patch(cronjobs+"/c?fieldManager=other", "apply", `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"c"},"spec":{"schedule":"@hourly"}}`).Want(http.StatusConflict)
		tr.Patch(hpasV1+"/h?fieldManager=ctl", "apply", `{"apiVersion":"autoscaling/v1","kind":"HorizontalPodAutoscaler","metadata":{"name":"h"},"spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"d"},"maxReplicas":3,"targetCPUUtilizationPercentage":50}}`).Want(http.StatusCreated)
		tr.Patch(hpas+"/h?fieldManager=v2ctl", "apply", `{"apiVersion":"autoscaling/v2","kind":"HorizontalPodAutoscaler","metadata":{"name":"h"},"spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"d"},"maxReplicas":4}}`).Want(http.StatusConflict)
		tr.Patch(hpas+"/h?fieldManager=v2ctl&force=true", "apply", `{"apiVersion":"autoscaling/v2","kind":"HorizontalPodAutoscaler","metadata":{"name":"h"},"spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"d"},"maxReplicas":4}}`).Want(http.StatusOK)
		tr.Get(hpasV1 + "/h").Want(http.StatusOK)
		tr.Patch("/api/v1/namespaces/{ns}/persistentvolumeclaims/p?fieldManager=ctl", "apply", `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"p"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}`).Want(http.StatusCreated)
		tr.Patch(networkpolicies+"/n?fieldManager=ctl", "apply", `{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"name":"n"},"spec":{"podSelector":{},"ingress":[{"ports":[{"port":80}]}]}}`).Want(http.StatusCreated)
	}},
	{"daemonset-crud-status", func(tr *T) {
		c := tr.Post(daemonsets, dsBody).Want(http.StatusCreated)
		// A spec change outside the template: generation moves, the
		// template generation stays.
		tr.Patch(daemonsets+"/d", "merge", `{"spec":{"minReadySeconds":5}}`).Want(http.StatusOK)
		// A template change moves both; the annotation is the server's.
		tr.Patch(daemonsets+"/d", "strategic", `{"metadata":{"annotations":{"deprecated.daemonset.template.generation":"9"}},"spec":{"template":{"spec":{"containers":[{"name":"c","image":"nginx:1.28"}]}}}}`).Want(http.StatusOK)
		tr.Put(daemonsets+"/d", dsBody).Want(http.StatusOK)
		tr.Patch(daemonsets+"/d/status", "merge", `{"status":{"desiredNumberScheduled":2,"currentNumberScheduled":2,"numberReady":1,"numberMisscheduled":0,"observedGeneration":3}}`).Want(http.StatusOK)
		tr.Get(daemonsets + "/d").Want(http.StatusOK)
		tr.Watch(daemonsets+"?watch=1&resourceVersion="+c.RV(), Events(4)).Want(http.StatusOK)
		tr.Get(daemonsets + "?labelSelector=app%3Dd").Want(http.StatusOK)
		tr.GetTable(daemonsets).Want(http.StatusOK)
		tr.Get(daemonsets + "/d/scale").Want(http.StatusNotFound)
		tr.Patch(daemonsets+"/d", "merge", `{"spec":{"selector":{"matchLabels":{"app":"e"}},"template":{"metadata":{"labels":{"app":"e"}}}}}`).Want(http.StatusUnprocessableEntity)
		tr.Patch(daemonsets+"/d", "merge", `{"spec":{"template":{"spec":{"restartPolicy":"Never"}}}}`).Want(http.StatusUnprocessableEntity)
		tr.Patch(daemonsets+"/d", "merge", `{"spec":{"updateStrategy":{"rollingUpdate":{"maxUnavailable":0}}}}`).Want(http.StatusUnprocessableEntity)
		tr.Post(daemonsets, `{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"x","annotations":{"deprecated.daemonset.template.generation":"x"}},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`).Want(http.StatusBadRequest)
		tr.Delete(daemonsets+"/d", "").Want(http.StatusOK)
	}},
	{"workload-pod-template-errors", func(tr *T) {
		// The pod template errors a controller's manifests commonly have,
		// one per write, in the workloads of the table.
		tr.Post(statefulsets, `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"a"},"spec":{"selector":{"matchLabels":{"app":"a"}},"template":{"metadata":{"labels":{"app":"a"}},"spec":{"containers":[{"name":"Web_1","image":"nginx"}]}}}}`).Want(http.StatusUnprocessableEntity)
		tr.Post(statefulsets, `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"b"},"spec":{"selector":{"matchLabels":{"app":"b"}},"template":{"metadata":{"labels":{"app":"b"}},"spec":{"containers":[{"name":"c","image":"nginx","volumeMounts":[{"name":"data","mountPath":"/data"}]}]}},
 "volumeClaimTemplates":[{"metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"]}}]}}`).Want(http.StatusUnprocessableEntity)
		tr.Post(statefulsets, `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"c"},"spec":{"selector":{"matchLabels":{"app":"c"}},"template":{"metadata":{"labels":{"app":"c"}},"spec":{"containers":[{"name":"c","image":"nginx","volumeMounts":[{"name":"data","mountPath":"/data"}]}]}},
 "volumeClaimTemplates":[{"metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}]}}`).Want(http.StatusCreated)
		tr.Post(jobs, `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"p"},"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox","ports":[{"containerPort":70000}]}]}}}}`).Want(http.StatusUnprocessableEntity)
		tr.Post(daemonsets, `{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"m"},"spec":{"selector":{"matchLabels":{"app":"m"}},"template":{"metadata":{"labels":{"app":"m"}},"spec":{"containers":[{"name":"c","image":"nginx","volumeMounts":[{"name":"missing","mountPath":"/x"}]}]}}}}`).Want(http.StatusUnprocessableEntity)
		tr.Post(rcs, `{"apiVersion":"v1","kind":"ReplicationController","metadata":{"name":"e"},"spec":{"template":{"metadata":{"labels":{"app":"e"}},"spec":{"containers":[{"name":"c","image":"nginx","env":[{"name":"A=B","value":"1"}]}]}}}}`).Want(http.StatusUnprocessableEntity)
		tr.Post(rcs, `{"apiVersion":"v1","kind":"ReplicationController","metadata":{"name":"i"},"spec":{"template":{"metadata":{"labels":{"app":"i"}},"spec":{"containers":[{"name":"c"}]}}}}`).Want(http.StatusUnprocessableEntity)
		tr.Post(cronjobs, `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"d"},"spec":{"schedule":"@hourly","jobTemplate":{"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"},{"name":"c","image":"busybox"}]}}}}}}`).Want(http.StatusUnprocessableEntity)
		tr.Post(deploys, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"pn"},"spec":{"selector":{"matchLabels":{"app":"pn"}},"template":{"metadata":{"labels":{"app":"pn"}},"spec":{"containers":[{"name":"c","image":"nginx","ports":[{"name":"Http_Port","containerPort":80}]}]}}}}`).Want(http.StatusUnprocessableEntity)
		tr.Post(deploys, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"st"},"spec":{"strategy":{"rollingUpdate":{"maxUnavailable":0,"maxSurge":0}},"selector":{"matchLabels":{"app":"st"}},"template":{"metadata":{"labels":{"app":"st"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}`).Want(http.StatusUnprocessableEntity)
		tr.Post(deploys, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"rp"},"spec":{"selector":{"matchLabels":{"app":"rp"}},"template":{"metadata":{"labels":{"app":"rp"}},"spec":{"restartPolicy":"OnFailure","containers":[{"name":"c","image":"nginx"}]}}}}`).Want(http.StatusUnprocessableEntity)
		tr.Post("/apis/apps/v1/namespaces/{ns}/replicasets", `{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"nosel"},"spec":{"template":{"metadata":{"labels":{"app":"x"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}`).Want(http.StatusUnprocessableEntity)
		tr.Post(daemonsets, `{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"nosel"},"spec":{"template":{"metadata":{"labels":{"app":"x"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}`).Want(http.StatusUnprocessableEntity)
		tr.Post(statefulsets, `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"nosel"},"spec":{"template":{"metadata":{"labels":{"app":"x"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}`).Want(http.StatusUnprocessableEntity)
	}},
	{"controllerrevision-crud", func(tr *T) {
		// The revision's owner exists: one that did not would have the
		// garbage collector delete the revision, on each server at its own
		// pace.
		sts := tr.Post(statefulsets, stsBody).Want(http.StatusCreated)
		c := tr.Post(controllerrevisions, fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"ControllerRevision","metadata":{"name":"r","ownerReferences":[{"apiVersion":"apps/v1","kind":"StatefulSet","name":"s","uid":%q,"controller":true}]},"revision":1,"data":{"spec":{"x":1}}}`, sts.UID())).Want(http.StatusCreated)
		tr.Patch(controllerrevisions+"/r", "merge", `{"revision":2}`).Want(http.StatusOK)
		tr.Watch(controllerrevisions+"?watch=1&resourceVersion="+c.RV(), Events(1)).Want(http.StatusOK)
		tr.Get(controllerrevisions + "/r").Want(http.StatusOK)
		tr.Get(controllerrevisions).Want(http.StatusOK)
		tr.GetTable(controllerrevisions).Want(http.StatusOK)
		tr.Patch(controllerrevisions+"/r", "merge", `{"data":{"spec":{"x":2}}}`).Want(http.StatusUnprocessableEntity)
		tr.Post(controllerrevisions, `{"apiVersion":"apps/v1","kind":"ControllerRevision","metadata":{"name":"nodata"},"revision":1}`).Want(http.StatusUnprocessableEntity)
		tr.Post(controllerrevisions, `{"apiVersion":"apps/v1","kind":"ControllerRevision","metadata":{"name":"neg"},"revision":-1,"data":{}}`).Want(http.StatusUnprocessableEntity)
		tr.Delete(controllerrevisions+"/r", "").Want(http.StatusOK)
	}},
}

const jobBody = `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j"},
 "spec":{"template":{"metadata":{"labels":{"app":"j"}},"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox:1.36","command":["true"]}]}}},
 "status":{"succeeded":3}}`

const cronJobBody = `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"cj"},
 "spec":{"schedule":"*/5 * * * *","jobTemplate":{"spec":{"template":{"spec":{"restartPolicy":"OnFailure","containers":[{"name":"c","image":"busybox:1.36"}]}}}}}}`

var batchKindTranscripts = []transcript{
	{"job-crud-status", func(tr *T) {
		// The selector and the template's labels are generated; the
		// Job's labels are its template's.
		c := tr.Post(jobs, jobBody).Want(http.StatusCreated)
		tr.Get(jobs + "/j").Want(http.StatusOK)
		// Suspending is a spec change; the template is immutable.
		tr.Patch(jobs+"/j", "merge", `{"spec":{"suspend":true,"activeDeadlineSeconds":600}}`).Want(http.StatusOK)
		tr.Patch(jobs+"/j/status", "merge", `{"spec":{"parallelism":5},"status":{"active":1,"ready":1,"startTime":"2026-01-01T00:00:00Z"}}`).Want(http.StatusOK)
		tr.Patch(jobs+"/j/status", "merge", `{"status":{"active":0,"ready":0,"succeeded":1,"completionTime":"2026-01-01T00:01:00Z","conditions":[{"type":"SuccessCriteriaMet","status":"True","lastProbeTime":"2026-01-01T00:01:00Z","lastTransitionTime":"2026-01-01T00:01:00Z"},{"type":"Complete","status":"True","lastProbeTime":"2026-01-01T00:01:00Z","lastTransitionTime":"2026-01-01T00:01:00Z"}]}}`).Want(http.StatusOK)
		tr.Watch(jobs+"?watch=1&resourceVersion="+c.RV(), Events(3)).Want(http.StatusOK)
		tr.Get(jobs + "?fieldSelector=status.successful%3D1").Want(http.StatusOK)
		tr.Get(jobs + "?fieldSelector=status.successful%3D0").Want(http.StatusOK)
		tr.Get(jobs + "?labelSelector=batch.kubernetes.io%2Fjob-name%3Dj").Want(http.StatusOK)
		tr.GetTable(jobs).Want(http.StatusOK)
		tr.Get(jobs + "/j/scale").Want(http.StatusNotFound)
		// A controller's usual mistakes: a Job that restarts Always, a
		// manual selector that does not match, changing the selector.
		tr.Post(jobs, `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"always"},"spec":{"template":{"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`).Want(http.StatusUnprocessableEntity)
		tr.Post(jobs, `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"manual"},"spec":{"manualSelector":true,"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"c"}},"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}`).Want(http.StatusUnprocessableEntity)
		tr.Patch(jobs+"/j", "merge", `{"spec":{"selector":{"matchLabels":{"x":"y"}}}}`).Want(http.StatusUnprocessableEntity)
		tr.Patch(jobs+"/j", "merge", `{"spec":{"completions":4}}`).Want(http.StatusUnprocessableEntity)
		tr.Patch(jobs+"/j/status", "merge", `{"status":{"failed":-1}}`).Want(http.StatusUnprocessableEntity)
		tr.Delete(jobs+"/j", `{"propagationPolicy":"Background"}`).Want(http.StatusOK)
	}},
	{"job-manual-selector-and-put", func(tr *T) {
		tr.Post(jobs, `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"m","labels":{"team":"a"}},"spec":{"manualSelector":true,"parallelism":2,"selector":{"matchLabels":{"app":"m"}},"template":{"metadata":{"labels":{"app":"m"}},"spec":{"restartPolicy":"OnFailure","containers":[{"name":"c","image":"busybox"}]}}}}`).Want(http.StatusCreated)
		g := tr.Get(jobs + "/m").Want(http.StatusOK)
		tr.Put(jobs+"/m", fmt.Sprintf(`{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"m","resourceVersion":%q},"spec":{"manualSelector":true,"parallelism":3,"selector":{"matchLabels":{"app":"m"}},"template":{"metadata":{"labels":{"app":"m"}},"spec":{"restartPolicy":"OnFailure","containers":[{"name":"c","image":"busybox"}]}}}}`, g.RV())).Want(http.StatusOK)
		tr.Post(jobs, `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"Bad.Name"},"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}`).Want(http.StatusUnprocessableEntity)
		tr.Post(jobs, `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"dotted.name"},"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}`).Want(http.StatusCreated)
		tr.GetTable(jobs).Want(http.StatusOK)
	}},
	{"cronjob-crud-status", func(tr *T) {
		c := tr.Post(cronjobs, cronJobBody).Want(http.StatusCreated)
		tr.Get(cronjobs + "/cj").Want(http.StatusOK)
		tr.Patch(cronjobs+"/cj", "merge", `{"spec":{"schedule":"0 * * * *","suspend":true,"timeZone":"Europe/Paris"}}`).Want(http.StatusOK)
		tr.Patch(cronjobs+"/cj/status", "merge", `{"status":{"lastScheduleTime":"2026-01-01T00:00:00Z","active":[{"apiVersion":"batch/v1","kind":"Job","name":"cj-1","namespace":"{ns}"}]}}`).Want(http.StatusOK)
		tr.Watch(cronjobs+"?watch=1&resourceVersion="+c.RV(), Events(2)).Want(http.StatusOK)
		tr.Get(cronjobs).Want(http.StatusOK)
		tr.GetTable(cronjobs).Want(http.StatusOK)
		tr.Patch(cronjobs+"/cj", "merge", `{"spec":{"schedule":"every minute"}}`).Want(http.StatusUnprocessableEntity)
		tr.Patch(cronjobs+"/cj", "merge", `{"spec":{"schedule":"61 * * * *"}}`).Want(http.StatusUnprocessableEntity)
		tr.Patch(cronjobs+"/cj", "merge", `{"spec":{"concurrencyPolicy":"Sometimes"}}`).Want(http.StatusUnprocessableEntity)
		tr.Patch(cronjobs+"/cj", "merge", `{"spec":{"timeZone":"Mars/Olympus"}}`).Want(http.StatusUnprocessableEntity)
		tr.Patch(cronjobs+"/cj", "merge", `{"spec":{"jobTemplate":{"spec":{"selector":{"matchLabels":{"a":"b"}}}}}}`).Want(http.StatusUnprocessableEntity)
		tr.Post(cronjobs, `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"a-very-long-cronjob-name-that-is-longer-than-fifty-two-chars"},"spec":{"schedule":"@hourly","jobTemplate":{"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}}}`).Want(http.StatusUnprocessableEntity)
		tr.Delete(cronjobs+"/cj", "").Want(http.StatusOK)
	}},
}

// coreKindTranscripts: cluster-scoped objects (Nodes, PersistentVolumes)
// are named after the transcript's namespace and listed by name: the real
// server is shared.
var coreKindTranscripts = []transcript{
	{"node-crud-status", func(tr *T) {
		c := tr.Post(nodes, `{"apiVersion":"v1","kind":"Node","metadata":{"name":"{ns}-n","labels":{"node-role.kubernetes.io/worker":""}},"spec":{"podCIDR":"10.244.1.0/24","podCIDRs":["10.244.1.0/24"]},
 "status":{"capacity":{"cpu":"2","memory":"4Gi","pods":"110"},"nodeInfo":{"kubeletVersion":"v1.37.2","osImage":"Debian","architecture":"amd64"},"addresses":[{"type":"InternalIP","address":"192.168.0.10"}]}}`).Want(http.StatusCreated)
		tr.Get(nodes + "/{ns}-n").Want(http.StatusOK)
		tr.Patch(nodes+"/{ns}-n", "strategic", `{"spec":{"unschedulable":true},"status":{"capacity":{"cpu":"9"}}}`).Want(http.StatusOK)
		tr.Patch(nodes+"/{ns}-n/status", "strategic", `{"spec":{"unschedulable":false},"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","lastHeartbeatTime":"2026-01-01T00:00:00Z","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`).Want(http.StatusOK)
		tr.Watch(nodes+"?watch=1&fieldSelector=metadata.name%3D{ns}-n&resourceVersion="+c.RV(), Events(2)).Want(http.StatusOK)
		tr.Get(nodes + "?fieldSelector=metadata.name%3D{ns}-n,spec.unschedulable%3Dtrue").Want(http.StatusOK)
		tr.GetTable(nodes + "/{ns}-n").Want(http.StatusOK)
		tr.Patch(nodes+"/{ns}-n", "merge", `{"spec":{"taints":[{"key":"a","effect":"Sometimes"}]}}`).Want(http.StatusUnprocessableEntity)
		tr.Delete(nodes+"/{ns}-n", "").Want(http.StatusOK)
	}},
	{"persistentvolume-crud-status", func(tr *T) {
		c := tr.Post(pvs, `{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"{ns}-pv"},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"hostPath":{"path":"/tmp/pv"}},"status":{"phase":"Bound"}}`).Want(http.StatusCreated)
		tr.Get(pvs + "/{ns}-pv").Want(http.StatusOK)
		tr.Patch(pvs+"/{ns}-pv", "merge", `{"spec":{"persistentVolumeReclaimPolicy":"Delete","storageClassName":"fast"}}`).Want(http.StatusOK)
		tr.Patch(pvs+"/{ns}-pv/status", "merge", `{"status":{"phase":"Available"}}`).Want(http.StatusOK)
		tr.Watch(pvs+"?watch=1&fieldSelector=metadata.name%3D{ns}-pv&resourceVersion="+c.RV(), Events(2)).Want(http.StatusOK)
		tr.Get(pvs + "?fieldSelector=name%3D{ns}-pv").Want(http.StatusBadRequest)
		tr.GetTable(pvs + "/{ns}-pv").Want(http.StatusOK)
		tr.Post(pvs, `{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"{ns}-bad"},"spec":{"capacity":{"storage":"1Gi"},"hostPath":{"path":"/tmp/pv"}}}`).Want(http.StatusUnprocessableEntity)
		// The volume's protection finalizer holds it.
		tr.Delete(pvs+"/{ns}-pv", "").Want(http.StatusOK)
		tr.Patch(pvs+"/{ns}-pv", "merge", `{"metadata":{"finalizers":null}}`).Want(http.StatusOK)
		tr.Get(pvs + "/{ns}-pv").Want(http.StatusNotFound)
	}},
	{"persistentvolumeclaim-crud-status", func(tr *T) {
		c := tr.Post(pvcs, `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"c"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}`).Want(http.StatusCreated)
		tr.Get(pvcs + "/c").Want(http.StatusOK)
		tr.Patch(pvcs+"/c", "merge", `{"metadata":{"labels":{"a":"b"}},"spec":{"volumeName":"vol-1"}}`).Want(http.StatusOK)
		tr.Patch(pvcs+"/c/status", "merge", `{"status":{"phase":"Bound","accessModes":["ReadWriteOnce"],"capacity":{"storage":"1Gi"}}}`).Want(http.StatusOK)
		// Growing a claim needs a StorageClass that allows it.
		tr.Patch(pvcs+"/c", "merge", `{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}`).Want(http.StatusForbidden)
		// A claim without a class may get one, once.
		tr.Patch(pvcs+"/c", "merge", `{"spec":{"storageClassName":"fast"}}`).Want(http.StatusOK)
		tr.Watch(pvcs+"?watch=1&resourceVersion="+c.RV(), Events(3)).Want(http.StatusOK)
		tr.Get(pvcs + "?fieldSelector=metadata.name%3Dc").Want(http.StatusOK)
		tr.GetTable(pvcs).Want(http.StatusOK)
		tr.Post(pvcs, `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"nostorage"},"spec":{"accessModes":["ReadWriteOnce"]}}`).Want(http.StatusUnprocessableEntity)
		tr.Post(pvcs, `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"nomodes"},"spec":{"resources":{"requests":{"storage":"1Gi"}}}}`).Want(http.StatusUnprocessableEntity)
		tr.Delete(pvcs+"/c", "").Want(http.StatusOK)
		tr.Get(pvcs + "/c").Want(http.StatusOK)
	}},
	{"endpoints-crud", func(tr *T) {
		c := tr.Post(endpoints, `{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"e"},"subsets":[{"addresses":[{"ip":"10.0.0.1"},{"ip":"10.0.0.2"}],"ports":[{"name":"http","port":80},{"name":"https","port":443}]}]}`).Want(http.StatusCreated)
		tr.Get(endpoints + "/e").Want(http.StatusOK)
		tr.Put(endpoints+"/e", `{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"e"},"subsets":[{"addresses":[{"ip":"10.0.0.3"}],"ports":[{"port":8080}]}]}`).Want(http.StatusOK)
		tr.Watch(endpoints+"?watch=1&resourceVersion="+c.RV(), Events(1)).Want(http.StatusOK)
		tr.Get(endpoints).Want(http.StatusOK)
		tr.GetTable(endpoints).Want(http.StatusOK)
		tr.Post(endpoints, `{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"bad"},"subsets":[{"addresses":[{"ip":"10.0.0.1"}],"ports":[{"port":0}]}]}`).Want(http.StatusUnprocessableEntity)
		tr.Delete(endpoints+"/e", "").Want(http.StatusOK)
	}},
	{"resourcequota-limitrange-crud", func(tr *T) {
		c := tr.Post(quotas, `{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"q"},"spec":{"hard":{"count/widgets.example.com":"5","requests.cpu":"1500m"}},"status":{"used":{"pods":"1"}}}`).Want(http.StatusCreated)
		tr.Patch(quotas+"/q/status", "merge", `{"spec":{"hard":{"x":"1"}},"status":{"hard":{"count/widgets.example.com":"5","requests.cpu":"1500m"},"used":{"count/widgets.example.com":"1","requests.cpu":"500m"}}}`).Want(http.StatusOK)
		tr.Watch(quotas+"?watch=1&resourceVersion="+c.RV(), Events(1)).Want(http.StatusOK)
		tr.GetTable(quotas).Want(http.StatusOK)
		tr.Patch(quotas+"/q", "merge", `{"spec":{"hard":{"pods":"-1"}}}`).Want(http.StatusUnprocessableEntity)
		tr.Patch(quotas+"/q", "merge", `{"spec":{"hard":{"pods":"1500m"}}}`).Want(http.StatusUnprocessableEntity)
		tr.Delete(quotas+"/q", "").Want(http.StatusOK)
		l := tr.Post(limitranges, `{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"l"},"spec":{"limits":[{"type":"Container","max":{"cpu":"2"},"min":{"memory":"64Mi"}}]}}`).Want(http.StatusCreated)
		tr.Patch(limitranges+"/l", "merge", `{"spec":{"limits":[{"type":"Container","max":{"cpu":"1"}},{"type":"Pod","max":{"memory":"1Gi"}}]}}`).Want(http.StatusOK)
		tr.Watch(limitranges+"?watch=1&resourceVersion="+l.RV(), Events(1)).Want(http.StatusOK)
		tr.GetTable(limitranges).Want(http.StatusOK)
		tr.Patch(limitranges+"/l", "merge", `{"spec":{"limits":[{"type":"Pod","default":{"cpu":"1"}}]}}`).Want(http.StatusUnprocessableEntity)
		tr.Delete(limitranges+"/l", "").Want(http.StatusOK)
	}},
	{"replicationcontroller-crud-status-scale", func(tr *T) {
		c := tr.Post(rcs, `{"apiVersion":"v1","kind":"ReplicationController","metadata":{"name":"rc"},"spec":{"template":{"metadata":{"labels":{"app":"rc"}},"spec":{"containers":[{"name":"c","image":"nginx:1"}]}}}}`).Want(http.StatusCreated)
		tr.Get(rcs + "/rc").Want(http.StatusOK)
		tr.Patch(rcs+"/rc", "merge", `{"spec":{"minReadySeconds":3}}`).Want(http.StatusOK)
		tr.Patch(rcs+"/rc/status", "merge", `{"status":{"replicas":1,"readyReplicas":1,"availableReplicas":1,"observedGeneration":2}}`).Want(http.StatusOK)
		tr.Get(rcs + "/rc/scale").Want(http.StatusOK)
		tr.Put(rcs+"/rc/scale", `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"rc"},"spec":{"replicas":3}}`).Want(http.StatusOK)
		tr.Watch(rcs+"?watch=1&resourceVersion="+c.RV(), Events(3)).Want(http.StatusOK)
		tr.Get(rcs + "?fieldSelector=status.replicas%3D1").Want(http.StatusOK)
		tr.GetTable(rcs).Want(http.StatusOK)
		tr.Patch(rcs+"/rc", "merge", `{"spec":{"selector":{"app":"other"}}}`).Want(http.StatusUnprocessableEntity)
		tr.Patch(rcs+"/rc/status", "merge", `{"status":{"readyReplicas":4}}`).Want(http.StatusUnprocessableEntity)
		tr.Delete(rcs+"/rc", `{"propagationPolicy":"Background"}`).Want(http.StatusOK)
	}},
}

// csrRequest and csrCertificate are a PEM certificate request and a
// certificate (base64, as JSON carries bytes), made once per run: both
// targets see the same bytes.
var csrRequest, csrCertificate = func() (string, string) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	subject := pkix.Name{CommonName: "alice", Organization: []string{"dev"}}
	req, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject}, key)
	if err != nil {
		panic(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: subject, NotBefore: time.Unix(0, 0), NotAfter: time.Unix(1<<32, 0)}
	cert, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	enc := func(typ string, b []byte) string {
		return base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}))
	}
	return enc("CERTIFICATE REQUEST", req), enc("CERTIFICATE", cert)
}()

// otherKindTranscripts: discovery.k8s.io, networking.k8s.io, policy,
// storage.k8s.io, autoscaling, admissionregistration.k8s.io and
// certificates.k8s.io. Cluster-scoped objects are named after the
// transcript's namespace.
var otherKindTranscripts = []transcript{
	{"endpointslice-crud", func(tr *T) {
		c := tr.Post(endpointslices, `{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"es","labels":{"kubernetes.io/service-name":"web"}},"addressType":"IPv4",
 "endpoints":[{"addresses":["10.0.0.1"],"conditions":{"ready":true},"nodeName":"n1"},{"addresses":["10.0.0.2"]}],"ports":[{"name":"http","port":80},{"port":443,"protocol":"TCP","appProtocol":"https"}]}`).Want(http.StatusCreated)
		// Labels move the generation of an EndpointSlice.
		tr.Patch(endpointslices+"/es", "merge", `{"metadata":{"labels":{"x":"1"}}}`).Want(http.StatusOK)
		tr.Patch(endpointslices+"/es", "merge", `{"metadata":{"annotations":{"a":"b"}}}`).Want(http.StatusOK)
		tr.Patch(endpointslices+"/es", "merge", `{"endpoints":[{"addresses":["10.0.0.3"]}]}`).Want(http.StatusOK)
		tr.Watch(endpointslices+"?watch=1&resourceVersion="+c.RV(), Events(3)).Want(http.StatusOK)
		tr.Get(endpointslices + "?labelSelector=kubernetes.io%2Fservice-name%3Dweb").Want(http.StatusOK)
		tr.GetTable(endpointslices).Want(http.StatusOK)
		tr.Patch(endpointslices+"/es", "merge", `{"addressType":"IPv6"}`).Want(http.StatusUnprocessableEntity)
		tr.Post(endpointslices, `{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"bad"},"addressType":"IPv4","endpoints":[{"addresses":[]}]}`).Want(http.StatusUnprocessableEntity)
		tr.Post(endpointslices, `{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"none"},"endpoints":[]}`).Want(http.StatusUnprocessableEntity)
		tr.Delete(endpointslices+"/es", "").Want(http.StatusOK)
	}},
	{"ingress-ingressclass-crud-status", func(tr *T) {
		ic := tr.Post(ingressclasses, `{"apiVersion":"networking.k8s.io/v1","kind":"IngressClass","metadata":{"name":"{ns}-ic"},"spec":{"controller":"example.com/ingress","parameters":{"kind":"Params","name":"p","apiGroup":"example.com"}}}`).Want(http.StatusCreated)
		tr.Patch(ingressclasses+"/{ns}-ic", "merge", `{"metadata":{"labels":{"a":"b"}}}`).Want(http.StatusOK)
		tr.Patch(ingressclasses+"/{ns}-ic", "merge", `{"spec":{"parameters":{"name":"q"}}}`).Want(http.StatusOK)
		tr.Watch(ingressclasses+"?watch=1&fieldSelector=metadata.name%3D{ns}-ic&resourceVersion="+ic.RV(), Events(2)).Want(http.StatusOK)
		tr.GetTable(ingressclasses + "/{ns}-ic").Want(http.StatusOK)
		tr.Patch(ingressclasses+"/{ns}-ic", "merge", `{"spec":{"controller":"example.com/other"}}`).Want(http.StatusUnprocessableEntity)
		tr.Post(ingressclasses, `{"apiVersion":"networking.k8s.io/v1","kind":"IngressClass","metadata":{"name":"{ns}-bad"},"spec":{"controller":"nopath"}}`).Want(http.StatusUnprocessableEntity)
		c := tr.Post(ingresses, `{"apiVersion":"networking.k8s.io/v1","kind":"Ingress","metadata":{"name":"i"},"spec":{"ingressClassName":"{ns}-ic",
 "tls":[{"hosts":["a.example.com"],"secretName":"tls"}],
 "rules":[{"host":"a.example.com","http":{"paths":[{"path":"/","pathType":"Prefix","backend":{"service":{"name":"web","port":{"number":80}}}}]}},{"host":"b.example.com","http":{"paths":[{"path":"/api","pathType":"Exact","backend":{"service":{"name":"api","port":{"name":"http"}}}}]}}]},
 "status":{"loadBalancer":{"ingress":[{"ip":"1.2.3.4"}]}}}`).Want(http.StatusCreated)
		tr.Patch(ingresses+"/i", "merge", `{"spec":{"defaultBackend":{"service":{"name":"web","port":{"number":8080}}}}}`).Want(http.StatusOK)
		tr.Patch(ingresses+"/i/status", "merge", `{"spec":{"rules":[]},"status":{"loadBalancer":{"ingress":[{"ip":"1.2.3.4"},{"hostname":"lb.example.com"}]}}}`).Want(http.StatusOK)
		tr.Watch(ingresses+"?watch=1&resourceVersion="+c.RV(), Events(2)).Want(http.StatusOK)
		tr.Get(ingresses).Want(http.StatusOK)
		tr.GetTable(ingresses).Want(http.StatusOK)
		tr.Post(ingresses, `{"apiVersion":"networking.k8s.io/v1","kind":"Ingress","metadata":{"name":"nopathtype"},"spec":{"rules":[{"http":{"paths":[{"path":"/","backend":{"service":{"name":"web","port":{"number":80}}}}]}}]}}`).Want(http.StatusUnprocessableEntity)
		tr.Post(ingresses, `{"apiVersion":"networking.k8s.io/v1","kind":"Ingress","metadata":{"name":"empty"},"spec":{}}`).Want(http.StatusUnprocessableEntity)
		tr.Delete(ingresses+"/i", "").Want(http.StatusOK)
		tr.Delete(ingressclasses+"/{ns}-ic", "").Want(http.StatusOK)
	}},
	{"service-field-selectors", func(tr *T) {
		tr.Post(services, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"headless"},"spec":{"clusterIP":"None","selector":{"app":"web"},"ports":[{"port":80}]}}`).Want(http.StatusCreated)
		tr.Post(services, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"ext"},"spec":{"type":"ExternalName","externalName":"example.com"}}`).Want(http.StatusCreated)
		tr.Get(services + "?fieldSelector=spec.clusterIP%3DNone").Want(http.StatusOK)
		tr.Get(services + "?fieldSelector=spec.type%3DExternalName").Want(http.StatusOK)
		tr.Get(services + "?fieldSelector=spec.ports%3D80").Want(http.StatusBadRequest)
	}},
	{"networkpolicy-crud", func(tr *T) {
		c := tr.Post(networkpolicies, `{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"name":"np"},"spec":{"podSelector":{"matchLabels":{"app":"web"}},
 "ingress":[{"from":[{"podSelector":{}}],"ports":[{"port":80},{"port":"http","protocol":"UDP"}]}],"egress":[{"ports":[{"port":53,"endPort":60}]}]}}`).Want(http.StatusCreated)
		tr.Patch(networkpolicies+"/np", "merge", `{"metadata":{"labels":{"a":"b"}}}`).Want(http.StatusOK)
		tr.Patch(networkpolicies+"/np", "merge", `{"spec":{"egress":null}}`).Want(http.StatusOK)
		tr.Watch(networkpolicies+"?watch=1&resourceVersion="+c.RV(), Events(2)).Want(http.StatusOK)
		tr.GetTable(networkpolicies).Want(http.StatusOK)
		tr.Patch(networkpolicies+"/np", "merge", `{"spec":{"ingress":[{"ports":[{"port":70000}]}]}}`).Want(http.StatusUnprocessableEntity)
		tr.Patch(networkpolicies+"/np", "merge", `{"spec":{"policyTypes":["Sideways"]}}`).Want(http.StatusUnprocessableEntity)
		tr.Delete(networkpolicies+"/np", "").Want(http.StatusOK)
	}},
	{"poddisruptionbudget-crud-status", func(tr *T) {
		c := tr.Post(pdbs, `{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"pdb"},"spec":{"minAvailable":"50%","selector":{"matchLabels":{"app":"web"}}},"status":{"disruptionsAllowed":3}}`).Want(http.StatusCreated)
		tr.Patch(pdbs+"/pdb", "merge", `{"spec":{"minAvailable":2,"unhealthyPodEvictionPolicy":"AlwaysAllow"}}`).Want(http.StatusOK)
		tr.Patch(pdbs+"/pdb/status", "merge", `{"status":{"observedGeneration":2,"disruptionsAllowed":1,"currentHealthy":3,"desiredHealthy":2,"expectedPods":3,
 "conditions":[{"type":"DisruptionAllowed","status":"True","reason":"SufficientPods","message":"","lastTransitionTime":"2026-01-01T00:00:00Z","observedGeneration":2}]}}`).Want(http.StatusOK)
		tr.Watch(pdbs+"?watch=1&resourceVersion="+c.RV(), Events(2)).Want(http.StatusOK)
		tr.GetTable(pdbs).Want(http.StatusOK)
		tr.Patch(pdbs+"/pdb", "merge", `{"spec":{"minAvailable":"150%"}}`).Want(http.StatusUnprocessableEntity)
		tr.Patch(pdbs+"/pdb/status", "merge", `{"status":{"disruptionsAllowed":-1}}`).Want(http.StatusUnprocessableEntity)
		tr.Delete(pdbs+"/pdb", "").Want(http.StatusOK)
	}},
	{"storageclass-crud-and-claim-resize", func(tr *T) {
		c := tr.Post(storageclasses, `{"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"{ns}-sc"},"provisioner":"example.com/csi","parameters":{"type":"ssd"},"allowVolumeExpansion":true}`).Want(http.StatusCreated)
		tr.Patch(storageclasses+"/{ns}-sc", "merge", `{"metadata":{"labels":{"a":"b"}},"mountOptions":["ro"]}`).Want(http.StatusOK)
		tr.Watch(storageclasses+"?watch=1&fieldSelector=metadata.name%3D{ns}-sc&resourceVersion="+c.RV(), Events(1)).Want(http.StatusOK)
		tr.GetTable(storageclasses + "/{ns}-sc").Want(http.StatusOK)
		tr.Patch(storageclasses+"/{ns}-sc", "merge", `{"parameters":{"type":"hdd"}}`).Want(http.StatusUnprocessableEntity)
		tr.Patch(storageclasses+"/{ns}-sc", "merge", `{"reclaimPolicy":"Retain"}`).Want(http.StatusUnprocessableEntity)
		tr.Post(storageclasses, `{"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"{ns}-bad"},"provisioner":"","volumeBindingMode":"Later"}`).Want(http.StatusUnprocessableEntity)
		// A bound claim of a class that allows expansion grows.
		tr.Post(pvcs, `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"c"},"spec":{"storageClassName":"{ns}-sc","accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}},"volumeName":"v"}}`).Want(http.StatusCreated)
		tr.Patch(pvcs+"/c/status", "merge", `{"status":{"phase":"Bound","capacity":{"storage":"1Gi"}}}`).Want(http.StatusOK)
		tr.Patch(pvcs+"/c", "merge", `{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}`).Want(http.StatusOK)
		tr.Patch(pvcs+"/c", "merge", `{"spec":{"resources":{"requests":{"storage":"512Mi"}}}}`).Want(http.StatusUnprocessableEntity)
		tr.Delete(storageclasses+"/{ns}-sc", "").Want(http.StatusOK)
	}},
	{"horizontalpodautoscaler-crud-status", func(tr *T) {
		c := tr.Post(hpas, `{"apiVersion":"autoscaling/v2","kind":"HorizontalPodAutoscaler","metadata":{"name":"h"},"spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"web"},"maxReplicas":5,
 "behavior":{"scaleDown":{"stabilizationWindowSeconds":60}}},"status":{"currentReplicas":3}}`).Want(http.StatusCreated)
		tr.Patch(hpas+"/h", "merge", `{"spec":{"minReplicas":2,"metrics":[{"type":"Resource","resource":{"name":"memory","target":{"type":"AverageValue","averageValue":"500Mi"}}},{"type":"Pods","pods":{"metric":{"name":"qps"},"target":{"type":"AverageValue","averageValue":"10"}}}]}}`).Want(http.StatusOK)
		tr.Patch(hpas+"/h/status", "merge", `{"status":{"observedGeneration":2,"currentReplicas":2,"desiredReplicas":3,"currentMetrics":[{"type":"Resource","resource":{"name":"memory","current":{"averageValue":"200Mi"}}}]}}`).Want(http.StatusOK)
		tr.Watch(hpas+"?watch=1&resourceVersion="+c.RV(), Events(2)).Want(http.StatusOK)
		tr.Get(hpas + "/h").Want(http.StatusOK)
		tr.GetTable(hpas).Want(http.StatusOK)
		tr.Patch(hpas+"/h", "merge", `{"spec":{"minReplicas":9}}`).Want(http.StatusUnprocessableEntity)
		tr.Patch(hpas+"/h", "merge", `{"spec":{"scaleTargetRef":{"name":""}}}`).Want(http.StatusUnprocessableEntity)
		tr.Delete(hpas+"/h", "").Want(http.StatusOK)
	}},
	{"horizontalpodautoscaler-v1-v2", func(tr *T) {
		// autoscaling/v1 and v2 are two forms of the same objects.
		c := tr.Post(hpasV1, `{"apiVersion":"autoscaling/v1","kind":"HorizontalPodAutoscaler","metadata":{"name":"one"},"spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"web"},"maxReplicas":4,"targetCPUUtilizationPercentage":60}}`).Want(http.StatusCreated)
		tr.Get(hpas + "/one").Want(http.StatusOK)
		tr.Post(hpas, `{"apiVersion":"autoscaling/v2","kind":"HorizontalPodAutoscaler","metadata":{"name":"two","annotations":{"keep":"me"}},"spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"StatefulSet","name":"db"},"minReplicas":2,"maxReplicas":6,
 "metrics":[{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":70}}},{"type":"Pods","pods":{"metric":{"name":"qps"},"target":{"type":"AverageValue","averageValue":"100"}}},{"type":"External","external":{"metric":{"name":"queue"},"target":{"type":"Value","value":"30"}}}],
 "behavior":{"scaleUp":{"stabilizationWindowSeconds":30}}}}`).Want(http.StatusCreated)
		tr.Patch(hpas+"/two/status", "merge", `{"status":{"currentReplicas":2,"desiredReplicas":3,"lastScaleTime":"2026-01-01T00:00:00Z",
 "currentMetrics":[{"type":"Resource","resource":{"name":"cpu","current":{"averageUtilization":85,"averageValue":"850m"}}},{"type":"Pods","pods":{"metric":{"name":"qps"},"current":{"averageValue":"120"}}}],
 "conditions":[{"type":"AbleToScale","status":"True","reason":"ReadyForNewScale","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`).Want(http.StatusOK)
		two := tr.Get(hpasV1 + "/two").Want(http.StatusOK)
		// A v1 client writes back what it read: nothing of v2 is lost.
		tr.Put(hpasV1+"/two", fmt.Sprintf(`{"apiVersion":"autoscaling/v1","kind":"HorizontalPodAutoscaler","metadata":{"name":"two","resourceVersion":%q,"annotations":{"keep":"me"}},"spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"StatefulSet","name":"db"},"minReplicas":2,"maxReplicas":8,"targetCPUUtilizationPercentage":75}}`, two.RV())).Want(http.StatusOK)
		tr.Get(hpas + "/two").Want(http.StatusOK)
		tr.Patch(hpasV1+"/one/status", "merge", `{"status":{"currentReplicas":1,"desiredReplicas":2,"currentCPUUtilizationPercentage":90}}`).Want(http.StatusOK)
		tr.Get(hpas + "/one").Want(http.StatusOK)
		tr.Watch(hpasV1+"?watch=1&resourceVersion="+c.RV(), Events(4)).Want(http.StatusOK)
		tr.Get(hpasV1).Want(http.StatusOK)
		tr.GetTable(hpasV1).Want(http.StatusOK)
		tr.Patch(hpasV1+"/one", "merge", `{"spec":{"maxReplicas":0}}`).Want(http.StatusUnprocessableEntity)
		tr.Delete(hpasV1+"/one", "").Want(http.StatusOK)
	}},
	{"webhookconfigurations-crud", func(tr *T) {
		v := tr.Post(vwebhooks, `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration","metadata":{"name":"{ns}-v"},"webhooks":[{"name":"v.example.com","clientConfig":{"url":"https://example.com/validate"},
 "sideEffects":"None","admissionReviewVersions":["v1"],"rules":[{"operations":["CREATE","UPDATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["pods"]}]}]}`).Want(http.StatusCreated)
		tr.Patch(vwebhooks+"/{ns}-v", "merge", `{"metadata":{"labels":{"a":"b"}}}`).Want(http.StatusOK)
		tr.Patch(vwebhooks+"/{ns}-v", "json", `[{"op":"replace","path":"/webhooks/0/failurePolicy","value":"Ignore"}]`).Want(http.StatusOK)
		tr.Watch(vwebhooks+"?watch=1&fieldSelector=metadata.name%3D{ns}-v&resourceVersion="+v.RV(), Events(2)).Want(http.StatusOK)
		tr.GetTable(vwebhooks + "/{ns}-v").Want(http.StatusOK)
		tr.Post(vwebhooks, `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration","metadata":{"name":"{ns}-bad"},"webhooks":[{"name":"v.example.com","clientConfig":{"url":"http://example.com/validate"},"admissionReviewVersions":["v1"]}]}`).Want(http.StatusUnprocessableEntity)
		tr.Delete(vwebhooks+"/{ns}-v", "").Want(http.StatusOK)
		m := tr.Post(mwebhooks, `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"MutatingWebhookConfiguration","metadata":{"name":"{ns}-m"},"webhooks":[{"name":"m.example.com","clientConfig":{"service":{"namespace":"{ns}","name":"hook","path":"/mutate"}},
 "sideEffects":"NoneOnDryRun","admissionReviewVersions":["v1","v1beta1"],"timeoutSeconds":5}]}`).Want(http.StatusCreated)
		tr.Patch(mwebhooks+"/{ns}-m", "json", `[{"op":"replace","path":"/webhooks/0/reinvocationPolicy","value":"IfNeeded"}]`).Want(http.StatusOK)
		tr.Watch(mwebhooks+"?watch=1&fieldSelector=metadata.name%3D{ns}-m&resourceVersion="+m.RV(), Events(1)).Want(http.StatusOK)
		tr.GetTable(mwebhooks + "/{ns}-m").Want(http.StatusOK)
		tr.Patch(mwebhooks+"/{ns}-m", "json", `[{"op":"replace","path":"/webhooks/0/timeoutSeconds","value":60}]`).Want(http.StatusUnprocessableEntity)
		tr.Delete(mwebhooks+"/{ns}-m", "").Want(http.StatusOK)
	}},
	{"certificatesigningrequest-approval-status", func(tr *T) {
		c := tr.Post(csrs, `{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{"name":"{ns}-csr"},"spec":{"request":"`+csrRequest+`","signerName":"example.com/signer","usages":["client auth","digital signature"],"expirationSeconds":3600,"username":"mallory"},"status":{"certificate":"`+csrCertificate+`"}}`).Want(http.StatusCreated)
		tr.Get(csrs + "/{ns}-csr").Want(http.StatusOK)
		// The spec never changes; metadata does.
		tr.Patch(csrs+"/{ns}-csr", "merge", `{"metadata":{"labels":{"a":"b"}},"spec":{"usages":["server auth"]}}`).Want(http.StatusOK)
		// Approval through /approval only.
		tr.Patch(csrs+"/{ns}-csr/status", "merge", `{"status":{"conditions":[{"type":"Approved","status":"True","reason":"Sneaky"}]}}`).Want(http.StatusUnprocessableEntity)
		tr.Patch(csrs+"/{ns}-csr/approval", "merge", `{"status":{"certificate":"`+csrCertificate+`","conditions":[{"type":"Approved","status":"True","reason":"AutoApproved","message":"ok"}]}}`).Want(http.StatusOK)
		tr.Patch(csrs+"/{ns}-csr/status", "merge", `{"status":{"certificate":"`+csrCertificate+`"}}`).Want(http.StatusOK)
		tr.Get(csrs + "/{ns}-csr/approval").Want(http.StatusOK)
		tr.Watch(csrs+"?watch=1&fieldSelector=metadata.name%3D{ns}-csr&resourceVersion="+c.RV(), Events(3)).Want(http.StatusOK)
		tr.GetTable(csrs + "/{ns}-csr").Want(http.StatusOK)
		tr.Get(csrs + "?fieldSelector=metadata.name%3D{ns}-csr,spec.signerName%3Dexample.com%2Fsigner").Want(http.StatusOK)
		tr.Get(csrs + "?fieldSelector=spec.username%3Dx").Want(http.StatusBadRequest)
		tr.Patch(csrs+"/{ns}-csr/approval", "json", `[{"op":"replace","path":"/status/conditions","value":[]}]`).Want(http.StatusUnprocessableEntity)
		tr.Patch(csrs+"/{ns}-csr/status", "merge", `{"status":{"certificate":"bm90IGEgY2VydA=="}}`).Want(http.StatusUnprocessableEntity)
		tr.Post(csrs, `{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{"name":"{ns}-bad"},"spec":{"request":"bm90IGEgcmVxdWVzdA==","signerName":"example.com/signer","usages":["client auth"]}}`).Want(http.StatusUnprocessableEntity)
		tr.Post(csrs, `{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{"name":"{ns}-bad2"},"spec":{"request":"`+csrRequest+`","signerName":"signer","usages":["flying"]}}`).Want(http.StatusUnprocessableEntity)
		tr.Delete(csrs+"/{ns}-csr", "").Want(http.StatusOK)
	}},
}
