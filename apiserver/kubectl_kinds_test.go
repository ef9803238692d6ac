package apiserver_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"kloop.dev/kloop/apiserver/apiservertest"
)

const kubectlStatefulSet = `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"db"},
 "spec":{"serviceName":"db","selector":{"matchLabels":{"app":"db"}},
  "template":{"metadata":{"labels":{"app":"db"}},"spec":{"containers":[{"name":"c","image":"postgres:17"}]}}}}`

// TestKubectlKinds runs kubectl over the kinds of the table of built-in
// kinds (apiserver/kinds.go) on both servers and compares the output:
// create job, cronjob and deployment, scale a StatefulSet, rollout
// history, get with kube's printer columns (and -o wide), describe, and
// the api-resources lines of these kinds.
func TestKubectlKinds(t *testing.T) {
	targets := apiservertest.Targets()
	outputs := map[apiservertest.Target]string{}
	for _, target := range targets {
		env := startTarget(t, target, apiservertest.Options{})
		k := newKubectl(t, env)
		normalize := strings.NewReplacer(env.Namespace, "NAMESPACE")
		var all strings.Builder
		for _, c := range []struct {
			stdin string
			args  []string
		}{
			{"", []string{"create", "job", "j", "--image=busybox:1.36", "--", "true"}},
			{"", []string{"get", "jobs"}},
			{"", []string{"get", "jobs", "-o", "wide"}},
			{"", []string{"get", "job", "j", "-o", "jsonpath={.spec.completions}/{.spec.backoffLimit}/{.spec.template.spec.restartPolicy}/{.metadata.labels.batch\\.kubernetes\\.io/job-name}"}},
			{"", []string{"create", "cronjob", "cj", "--image=busybox:1.36", "--schedule=*/5 * * * *", "--", "date"}},
			{"", []string{"get", "cronjobs", "-o", "wide"}},
			{"", []string{"create", "job", "from-cj", "--from=cronjob/cj"}},
			{"", []string{"get", "job", "from-cj", "-o", "jsonpath={.metadata.ownerReferences[0].kind}/{.metadata.annotations}"}},
			{"", []string{"create", "deployment", "web", "--image=nginx:1.27", "--replicas=2"}},
			{"", []string{"rollout", "history", "deployment", "web"}},
			{kubectlStatefulSet, []string{"create", "-f", "-"}},
			{"", []string{"scale", "statefulset", "db", "--replicas=3"}},
			{"", []string{"get", "statefulsets", "-o", "wide"}},
			{"", []string{"get", "sts", "db", "-o", "jsonpath={.spec.replicas}/{.spec.podManagementPolicy}/{.spec.updateStrategy.type}"}},
			{"", []string{"rollout", "history", "statefulset", "db"}},
			{"", []string{"create", "poddisruptionbudget", "pdb", "--selector=app=db", "--min-available=1"}},
			{"", []string{"get", "pdb"}},
			{"", []string{"create", "ingress", "ing", "--rule=a.example.com/=web:80"}},
			{"", []string{"get", "ingress"}},
			{"", []string{"autoscale", "deployment", "web", "--min=2", "--max=5", "--cpu-percent=70"}},
			{"", []string{"get", "hpa"}},
			{"", []string{"create", "quota", "q", "--hard=pods=10,configmaps=5"}},
			{"", []string{"get", "quota"}},
			{`{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}`, []string{"create", "-f", "-"}},
			{"", []string{"get", "pvc", "-o", "wide"}},
			{"", []string{"get", "all"}},
			{"", []string{"describe", "job", "j"}},
			{"", []string{"describe", "cronjob", "cj"}},
			{"", []string{"describe", "statefulset", "db"}},
			{"", []string{"describe", "hpa", "web"}},
			{"", []string{"delete", "job", "j", "--cascade=background"}},
			{"", []string{"get", "jobs"}},
		} {
			out := k.run(c.stdin, c.args...)
			if !strings.HasSuffix(out, "\n") { // jsonpath
				out += "\n"
			}
			fmt.Fprintf(&all, "$ kubectl %s\n%s", strings.Join(c.args, " "), normalizeKubectl(normalize.Replace(out)))
		}
		// api-resources: the lines of the table's kinds (the real server
		// serves more).
		kinds := []string{"statefulsets", "daemonsets", "controllerrevisions", "jobs", "cronjobs", "nodes", "persistentvolumes", "persistentvolumeclaims",
			"endpoints", "resourcequotas", "limitranges", "replicationcontrollers", "endpointslices", "ingresses", "ingressclasses", "networkpolicies",
			"poddisruptionbudgets", "storageclasses", "horizontalpodautoscalers", "validatingwebhookconfigurations", "mutatingwebhookconfigurations",
			"certificatesigningrequests"}
		var lines []string
		for _, l := range strings.Split(k.run("", "api-resources"), "\n") {
			if f := strings.Fields(l); len(f) > 0 && slices.Contains(kinds, f[0]) {
				lines = append(lines, strings.Join(f, " "))
			}
		}
		if len(lines) != len(kinds) {
			t.Errorf("%s: api-resources lists %d of the %d kinds:\n%s", target, len(lines), len(kinds), strings.Join(lines, "\n"))
		}
		fmt.Fprintf(&all, "$ kubectl api-resources\n%s\n", strings.Join(lines, "\n"))
		outputs[target] = all.String()
		if target == apiservertest.Embedded {
			checkKubectlKinds(t, outputs[target])
		}
	}
	embedded, real := outputs[apiservertest.Embedded], outputs[apiservertest.RealServer]
	if real == "" || embedded == "" {
		return
	}
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

// checkKubectlKinds checks the embedded server's output on its own (the
// comparison with the real server needs its binaries).
func checkKubectlKinds(t *testing.T, out string) {
	t.Helper()
	for _, re := range []string{
		`(?m)^NAME\s+STATUS\s+COMPLETIONS\s+DURATION\s+AGE\nj\s+Running\s+0/1\s+AGE\n`,
		`(?m)^j\s+Running\s+0/1\s+AGE\s+j\s+busybox:1.36\s+batch.kubernetes.io/controller-uid=UID$`,
		`(?m)^1/6/Never/j$`,
		`(?m)^cj\s+\*/5 \* \* \* \*\s+<none>\s+False\s+0\s+<none>\s+AGE\s+cj\s+busybox:1.36\s+<none>$`,
		`(?m)^CronJob/\{"cronjob.kubernetes.io/instantiate":"manual"\}$`,
		`(?m)^deployment.apps/web \nNo rollout history found.$`,
		`(?m)^statefulset.apps/db scaled$`,
		`(?m)^db\s+0/3\s+AGE\s+c\s+postgres:17$`,
		`(?m)^3/OrderedReady/RollingUpdate$`,
		`(?m)^pdb\s+1\s+N/A\s+0\s+AGE$`,
		`(?m)^ing\s+<none>\s+a.example.com\s+80\s+AGE$`,
		`(?m)^web\s+Deployment/web\s+cpu: <unknown>/70%\s+2\s+5\s+0\s+AGE$`,
		`(?m)^data\s+Pending\s+<unset>\s+AGE\s+Filesystem$`,
		`(?m)^statefulsets sts apps/v1 true StatefulSet$`,
		`(?m)^horizontalpodautoscalers hpa autoscaling/v2 true HorizontalPodAutoscaler$`,
		`(?m)^certificatesigningrequests csr certificates.k8s.io/v1 false CertificateSigningRequest$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("embedded kubectl output does not match %s:\n%s", re, out)
		}
	}
}
