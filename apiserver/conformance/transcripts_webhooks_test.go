package conformance

import (
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// webhookTranscripts: calls of webhooks, to a webhook server the harness
// starts for each transcript (the same code behind both targets).
var webhookTranscripts = []transcript{
	{"conversion-webhook", conversionWebhookTranscript},
}

// The transcripts are appended here rather than in transcripts_test.go's
// list, which other parts of the suite edit.
func init() { transcripts = append(transcripts, webhookTranscripts...) }

// hookServer is the harness's webhook server: /convert converts Widgets
// between v1alpha1 (spec.colour) and v1 (spec.color), and fails on
// purpose for an object whose colour is "fail"; the other paths are
// admission webhooks (admit).
type hookServer struct {
	srv *httptest.Server
	ca  string // base64 of the certificate's PEM, for caBundle
}

// hooksAddr is the address of the first hook server of the run: the
// others listen there too (one after the other), so that the URLs in
// error messages are the same on both targets.
var hooksAddr struct {
	sync.Mutex
	addr string
}

func startHooks(tr *T) *hookServer {
	mux := http.NewServeMux()
	mux.HandleFunc("/convert", convertWidgets)
	mux.HandleFunc("/", admit)
	srv := httptest.NewUnstartedServer(mux)
	hooksAddr.Lock()
	if hooksAddr.addr != "" {
		if l, err := net.Listen("tcp", hooksAddr.addr); err == nil {
			srv.Listener.Close()
			srv.Listener = l
		}
	}
	hooksAddr.addr = srv.Listener.Addr().String()
	hooksAddr.Unlock()
	srv.StartTLS()
	tr.t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return &hookServer{srv: srv, ca: base64.StdEncoding.EncodeToString(ca)}
}

func convertWidgets(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	var review struct {
		Request struct {
			UID               string           `json:"uid"`
			DesiredAPIVersion string           `json:"desiredAPIVersion"`
			Objects           []map[string]any `json:"objects"`
		} `json:"request"`
	}
	if err := json.Unmarshal(body, &review); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	result := map[string]any{"status": "Success"}
	converted := []any{}
	for _, o := range review.Request.Objects {
		spec, _ := o["spec"].(map[string]any)
		if spec == nil {
			spec = map[string]any{}
		}
		from, to := "color", "colour"
		if strings.HasSuffix(review.Request.DesiredAPIVersion, "/v1") {
			from, to = "colour", "color"
		}
		if v, ok := spec[from]; ok {
			if v == "fail" {
				name, _ := o["metadata"].(map[string]any)["name"].(string)
				result = map[string]any{"status": "Failure", "message": fmt.Sprintf("the conversion of %s fails on purpose", name)}
				converted = nil
				break
			}
			delete(spec, from)
			spec[to] = v
		}
		o["spec"] = spec
		o["apiVersion"] = review.Request.DesiredAPIVersion
		converted = append(converted, o)
	}
	resp := map[string]any{"uid": review.Request.UID, "result": result}
	if converted != nil {
		resp["convertedObjects"] = converted
	}
	out, _ := json.Marshal(map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "response": resp})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// admit answers the harness's admission webhooks: /mutate adds a label
// (and warns) but to a deletion, /validate denies a ConfigMap with
// data.deny (new, or deleted: with a reason, a code and a warning), and
// allows the rest; /slow answers after 2 s.
func admit(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	type object struct {
		Data map[string]string `json:"data"`
	}
	var review struct {
		Request struct {
			UID       string  `json:"uid"`
			Operation string  `json:"operation"`
			Object    *object `json:"object"`
			OldObject *object `json:"oldObject"`
		} `json:"request"`
	}
	if err := json.Unmarshal(body, &review); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	resp := map[string]any{"uid": review.Request.UID, "allowed": true}
	switch r.URL.Path {
	case "/mutate":
		if review.Request.Operation != "DELETE" {
			resp["patchType"] = "JSONPatch"
			resp["patch"] = []byte(`[{"op":"add","path":"/metadata/labels/admitted","value":"yes"}]`)
			resp["warnings"] = []string{"labelled by the mutating webhook"}
		}
	case "/validate":
		obj := review.Request.Object
		if obj == nil {
			obj = review.Request.OldObject
		}
		if d, ok := obj.Data["deny"]; ok {
			resp["allowed"] = false
			resp["status"] = map[string]any{"code": 403, "reason": "Forbidden", "message": "data.deny is " + d}
			resp["warnings"] = []string{"denied by the validating webhook"}
		}
	case "/slow":
		select {
		case <-r.Context().Done():
		case <-time.After(2 * time.Second):
		}
	}
	out, _ := json.Marshal(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": resp})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// conversionWebhookTranscript reads and writes a CRD's objects at the
// version it does not store them at, through its conversion webhook.
func conversionWebhookTranscript(tr *T) {
	hooks := startHooks(tr)
	str := `{"type":"string"}`
	schema := func(colorField string) string {
		return `{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{"` + colorField + `":` + str + `,"size":{"type":"integer"}}}}}}`
	}
	crd := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.{group}"},
"spec":{"group":"{group}","scope":"Namespaced","names":{"plural":"widgets","singular":"widget","kind":"Widget"},
"versions":[{"name":"v1alpha1","served":true,"storage":false,"schema":` + schema("colour") + `},
 {"name":"v1","served":true,"storage":true,"schema":` + schema("color") + `}],
"conversion":{"strategy":"Webhook","webhook":{"conversionReviewVersions":["v1"],"clientConfig":{"url":"` + hooks.srv.URL + `/convert","caBundle":"` + hooks.ca + `"}}}}}`
	// The CRD is set-up (its URL is this run's): not recorded.
	tr.unrecorded(func() {
		tr.Post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd).Want(http.StatusCreated)
	})
	tr.awaitServed("/apis/{group}/v1alpha1/namespaces/{ns}/widgets")
	tr.awaitServed("/apis/{group}/v1/namespaces/{ns}/widgets")
	alpha, v1 := "/apis/{group}/v1alpha1/namespaces/{ns}/widgets", "/apis/{group}/v1/namespaces/{ns}/widgets"
	obj := func(version, name, spec string) string {
		return `{"apiVersion":"{group}/` + version + `","kind":"Widget","metadata":{"name":"` + name + `"},"spec":` + spec + `}`
	}
	created := tr.Post(alpha, obj("v1alpha1", "a", `{"colour":"green","size":2}`)).Want(http.StatusCreated)
	tr.Get(v1 + "/a").Want(http.StatusOK)
	tr.Get(alpha + "/a").Want(http.StatusOK)
	tr.Post(v1, obj("v1", "b", `{"color":"blue"}`)).Want(http.StatusCreated)
	tr.Get(alpha).Want(http.StatusOK)
	tr.Patch(alpha+"/a", "merge", `{"spec":{"colour":"red"}}`).Want(http.StatusOK)
	tr.Get(v1 + "/a").Want(http.StatusOK)
	b := tr.Get(v1 + "/b").Want(http.StatusOK)
	tr.Put(alpha+"/b", `{"apiVersion":"{group}/v1alpha1","kind":"Widget","metadata":{"name":"b","resourceVersion":"`+b.RV()+`"},"spec":{"colour":"purple"}}`).Want(http.StatusOK)
	tr.Watch(alpha+"?watch=1&resourceVersion="+created.RV(), Events(3)).Want(http.StatusOK)
	tr.Post(alpha, obj("v1alpha1", "c", `{"colour":"fail"}`)).Want(http.StatusInternalServerError)
	tr.Delete(alpha+"/a", "").Want(http.StatusOK)
	tr.Get(alpha).Want(http.StatusOK)
	tr.unrecorded(func() {
		tr.Delete("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.{group}", "").Want(http.StatusOK)
	})
}
