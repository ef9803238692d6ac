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
var kindTranscripts = slices.Concat(appsKindTranscripts)

const (
	statefulsets        = "/apis/apps/v1/namespaces/{ns}/statefulsets"
	daemonsets          = "/apis/apps/v1/namespaces/{ns}/daemonsets"
	controllerrevisions = "/apis/apps/v1/namespaces/{ns}/controllerrevisions"
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
