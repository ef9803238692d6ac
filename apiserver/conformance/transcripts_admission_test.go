package conformance

import (
	"net/http"
	"strings"
	"time"
)

func init() {
	transcripts = append(transcripts, transcript{"admission-webhooks", admissionWebhookTranscript})
}

// admissionWebhookTranscript writes ConfigMaps through mutating and
// validating webhooks: a mutation and its warning, a denial with its
// reason, a denial on update and delete, failurePolicy Fail and Ignore with
// the webhook down, a timeout, a match condition, a dry run; URLs whose
// paths kube-apiserver's client cleans ("//validate/" is "/validate", as
// envtest writes them).
func admissionWebhookTranscript(tr *T) {
	hooks := startHooks(tr)
	down := "https://127.0.0.1:1"
	hook := func(name, url, extra string) string {
		return `{"name":"` + name + `.conformance.kloop.dev","admissionReviewVersions":["v1"],"sideEffects":"None",
"clientConfig":{"url":"` + url + `","caBundle":"` + hooks.ca + `"},
"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"{ns}"}},
"rules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE","UPDATE","DELETE"],"resources":["configmaps"]}]` + extra + `}`
	}
	mutating := `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"MutatingWebhookConfiguration","metadata":{"name":"{ns}"},"webhooks":[` +
		hook("mutate", hooks.srv.URL+"/mutate", `,"objectSelector":{"matchExpressions":[{"key":"unlabelled","operator":"DoesNotExist"}]}`) + `]}`
	validating := `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration","metadata":{"name":"{ns}"},"webhooks":[` +
		hook("validate", hooks.srv.URL+"//validate/", `,"matchConditions":[{"name":"not-exempt","expression":"object == null || !has(object.metadata.annotations) || !('exempt' in object.metadata.annotations)"}]`) + `,` +
		hook("down-fail", down+"//down/", `,"failurePolicy":"Fail","objectSelector":{"matchLabels":{"down":"fail"}}`) + `,` +
		hook("down-ignore", down+"/down", `,"failurePolicy":"Ignore","objectSelector":{"matchLabels":{"down":"ignore"}}`) + `,` +
		hook("slow", hooks.srv.URL+"/slow", `,"timeoutSeconds":1,"objectSelector":{"matchLabels":{"slow":"yes"}}`) + `]}`
	// The configurations are set-up (their URLs are this run's). A server
	// that does not serve them (the embedded one before the kinds of
	// admissionregistration.k8s.io) skips the transcript, which is then not
	// compared.
	tr.unrecorded(func() {
		if tr.Post("/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", mutating).Code == http.StatusNotFound {
			tr.t.Skipf("%s does not serve webhook configurations", tr.fx.target)
		}
		tr.Post("/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", validating).Want(http.StatusCreated)
	})
	cms := "/api/v1/namespaces/{ns}/configmaps"
	// Every ConfigMap has a label: the mutating webhook's patch adds one to
	// the map.
	cm := func(name, labels, annotations, data string) string {
		labels = strings.Replace(labels, "{", `{"app":"conf",`, 1)
		labels = strings.Replace(labels, ",}", "}", 1)
		return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `","labels":` + labels + `,"annotations":` + annotations + `},"data":` + data + `}`
	}
	tr.awaitAdmission(cms, cm("probe", `{}`, `{}`, `{"deny":"probe"}`))
	tr.Post(cms, cm("a", `{}`, `{}`, `{"k":"v"}`)).Want(http.StatusCreated)
	tr.Post(cms, cm("b", `{}`, `{}`, `{"deny":"set"}`)).Want(http.StatusForbidden)
	tr.Post(cms, cm("c", `{}`, `{"exempt":"yes"}`, `{"deny":"set"}`)).Want(http.StatusCreated)
	tr.Post(cms, cm("d", `{"unlabelled":"yes"}`, `{}`, `{}`)).Want(http.StatusCreated)
	tr.Patch(cms+"/a", "merge", `{"data":{"deny":"now"}}`).Want(http.StatusForbidden)
	tr.Patch(cms+"/a", "merge", `{"data":{"k":"w"}}`).Want(http.StatusOK)
	tr.Delete(cms+"/c", "").Want(http.StatusForbidden) // the match condition takes a deletion (object null)
	tr.Post(cms, cm("e", `{"down":"fail"}`, `{}`, `{}`)).Want(http.StatusInternalServerError)
	tr.Post(cms, cm("f", `{"down":"ignore"}`, `{}`, `{}`)).Want(http.StatusCreated)
	tr.Post(cms, cm("g", `{"slow":"yes"}`, `{}`, `{}`)).Want(http.StatusInternalServerError)
	tr.Post(cms+"?dryRun=All", cm("h", `{}`, `{}`, `{"k":"v"}`)).Want(http.StatusCreated)
	tr.Get(cms).Want(http.StatusOK)
	tr.unrecorded(func() {
		tr.Delete("/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/{ns}", "").Want(http.StatusOK)
		tr.Delete("/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/{ns}", "").Want(http.StatusOK)
	})
}

// awaitAdmission polls (unrecorded, with dry runs) until the webhook
// configurations are in force: kube-apiserver follows them through
// informers, a moment after their writes.
func (tr *T) awaitAdmission(path, deniedBody string) {
	tr.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var code int
		tr.unrecorded(func() { code = tr.Post(path+"?dryRun=All", deniedBody).Code })
		if code == http.StatusForbidden {
			return
		}
		if time.Now().After(deadline) {
			tr.t.Fatalf("%s: the webhook configurations are not in force after 30 s", tr.fx.target)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
