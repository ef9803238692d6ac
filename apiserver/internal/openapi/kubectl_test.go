package openapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// discoveryMux serves legacy discovery for rs, and the OpenAPI documents,
// which is all kubectl explain needs.
func discoveryMux(t *testing.T, b *Builder, rs []Resource) http.Handler {
	t.Helper()
	lists := map[string]*metav1.APIResourceList{}
	groups := map[string]*metav1.APIGroup{}
	var order []string
	for _, r := range rs {
		gv := r.GVK.GroupVersion()
		key := "/" + pathKey(gv)
		if lists[key] == nil {
			lists[key] = &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String()}
		}
		verbs := r.Verbs
		if len(verbs) == 0 {
			verbs = allVerbs
		}
		lists[key].APIResources = append(lists[key].APIResources, metav1.APIResource{
			Name: r.Plural, SingularName: strings.ToLower(r.GVK.Kind), Namespaced: r.Namespaced, Kind: r.GVK.Kind, Verbs: verbs,
		})
		if gv.Group == "" {
			continue
		}
		g := groups[gv.Group]
		if g == nil {
			g = &metav1.APIGroup{Name: gv.Group}
			groups[gv.Group] = g
			order = append(order, gv.Group)
		}
		seen := false
		for _, v := range g.Versions {
			seen = seen || v.Version == gv.Version
		}
		if !seen {
			g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version})
			g.PreferredVersion = g.Versions[0]
		}
	}
	groupList := metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
	for _, name := range order {
		groupList.Groups = append(groupList.Groups, *groups[name])
	}
	write := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	mux := http.NewServeMux()
	mux.Handle("/openapi/", b)
	mux.Handle("/openapi/v2", b)
	mux.Handle("/openapi/v3", b)
	mux.HandleFunc("/api", func(w http.ResponseWriter, r *http.Request) {
		write(w, metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}})
	})
	mux.HandleFunc("/apis", func(w http.ResponseWriter, r *http.Request) { write(w, groupList) })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if l, ok := lists[r.URL.Path]; ok {
			write(w, l)
			return
		}
		http.NotFound(w, r)
	})
	return mux
}

type kubectlEnv struct {
	kubectl, dir, kubeconfig string
}

func (k kubectlEnv) run(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args = append(args, "--kubeconfig", k.kubeconfig, "--cache-dir", filepath.Join(k.dir, "cache"))
	cmd := exec.CommandContext(ctx, k.kubectl, args...)
	cmd.Env = append(os.Environ(), "HOME="+k.dir, "KUBECONFIG="+k.kubeconfig)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// startKubectlEnv serves discovery and the documents of the test resources
// and writes a kubeconfig for them.
func startKubectlEnv(t *testing.T) (kubectlEnv, func()) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("SKIPPING: kubectl is not installed; kubectl compatibility is NOT verified")
	}
	b := newBuilder(t)
	srv := httptest.NewServer(discoveryMux(t, b, testResources(t)))
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`, srv.URL)
	if err := os.WriteFile(kubeconfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return kubectlEnv{kubectl: kubectl, dir: dir, kubeconfig: kubeconfig}, srv.Close
}

// TestKubectlExplain runs the real kubectl explain against the documents.
func TestKubectlExplain(t *testing.T) {
	env, stop := startKubectlEnv(t)
	defer stop()
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"explain", "cronjobs"}, []string{"GROUP:      batch.tutorial.kubebuilder.io", "KIND:       CronJob", "VERSION:    v1", "CronJob is the Schema for the cronjobs API", "spec\t<Object>"}},
		{[]string{"explain", "cronjobs.spec.ports"}, []string{"FIELD: ports <[]Object>", "containerPort\t<integer> -required-"}},
		{[]string{"explain", "cronjobs.spec.concurrencyPolicy"}, []string{"FIELD: concurrencyPolicy <string>", `ENUM:`, "Allow"}},
		{[]string{"explain", "cronjobs", "--api-version=batch.tutorial.kubebuilder.io/v1beta1"}, []string{"VERSION:    v1beta1"}},
		{[]string{"explain", "cronjobs.metadata.labels"}, []string{"FIELD: labels <map[string]string>"}},
		{[]string{"explain", "pods.spec.containers.ports"}, []string{"KIND:       Pod", "containerPort\t<integer> -required-"}},
		{[]string{"explain", "deployments.spec.strategy.rollingUpdate.maxSurge"}, []string{"GROUP:      apps", "FIELD: maxSurge <IntOrString>"}},
		{[]string{"explain", "customresourcedefinitions.spec.versions"}, []string{"KIND:       CustomResourceDefinition"}},
		{[]string{"explain", "events.eventTime", "--api-version=events.k8s.io/v1"}, []string{"GROUP:      events.k8s.io", "FIELD: eventTime <string>", "eventTime is the time when this Event was first observed"}},
		{[]string{"explain", "secrets.data"}, []string{"FIELD: data <map[string]string>"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, err := env.run(t, "", tt.args...)
			if err != nil {
				t.Fatalf("kubectl %v: %v\n%s", tt.args, err, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestKubectlDetectsServerSideFieldValidation: kubectl --validate=strict
// validates client-side (with /openapi/v2) only when the v3 document does not
// advertise fieldValidation on the kind's PATCH. An object with an unknown
// field passes a client-side dry run exactly when kubectl left validation to
// the server, which it must for every kind we serve.
func TestKubectlDetectsServerSideFieldValidation(t *testing.T) {
	env, stop := startKubectlEnv(t)
	defer stop()
	tests := []struct{ name, manifest string }{
		{"custom resource", "apiVersion: batch.tutorial.kubebuilder.io/v1\nkind: CronJob\nmetadata: {name: c, namespace: default}\nspec: {schedule: x, jobTemplate: {}, bogusField: 1}\n"},
		{"built-in", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: default}\nbogusField: 1\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := env.run(t, tt.manifest, "create", "--dry-run=client", "--validate=strict", "-o", "name", "-f", "-")
			if err != nil {
				t.Fatalf("kubectl validated client-side instead of detecting server-side field validation: %v\n%s", err, out)
			}
		})
	}
}
