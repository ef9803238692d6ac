package apiserver_test

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"kloop.dev/kloop/apiserver/apiservertest"
)

// TestKubectlAuth runs kubectl's RBAC commands on both servers: kubectl
// create role and rolebinding, kubectl auth can-i (with --as and --list),
// kubectl auth whoami (with --as), and kubectl as the user itself.
func TestKubectlAuth(t *testing.T) {
	forEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		k := newKubectl(t, env)
		ns := env.Namespace
		if out := k.run("", "create", "role", "pod-reader", "--verb=get,list,watch", "--resource=pods,pods/log", "-n", ns); !strings.Contains(out, "role.rbac.authorization.k8s.io/pod-reader created") {
			t.Fatalf("create role: %s", out)
		}
		if out := k.run("", "create", "rolebinding", "pod-reader", "--role=pod-reader", "--user=alice", "--serviceaccount="+ns+":operator", "-n", ns); !strings.Contains(out, "rolebinding.rbac.authorization.k8s.io/pod-reader created") {
			t.Fatalf("create rolebinding: %s", out)
		}
		// An operator's RBAC manifests, applied and applied again.
		manifests := strings.NewReplacer("{ns}", ns).Replace(operatorRBAC)
		if out := k.run(manifests, "apply", "-f", "-"); !strings.Contains(out, "clusterrole.rbac.authorization.k8s.io/"+ns+"-operator created") || !strings.Contains(out, "clusterrolebinding.rbac.authorization.k8s.io/"+ns+"-operator created") {
			t.Fatalf("apply RBAC manifests: %s", out)
		}
		t.Cleanup(func() { _, _ = k.try("", "delete", "clusterrole,clusterrolebinding", ns+"-operator") })
		if out := k.run(strings.Replace(manifests, "verbs: [get, list, watch]", "verbs: [get, list, watch, update]", 1), "apply", "-f", "-"); !strings.Contains(out, "clusterrole.rbac.authorization.k8s.io/"+ns+"-operator configured") || !strings.Contains(out, "clusterrolebinding.rbac.authorization.k8s.io/"+ns+"-operator unchanged") {
			t.Fatalf("apply RBAC manifests again: %s", out)
		}
		if out := k.run("", "get", "rolebinding", "pod-reader", "-n", ns, "-o", "wide"); !regexp.MustCompile(`(?m)^pod-reader\s+Role/pod-reader\s+\S+\s+alice\s+` + regexp.QuoteMeta(ns) + `/operator$`).MatchString(out) {
			t.Fatalf("get rolebinding -o wide:\n%s", out)
		}

		// kubectl auth can-i exits 1 for "no".
		canI := func(want string, args ...string) {
			t.Helper()
			deadline := time.Now().Add(30 * time.Second) // kube-apiserver's RBAC follows its informers
			for {
				out, _ := k.try("", append([]string{"auth", "can-i"}, args...)...)
				if strings.TrimSpace(out) == want || time.Now().After(deadline) {
					if strings.TrimSpace(out) != want {
						t.Fatalf("kubectl auth can-i %s: %q, want %q", strings.Join(args, " "), out, want)
					}
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
		canI("yes", "list", "pods", "-n", ns, "--as=alice")
		canI("yes", "get", "pods", "--subresource=log", "-n", ns, "--as=alice")
		canI("no", "create", "pods", "-n", ns, "--as=alice")
		canI("no", "list", "pods", "-n", "default", "--as=alice")
		canI("yes", "watch", "pods", "-n", ns, "--as=system:serviceaccount:"+ns+":operator")
		canI("no", "list", "secrets", "-n", ns, "--as=system:serviceaccount:"+ns+":operator")
		canI("yes", "create", "pods", "-n", ns)
		canI("yes", "update", "configmaps", "-n", "default", "--as=system:serviceaccount:"+ns+":operator")
		canI("no", "delete", "configmaps", "-n", "default", "--as=system:serviceaccount:"+ns+":operator")

		out := k.run("", "auth", "can-i", "--list", "-n", ns, "--as=alice")
		for _, want := range []string{`(?m)^pods\s+\[\]\s+\[\]\s+\[get list watch\]$`, `(?m)^pods/log\s+\[\]\s+\[\]\s+\[get list watch\]$`, `(?m)^selfsubjectaccessreviews.authorization.k8s.io\s+\[\]\s+\[\]\s+\[create\]$`, `(?m)^\s+\[/api/\*\]\s+\[\]\s+\[get\]$`} {
			if !regexp.MustCompile(want).MatchString(out) {
				t.Errorf("kubectl auth can-i --list misses %s:\n%s", want, out)
			}
		}

		out = k.run("", "auth", "whoami", "--as=alice", "--as-group=devs")
		if !regexp.MustCompile(`(?m)^Username\s+alice$`).MatchString(out) || !regexp.MustCompile(`(?m)^Groups\s+\[devs system:authenticated\]$`).MatchString(out) {
			t.Fatalf("kubectl auth whoami --as alice:\n%s", out)
		}
		out = k.run("", "auth", "whoami")
		if !regexp.MustCompile(`(?m)^Username\s+kloop-admin$`).MatchString(out) {
			t.Fatalf("kubectl auth whoami:\n%s", out)
		}

		// kubectl as alice herself.
		alice := newKubectl(t, env)
		alice.args = []string{"--kubeconfig", env.KubeconfigFor(env.ConfigFor(apiservertest.UserInfo{Name: "alice"})), "--cache-dir", filepath.Join(alice.home, "cache")}
		if out := alice.run("", "get", "pods", "-n", ns); !strings.Contains(out, "No resources found") {
			t.Fatalf("kubectl get pods as alice: %s", out)
		}
		if out, err := alice.try("", "get", "configmaps", "-n", ns); err == nil || !strings.Contains(out, `User "alice" cannot list resource "configmaps" in API group "" in the namespace "`+ns+`"`) {
			t.Fatalf("kubectl get configmaps as alice: %v %s", err, out)
		}
		if out, err := alice.try("", "create", "role", "more", "--verb=create", "--resource=pods", "-n", ns); err == nil || !strings.Contains(out, `cannot create resource "roles"`) {
			t.Fatalf("kubectl create role as alice: %v %s", err, out)
		}
		if out := alice.run("", "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"); out != "alice" {
			t.Fatalf("kubectl auth whoami as alice: %s", out)
		}
	})
}

// operatorRBAC is an operator's ClusterRole and its binding to the
// operator's ServiceAccount, as a manifest would have them.
const operatorRBAC = `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {ns}-operator
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list, watch]
- apiGroups: [example.com]
  resources: [widgets/status]
  verbs: [update, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {ns}-operator
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {ns}-operator
subjects:
- kind: ServiceAccount
  name: operator
  namespace: {ns}
`
