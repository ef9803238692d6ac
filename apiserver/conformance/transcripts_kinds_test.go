package conformance

import (
	"fmt"
	"net/http"
	"slices"
)

// kindTranscripts: the kinds of the table of built-in kinds (apiserver's
// kinds.go), each created, read, updated, listed, watched and printed,
// through its status and scale subresources where it has them, with one
// refused write a controller would hit (kube-apiserver's 422).
var kindTranscripts = slices.Concat(appsKindTranscripts, batchKindTranscripts, coreKindTranscripts)

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
		tr.Delete(daemonsets+"/d", "").Want(http.StatusOK)
	}},
	{"controllerrevision-crud", func(tr *T) {
		c := tr.Post(controllerrevisions, `{"apiVersion":"apps/v1","kind":"ControllerRevision","metadata":{"name":"r","ownerReferences":[{"apiVersion":"apps/v1","kind":"StatefulSet","name":"s","uid":"6f1d1f2c-0000-4000-8000-000000000001","controller":true}]},"revision":1,"data":{"spec":{"x":1}}}`).Want(http.StatusCreated)
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
