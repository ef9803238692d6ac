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

// TestKubectlExplain runs the real kubectl explain against the documents.
func TestKubectlExplain(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("SKIPPING: kubectl is not installed; kubectl explain compatibility is NOT verified")
	}
	b := newBuilder(t)
	srv := httptest.NewServer(discoveryMux(t, b, testResources(t)))
	defer srv.Close()
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
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			args := append(tt.args, "--kubeconfig", kubeconfig, "--cache-dir", filepath.Join(dir, "cache"))
			cmd := exec.CommandContext(ctx, kubectl, args...)
			cmd.Env = append(os.Environ(), "HOME="+dir, "KUBECONFIG="+kubeconfig)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("kubectl %v: %v\n%s", tt.args, err, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}
