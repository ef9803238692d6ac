package conformance

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// celTranscripts: x-kubernetes-validations rules of a CRD's schema.
var celTranscripts = []transcript{
	{"cel-validation-rules", func(tr *T) {
		crd := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"rules.{group}"},
"spec":{"group":"{group}","scope":"Namespaced","names":{"plural":"rules","singular":"rule","kind":"Rule"},"versions":[{"name":"v1","served":true,"storage":true,
"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object",
 "x-kubernetes-validations":[
  {"rule":"self.min <= self.max","message":"min must not exceed max","fieldPath":".min","reason":"FieldValueForbidden"},
  {"rule":"!has(self.mode) || self.mode != 'frozen' || self.max == oldSelf.max","message":"max is frozen"},
  {"rule":"self.name.startsWith('x-')","messageExpression":"'name ' + self.name + ' must start with x-'"}],
 "properties":{"min":{"type":"integer"},"max":{"type":"integer"},"mode":{"type":"string"},"name":{"type":"string"},
  "tags":{"type":"array","items":{"type":"string"},"x-kubernetes-validations":[{"rule":"self.all(t, t.size() < 5)","message":"tags are short"}]},
  "id":{"type":"string","x-kubernetes-validations":[{"rule":"self == oldSelf","message":"id is immutable"}]}}}}}}}]}}`
		// The CRD's create and delete are set-up, not recorded: kube-apiserver
		// answers the create before its controllers establish the CRD (the
		// customresource-definition transcript compares the CRD itself).
		tr.unrecorded(func() {
			tr.Post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd).Want(http.StatusCreated)
		})
		tr.awaitServed("/apis/{group}/v1/namespaces/{ns}/rules")
		rules := "/apis/{group}/v1/namespaces/{ns}/rules"
		obj := func(name, spec string) string {
			return `{"apiVersion":"{group}/v1","kind":"Rule","metadata":{"name":"` + name + `"},"spec":` + spec + `}`
		}
		tr.Post(rules, obj("a", `{"min":1,"max":5,"name":"x-a","id":"1","tags":["a"]}`)).Want(http.StatusCreated)
		tr.Post(rules, obj("b", `{"min":6,"max":5,"name":"x-b"}`)).Want(http.StatusUnprocessableEntity)
		tr.Post(rules, obj("c", `{"min":1,"max":5,"name":"bad"}`)).Want(http.StatusUnprocessableEntity)
		tr.Post(rules, obj("d", `{"min":1,"max":5,"name":"x-d","tags":["long-tag"]}`)).Want(http.StatusUnprocessableEntity)
		tr.Post(rules, obj("e", `{"min":"one","max":5,"name":"x-e"}`)).Want(http.StatusUnprocessableEntity)
		tr.Patch(rules+"/a", "merge", `{"spec":{"mode":"frozen"}}`).Want(http.StatusOK)
		tr.Patch(rules+"/a", "merge", `{"spec":{"max":9}}`).Want(http.StatusUnprocessableEntity)
		tr.Patch(rules+"/a", "merge", `{"spec":{"id":"2"}}`).Want(http.StatusUnprocessableEntity)
		tr.Patch(rules+"/a", "merge", `{"spec":{"mode":"open","max":9}}`).Want(http.StatusOK)
		tr.unrecorded(func() {
			tr.Delete("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/rules.{group}", "").Want(http.StatusOK)
		})
		// Rules are compiled when the CRD is written: one that does not
		// compile, or refers to what is not there, refuses the CRD.
		for i, rule := range []string{"self.min <=", "self.nothing == 1", "self.min == 'a'"} {
			bad := strings.Replace(strings.Replace(crd, "rules.{group}", fmt.Sprintf("bad%d.{group}", i), 1), `"plural":"rules","singular":"rule","kind":"Rule"`, fmt.Sprintf(`"plural":"bad%d","singular":"bad%d","kind":"Bad%d"`, i, i, i), 1)
			bad = strings.Replace(bad, "self.min <= self.max", rule, 1)
			tr.Post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", bad).Want(http.StatusUnprocessableEntity)
		}
	}},
}

// awaitServed polls path (unrecorded) until it is served: a new CRD's
// resources are served a moment after its create on kube-apiserver.
func (tr *T) awaitServed(path string) {
	tr.t.Helper()
	url := tr.fx.host + tr.expand(path)
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, err := http.NewRequestWithContext(tr.ctx, http.MethodGet, url, nil)
		if err != nil {
			tr.t.Fatal(err)
		}
		resp, err := tr.fx.client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			tr.t.Fatalf("%s: %s not served after 30 s", tr.fx.target, path)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// unrecorded runs f without recording its exchanges (set-up).
func (tr *T) unrecorded(f func()) {
	n := len(tr.log)
	f()
	tr.log = tr.log[:n]
}
