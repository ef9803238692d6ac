package apiserver_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/internal/testutil"
)

// kubectl runs kubectl against a server and returns its combined output.
type kubectl struct {
	t    *testing.T
	bin  string
	args []string // --kubeconfig, --cache-dir
	home string
}

func newKubectl(t *testing.T, env *apiservertest.Env) *kubectl {
	bin, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("SKIPPING the kubectl test: kubectl (v1.32) is not on PATH on this machine; install it to run this test")
	}
	dir := t.TempDir()
	return &kubectl{t: t, bin: bin, home: dir, args: []string{"--kubeconfig", env.Kubeconfig(), "--cache-dir", filepath.Join(dir, "cache")}}
}

func (k *kubectl) cmd(ctx context.Context, args ...string) *exec.Cmd {
	c := exec.CommandContext(ctx, k.bin, append(append([]string{}, k.args...), args...)...)
	c.Env = append(os.Environ(), "HOME="+k.home, "KUBECTL_INTERACTIVE_DELETE=false")
	return c
}

// run runs kubectl, failing the test on error; stdin is optional.
func (k *kubectl) run(stdin string, args ...string) string {
	k.t.Helper()
	out, err := k.try(stdin, args...)
	if err != nil {
		k.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (k *kubectl) try(stdin string, args ...string) (string, error) {
	return k.tryEnv(nil, stdin, args...)
}

// tryEnv runs kubectl with extra environment variables ("NAME=value").
func (k *kubectl) tryEnv(env []string, stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := k.cmd(ctx, args...)
	c.Env = append(c.Env, env...)
	if stdin != "" {
		c.Stdin = strings.NewReader(stdin)
	}
	start := time.Now()
	out, err := c.CombinedOutput()
	k.t.Logf("kubectl %s (%s)", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
	return string(out), err
}

const widgetCR = `
apiVersion: example.com/v1
kind: Widget
metadata:
  name: w1
spec:
  color: red
  replicas: 2
`

func TestKubectl(t *testing.T) {
	forEachTarget(t, apiservertest.Options{}, testKubectl)
}

// testKubectl runs the same kubectl steps on both servers. Names are the
// test's own (CRDs and namespaces are cluster-scoped and the real server is
// shared), and the widgets are named by resource.group (other tests' Widget
// CRDs may be served too).
func testKubectl(t *testing.T, env *apiservertest.Env) {
	k := newKubectl(t, env)
	group := widgetGroup(env)
	widgets := "widgets." + group
	cr := strings.ReplaceAll(widgetCR, "example.com", group)
	// A namespace of this test's own, created by kubectl.
	demo := "kubectl-" + env.Namespace[strings.LastIndex(env.Namespace, "-")+1:]

	if out := k.run("", "version", "-o", "json"); !strings.Contains(out, `"serverVersion"`) {
		t.Fatalf("version: %s", out)
	}
	k.run("", "create", "namespace", demo)
	if out := k.run(widgetCRDIn(group), "apply", "-f", "-"); !strings.Contains(out, "customresourcedefinition.apiextensions.k8s.io/"+widgets+" created") {
		t.Fatalf("apply CRD: %s", out)
	}
	t.Cleanup(func() { _, _ = k.try("", "delete", "crd", widgets, "--wait=false") })

	if out := k.run("", "wait", "--for=condition=Established", "crd/"+widgets, "--timeout=30s"); !strings.Contains(out, "condition met") {
		t.Fatalf("wait: %s", out)
	}
	// Established is not yet served everywhere (kube-apiserver's discovery
	// and handlers follow asynchronously): wait until kubectl finds it.
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := k.try("", "get", widgets, "-n", demo)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not served: %v %s", widgets, err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Watch widgets from the start, in the background.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var watchOut testutil.SyncBuffer
	w := k.cmd(ctx, "get", widgets, "-n", demo, "--watch", "--output-watch-events")
	w.Stdout, w.Stderr = &watchOut, &watchOut
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = w.Wait() })
	defer wg.Wait()
	defer cancel()

	if out := k.run(cr, "apply", "-n", demo, "-f", "-"); !strings.Contains(out, "widget."+group+"/w1 created") {
		t.Fatalf("apply CR: %s", out)
	}
	// Applying again changes nothing.
	if out := k.run(cr, "apply", "-n", demo, "-f", "-"); !strings.Contains(out, "unchanged") {
		t.Fatalf("second apply: %s", out)
	}
	// kubectl diff compares with a server-side dry run; exit code 1: differences.
	out, err := k.try(strings.Replace(cr, "replicas: 2", "replicas: 3", 1), "diff", "-n", demo, "-f", "-")
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !regexp.MustCompile(`(?m)^-\s+replicas: 2\n\+\s+replicas: 3$`).MatchString(out) {
		t.Fatalf("diff: %v\n%s", err, out)
	}
	// kubectl validates on the server (fieldValidation=Strict) and explains CRDs.
	if out, err := k.try(strings.Replace(cr, "  replicas: 2", "  replicas: 2\n  bogus: 1", 1), "apply", "-n", demo, "-f", "-"); err == nil || !strings.Contains(out, `unknown field "spec.bogus"`) {
		t.Fatalf("apply with an unknown field: %v %s", err, out)
	}
	if out := k.run("", "explain", "widgets.spec", "--api-version="+group+"/v1"); !strings.Contains(out, "color") || !strings.Contains(out, "replicas") {
		t.Fatalf("explain:\n%s", out)
	}
	out = k.run("", "get", widgets, "-n", demo)
	if !regexp.MustCompile(`(?m)^NAME\s+COLOR\s+REPLICAS\s+AGE\n+w1\s+red\s+2\s+\d+s`).MatchString(out) {
		t.Fatalf("get with printer columns:\n%s", out)
	}
	out = k.run("", "get", widgets, "w1", "-n", demo, "-o", "yaml")
	for _, want := range []string{"apiVersion: " + group + "/v1", "kind: Widget", "uid:", "resourceVersion:", "color: red", "generation: 1"} {
		if !strings.Contains(out, want) {
			t.Fatalf("get -o yaml misses %q:\n%s", want, out)
		}
	}
	k.run("", "patch", widgets, "w1", "-n", demo, "--type=merge", "-p", `{"spec":{"color":"blue"}}`)
	k.run("", "label", widgets, "w1", "-n", demo, "tier=gold")
	if out := k.run("", "scale", widgets, "w1", "-n", demo, "--replicas=5"); !strings.Contains(out, "scaled") {
		t.Fatalf("scale: %s", out)
	}
	out = k.run("", "get", widgets, "-n", demo, "-l", "tier=gold", "-o", "jsonpath={.items[0].spec.color}/{.items[0].spec.replicas}/{.items[0].metadata.generation}")
	if out != "blue/5/3" {
		t.Fatalf("after patch, label, scale: %q", out)
	}
	// kubectl edit: GET, the editor, then a patch of what changed.
	if out, err := k.tryEnv([]string{"KUBE_EDITOR=sed -i s/color:.blue/color:\\ green/"}, "", "edit", widgets, "w1", "-n", demo); err != nil || !strings.Contains(out, "edited") {
		t.Fatalf("edit: %v %s", err, out)
	}
	if out := k.run("", "get", widgets, "w1", "-n", demo, "-o", "jsonpath={.spec.color}/{.metadata.generation}"); out != "green/4" {
		t.Fatalf("after edit: %q", out)
	}
	// Invalid objects are refused with the server's message.
	if out, err := k.try(strings.Replace(cr, "color: red", "color: pink", 1), "apply", "-n", demo, "-f", "-"); err == nil || !strings.Contains(out, "Unsupported value") {
		t.Fatalf("invalid apply: %v %s", err, out)
	}
	// A finalizer holds the deleted object, Terminating, until it is removed.
	k.run("", "patch", widgets, "w1", "-n", demo, "--type=merge", "-p", `{"metadata":{"finalizers":["example.com/hold"]}}`)
	k.run("", "delete", widgets, "w1", "-n", demo, "--wait=false")
	if out := k.run("", "get", widgets, "w1", "-n", demo, "-o", "jsonpath={.metadata.deletionTimestamp}"); out == "" {
		t.Fatal("no deletionTimestamp after delete")
	}
	k.run("", "patch", widgets, "w1", "-n", demo, "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`)
	if out, err := k.try("", "get", widgets, "w1", "-n", demo); err == nil || !strings.Contains(out, "NotFound") {
		t.Fatalf("object should be gone: %s", out)
	}
	// The watch saw it all.
	deadline = time.Now().Add(10 * time.Second)
	for !strings.Contains(watchOut.String(), "DELETED") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	got := watchOut.String()
	for _, want := range []string{"ADDED", "MODIFIED", "DELETED", "w1"} {
		if !strings.Contains(got, want) {
			t.Fatalf("get -w output misses %s:\n%s", want, got)
		}
	}
	// Built-in kinds: kubectl create, get, describe-free paths.
	k.run("", "create", "deployment", "web", "-n", demo, "--image=nginx", "--replicas=2")
	out = k.run("", "get", "deploy", "-n", demo)
	if !regexp.MustCompile(`(?m)^NAME\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+AGE\nweb\s+0/2\s+0\s+0\s+`).MatchString(out) {
		t.Fatalf("get deployments:\n%s", out)
	}
	// get -w on a built-in kind streams Table rows.
	var podWatch testutil.SyncBuffer
	pw := k.cmd(ctx, "get", "pods", "-n", demo, "--watch")
	pw.Stdout, pw.Stderr = &podWatch, &podWatch
	if err := pw.Start(); err != nil {
		t.Fatal(err)
	}
	wg.Go(func() { _ = pw.Wait() })
	k.run(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p1"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`, "create", "-n", demo, "-f", "-")
	deadline = time.Now().Add(10 * time.Second)
	for !regexp.MustCompile(`p1\s+0/1\s+Pending`).MatchString(podWatch.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("get pods -w:\n%s", podWatch.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	k.run("", "scale", "deployment", "web", "-n", demo, "--replicas=3")
	k.run("", "set", "image", "deployment/web", "-n", demo, "nginx=nginx:2")
	if out := k.run("", "get", "deploy", "web", "-n", demo, "-o", "jsonpath={.spec.replicas}/{.spec.template.spec.containers[0].image}"); out != "3/nginx:2" {
		t.Fatalf("deployment after scale and set image: %q", out)
	}
	if out := k.run("", "describe", "deployment", "web", "-n", demo); !strings.Contains(out, "nginx:2") {
		t.Fatalf("describe:\n%s", out)
	}
	if out := k.run("", "get", "events", "-n", demo); !strings.Contains(out, "No resources found") && !strings.Contains(out, "LAST SEEN") {
		t.Fatalf("get events:\n%s", out)
	}
	k.run("", "create", "configmap", "cfg", "-n", demo, "--from-literal=a=b")
	if out := k.run("", "get", "all", "-n", demo); !strings.Contains(out, "deployment.apps/web") {
		t.Fatalf("get all:\n%s", out)
	}
	if out := k.run("", "api-resources"); !strings.Contains(out, "widgets") || !strings.Contains(out, "deployments") {
		t.Fatalf("api-resources:\n%s", out)
	}
	// A deleted namespace is Terminating until the namespace controller has
	// emptied it and removed it: the embedded server does that inline, the
	// bare real control plane has no such controller. Either way it is gone
	// or going.
	k.run("", "delete", "namespace", demo, "--wait=false")
	if out, err := k.try("", "get", "namespace", demo, "-o", "jsonpath={.status.phase}"); err == nil && out != "Terminating" {
		t.Fatalf("namespace after delete: %s", out)
	} else if err != nil && !strings.Contains(out, "NotFound") {
		t.Fatalf("get namespace after delete: %v %s", err, out)
	}
}

// TestKubectlExplain: kubectl explain reads the server's OpenAPI documents;
// built-in kinds explain the same on both servers.
func TestKubectlExplain(t *testing.T) {
	forEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		k := newKubectl(t, env)
		for _, tc := range []struct {
			args []string
			want []string
		}{
			{[]string{"explain", "pods.spec.containers.ports"}, []string{"KIND:       Pod", "VERSION:    v1", "FIELD: ports <[]ContainerPort>", "containerPort\t<integer> -required-"}},
			{[]string{"explain", "deployments.spec.strategy.rollingUpdate.maxSurge"}, []string{"GROUP:      apps", "FIELD: maxSurge <IntOrString>"}},
			{[]string{"explain", "events.eventTime", "--api-version=events.k8s.io/v1"}, []string{"GROUP:      events.k8s.io", "FIELD: eventTime <string>"}},
			{[]string{"explain", "secrets.data"}, []string{"FIELD: data <map[string]string>"}},
			{[]string{"explain", "customresourcedefinitions.spec.versions"}, []string{"GROUP:      apiextensions.k8s.io", "KIND:       CustomResourceDefinition", "FIELD: versions <[]CustomResourceDefinitionVersion>"}},
			{[]string{"explain", "leases.spec.holderIdentity"}, []string{"GROUP:      coordination.k8s.io", "FIELD: holderIdentity <string>"}},
			{[]string{"explain", "statefulsets.spec.updateStrategy.type"}, []string{"GROUP:      apps", "KIND:       StatefulSet", "FIELD: type <string>"}},
			{[]string{"explain", "jobs.spec.backoffLimit"}, []string{"GROUP:      batch", "FIELD: backoffLimit <integer>"}},
			{[]string{"explain", "hpa.spec.metrics"}, []string{"GROUP:      autoscaling", "VERSION:    v2", "FIELD: metrics <[]MetricSpec>"}},
			{[]string{"explain", "csr.spec.signerName"}, []string{"GROUP:      certificates.k8s.io", "FIELD: signerName <string>"}},
		} {
			out := k.run("", tc.args...)
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("kubectl %s: output lacks %q:\n%s", strings.Join(tc.args, " "), w, out)
				}
			}
		}
	})
}

// TestKubectlSameOutput runs the same kubectl commands against both servers
// and compares their output, normalized only where servers legitimately
// differ: names made unique per test, ages, UIDs, timestamps,
// resourceVersions and cluster IPs (each server has its own service range).
func TestKubectlSameOutput(t *testing.T) {
	targets := apiservertest.Targets()
	if len(targets) < 2 {
		t.Skip("compares the targets, and $" + apiservertest.EnvTargets + " selects only " + fmt.Sprint(targets))
	}
	outputs := map[apiservertest.Target]string{}
	for _, target := range targets {
		env := startTarget(t, target, apiservertest.Options{})
		k := newKubectl(t, env)
		group := widgetGroup(env)
		widgets := "widgets." + group
		k.run(widgetCRDIn(group), "apply", "-f", "-")
		t.Cleanup(func() { _, _ = k.try("", "delete", "crd", widgets, "--wait=false") })
		k.run("", "wait", "--for=condition=Established", "crd/"+widgets, "--timeout=30s")
		deadline := time.Now().Add(30 * time.Second)
		for {
			out, err := k.try("", "get", widgets)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s not served: %v %s", widgets, err, out)
			}
			time.Sleep(100 * time.Millisecond)
		}
		normalize := strings.NewReplacer(group, "GROUP", env.Namespace, "NAMESPACE")
		var all strings.Builder
		for _, c := range []struct {
			stdin string
			args  []string
		}{
			{strings.ReplaceAll(widgetCR, "example.com", group), []string{"apply", "-f", "-"}},
			{"", []string{"get", widgets, "w1", "-o", "yaml"}},
			{"", []string{"describe", widgets, "w1"}},
			{"", []string{"create", "deployment", "web", "--image=nginx", "--replicas=2"}},
			{"", []string{"get", "deploy", "web", "-o", "yaml"}},
			{"", []string{"describe", "deploy", "web"}},
			{`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p1"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`, []string{"create", "-f", "-"}},
			{"", []string{"get", "pod", "p1", "-o", "yaml"}},
			{"", []string{"describe", "pod", "p1"}},
			{"", []string{"get", "pods", "-o", "wide"}},
			{"", []string{"create", "service", "clusterip", "svc", "--tcp=80:8080"}},
			{"", []string{"get", "svc", "svc", "-o", "yaml"}},
			{"", []string{"create", "secret", "generic", "s", "--from-literal=a=b"}},
			{"", []string{"describe", "secret", "s"}},
			{"", []string{"get", "all"}},
			{"", []string{"delete", "pod", "p1", "--wait=false"}},
			{"", []string{"get", "pods"}},
		} {
			out := k.run(c.stdin, c.args...)
			fmt.Fprintf(&all, "$ kubectl %s\n%s", normalize.Replace(strings.Join(c.args, " ")), normalizeKubectl(normalize.Replace(out)))
		}
		outputs[target] = all.String()
	}
	embedded, real := outputs[apiservertest.Embedded], outputs[apiservertest.RealServer]
	if embedded != real {
		el, rl := strings.Split(embedded, "\n"), strings.Split(real, "\n")
		for i := range max(len(el), len(rl)) {
			var e, r string
			if i < len(el) {
				e = el[i]
			}
			if i < len(rl) {
				r = rl[i]
			}
			if e != r {
				t.Errorf("line %d differs:\n  embedded: %s\n  real:     %s", i+1, e, r)
			}
		}
		t.Logf("embedded:\n%s\nreal:\n%s", embedded, real)
	}
}

var kubectlVolatile = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`), "UID"},
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`), "TIME"},
	{regexp.MustCompile(`[A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d \+0000`), "DATE"},
	{regexp.MustCompile(`(resourceVersion: |Resource Version:\s+)"?\d+"?`), "${1}RV"},
	{regexp.MustCompile(`\b10\.\d+\.\d+\.\d+\b`), "CLUSTER-IP"},
	{regexp.MustCompile(`\b\d+(ms|s|m)\b`), "AGE"},
	// Table columns are as wide as their widest value (an IP, an age).
	{regexp.MustCompile(`(\S) {2,}`), "$1  "},
}

// normalizeKubectl replaces what legitimately differs between servers and runs.
func normalizeKubectl(s string) string {
	for _, v := range kubectlVolatile {
		s = v.re.ReplaceAllString(s, v.with)
	}
	return s
}
