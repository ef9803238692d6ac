package conformance

import (
	"net/http"
)

// schedulingTranscripts: scheduling.k8s.io/v1 PriorityClasses, the system
// ones kube-apiserver creates, and the priority the Priority admission
// plugin gives a Pod from its class.
var schedulingTranscripts = []transcript{
	{"priorityclass", func(tr *T) {
		const pcs = "/apis/scheduling.k8s.io/v1/priorityclasses"
		tr.Get(pcs + "/system-node-critical").Want(http.StatusOK)
		tr.Get(pcs + "/system-cluster-critical").Want(http.StatusOK)
		tr.GetTable(pcs + "/system-node-critical").Want(http.StatusOK)
		tr.Post(pcs, `{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"{ns}-low"},"value":100,"description":"low"}`).Want(http.StatusCreated)
		tr.Post(pcs, `{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"{ns}-never"},"value":-5,"preemptionPolicy":"Never"}`).Want(http.StatusCreated)
		tr.Post(pcs, `{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"{ns}-high"},"value":1000000001}`).Want(http.StatusUnprocessableEntity)
		tr.Post(pcs, `{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"system-{ns}"},"value":1}`).Want(http.StatusUnprocessableEntity)
		tr.Post(pcs, `{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"system-node-critical"},"value":1}`).Want(http.StatusUnprocessableEntity)
		tr.Post(pcs, `{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"{ns}-odd"},"value":1,"preemptionPolicy":"Sometimes"}`).Want(http.StatusUnprocessableEntity)
		tr.Post(pcs, `{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"{ns}-Bad"},"value":1}`).Want(http.StatusUnprocessableEntity)
		tr.Patch(pcs+"/{ns}-low", "merge", `{"value":101}`).Want(http.StatusUnprocessableEntity)
		tr.Patch(pcs+"/{ns}-low", "merge", `{"preemptionPolicy":"Never"}`).Want(http.StatusUnprocessableEntity)
		tr.Patch(pcs+"/{ns}-low", "merge", `{"description":"lower"}`).Want(http.StatusOK)
		tr.Post(pods, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"low"},"spec":{"priorityClassName":"{ns}-low","containers":[{"name":"c","image":"nginx:1.27"}]}}`).Want(http.StatusCreated)
		tr.Post(pods, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"never"},"spec":{"priorityClassName":"{ns}-never","containers":[{"name":"c","image":"nginx:1.27"}]}}`).Want(http.StatusCreated)
		tr.Post(pods, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"crit"},"spec":{"priorityClassName":"system-cluster-critical","priority":2000000000,"containers":[{"name":"c","image":"nginx:1.27"}]}}`).Want(http.StatusCreated)
		tr.Post(pods, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"missing"},"spec":{"priorityClassName":"{ns}-missing","containers":[{"name":"c","image":"nginx:1.27"}]}}`).Want(http.StatusForbidden)
		tr.Post(pods, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"wrong"},"spec":{"priorityClassName":"{ns}-low","priority":7,"containers":[{"name":"c","image":"nginx:1.27"}]}}`).Want(http.StatusForbidden)
		tr.Post(pods, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"wrongpolicy"},"spec":{"priorityClassName":"{ns}-never","preemptionPolicy":"PreemptLowerPriority","containers":[{"name":"c","image":"nginx:1.27"}]}}`).Want(http.StatusForbidden)
		tr.Post(pods, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"noclass"},"spec":{"priority":3,"containers":[{"name":"c","image":"nginx:1.27"}]}}`).Want(http.StatusForbidden)
		tr.Patch(pods+"/low", "merge", `{"metadata":{"labels":{"a":"b"}}}`).Want(http.StatusOK)
		tr.Delete(pcs+"/system-node-critical", "").Want(http.StatusForbidden)
		tr.Delete(pcs+"/{ns}-low", "").Want(http.StatusOK)
		tr.Delete(pcs+"/{ns}-never", "").Want(http.StatusOK)
	}},
}

func init() { transcripts = append(transcripts, schedulingTranscripts...) }
