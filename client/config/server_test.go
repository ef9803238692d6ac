package config_test

import (
	"context"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/client/config"
)

// whoami asks the server who cfg authenticates as.
func whoami(t *testing.T, e *apiservertest.Env, cfg *rest.Config) string {
	t.Helper()
	// The real server outlives the test: dial through the Env, which closes
	// the connections when the test ends (goleak).
	cfg.Dial = e.Config().Dial
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SelfSubjectReview with the loaded config (%s): %v", cfg.Host, err)
	}
	return r.Status.UserInfo.Username
}

// TestLoadTalksToServer: the configuration loaded from a kubeconfig (by
// --kubeconfig, by $KUBECONFIG with a context) and from a pod's
// service-account directory authenticates to the server as the identity
// it names.
func TestLoadTalksToServer(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, e *apiservertest.Env) {
		const user = "alice"
		kc := e.KubeconfigFor(e.ConfigFor(apiservertest.UserInfo{Name: user}))
		other := filepath.Join(t.TempDir(), "other")
		writeKubeconfig(t, other, kubeconfig{
			clusters: map[string]string{"elsewhere": "https://127.0.0.1:1"},
			users:    map[string]string{"nobody": "x"},
			contexts: map[string][2]string{"other": {"elsewhere", "nobody"}},
			current:  "other",
		})

		sa := e.ServiceAccountConfig(e.Namespace, "operator")
		u, err := url.Parse(sa.Host)
		if err != nil {
			t.Fatal(err)
		}
		saDir := writeServiceAccount(t, filepath.Join(t.TempDir(), "serviceaccount"), sa.BearerToken, sa.CAData)
		pod := map[string]string{"KUBERNETES_SERVICE_HOST": u.Hostname(), "KUBERNETES_SERVICE_PORT": u.Port()}
		nowhere := filepath.Join(t.TempDir(), "nowhere")

		for _, tc := range []struct {
			name string
			opts config.Options
			want string
		}{
			{"--kubeconfig", config.Options{Kubeconfig: kc, LookupEnv: env(pod)}, user},
			{"$KUBECONFIG merged, first file's context", config.Options{LookupEnv: env(map[string]string{"KUBECONFIG": list(kc, other)})}, user},
			{"$KUBECONFIG merged, --context of the second file", config.Options{Context: "kloop", LookupEnv: env(map[string]string{"KUBECONFIG": list(other, kc)})}, user},
			{"in-cluster", config.Options{LookupEnv: env(pod), ServiceAccountDir: saDir, HomeDir: nowhere}, "system:serviceaccount:" + e.Namespace + ":operator"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				cfg, err := config.Load(tc.opts)
				if err != nil {
					t.Fatal(err)
				}
				if got := whoami(t, e, cfg); got != tc.want {
					t.Errorf("authenticated as %q, want %q", got, tc.want)
				}
			})
		}
	})
}
