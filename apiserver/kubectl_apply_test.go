package apiserver_test

import (
	"regexp"
	"strings"
	"testing"

	"kloop.dev/kloop/apiserver/apiservertest"
)

// kubectl's server-side apply on both servers: create by apply, a conflict
// between two managers and --force-conflicts, get --show-managed-fields,
// diff --server-side, apply --dry-run=server, and an Update operation
// (kubectl scale) recorded beside the applies.
func TestKubectlServerSideApply(t *testing.T) {
	forEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		k := newKubectl(t, env)
		ns := env.Namespace
		deploy := func(image string, replicas string) string {
			return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: ` + ns + `
spec:
  replicas: ` + replicas + `
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: ` + image + "\n"
		}
		if out := k.run(deploy("nginx:1.27", "2"), "apply", "--server-side", "-f", "-"); !strings.Contains(out, "deployment.apps/web serverside-applied") {
			t.Fatalf("apply: %s", out)
		}
		// Another manager changing the image: a conflict naming kubectl's field.
		out, err := k.try(deploy("nginx:1.28", "2"), "apply", "--server-side", "--field-manager=ci", "-f", "-")
		if err == nil || !strings.Contains(out, `conflict with "kubectl"`) || !strings.Contains(out, `.spec.template.spec.containers[name="web"].image`) {
			t.Fatalf("conflicting apply: %v %s", err, out)
		}
		// What the forced apply would change, then the change.
		out, err = k.try(deploy("nginx:1.28", "2"), "diff", "--server-side", "--force-conflicts", "--field-manager=ci", "-f", "-")
		if err == nil || !regexp.MustCompile(`(?m)^-\s+- image: nginx:1\.27$`).MatchString(out) || !regexp.MustCompile(`(?m)^\+\s+- image: nginx:1\.28$`).MatchString(out) {
			t.Fatalf("diff: %v %s", err, out) // kubectl diff exits 1 when there are differences
		}
		if out := k.run(deploy("nginx:1.28", "2"), "apply", "--server-side", "--dry-run=server", "--force-conflicts", "--field-manager=ci", "-f", "-"); !strings.Contains(out, "serverside-applied (server dry run)") {
			t.Fatalf("dry run: %s", out)
		}
		if out := k.run("", "get", "deploy", "web", "-n", ns, "-o", "jsonpath={.spec.template.spec.containers[0].image}"); out != "nginx:1.27" {
			t.Fatalf("after a dry run: image %s", out)
		}
		k.run(deploy("nginx:1.28", "2"), "apply", "--server-side", "--force-conflicts", "--field-manager=ci", "-f", "-")
		k.run("", "scale", "deploy", "web", "-n", ns, "--replicas=3")
		out = k.run("", "get", "deploy", "web", "-n", ns, "-o", "yaml", "--show-managed-fields")
		for _, want := range []string{"manager: kubectl\n    operation: Apply", "manager: ci\n    operation: Apply", "operation: Update\n    subresource: scale", "image: nginx:1.28", "replicas: 3"} {
			if !strings.Contains(out, want) {
				t.Errorf("get --show-managed-fields lacks %q:\n%s", want, out)
			}
		}
		if out := k.run("", "get", "deploy", "web", "-n", ns, "-o", "yaml"); strings.Contains(out, "managedFields") {
			t.Errorf("get without --show-managed-fields shows them:\n%s", out)
		}
	})
}
