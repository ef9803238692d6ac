package config_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"kloop.dev/kloop/client/config"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// kubeconfig is a kubeconfig file's content: clusters by name (their
// servers), users by name (their tokens), contexts by name (cluster,
// user), and the current context.
type kubeconfig struct {
	clusters map[string]string
	users    map[string]string
	contexts map[string][2]string
	current  string
}

func writeKubeconfig(t *testing.T, path string, k kubeconfig) string {
	t.Helper()
	c := clientcmdapi.NewConfig()
	for name, server := range k.clusters {
		c.Clusters[name] = &clientcmdapi.Cluster{Server: server}
	}
	for name, token := range k.users {
		c.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
	}
	for name, cu := range k.contexts {
		c.Contexts[name] = &clientcmdapi.Context{Cluster: cu[0], AuthInfo: cu[1]}
	}
	c.CurrentContext = k.current
	if err := clientcmd.WriteToFile(*c, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeServiceAccount writes a fake pod's service-account directory: a
// token and a CA certificate.
func writeServiceAccount(t *testing.T, dir, token string, caPEM []byte) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if caPEM != nil {
		if err := os.WriteFile(filepath.Join(dir, "ca.crt"), caPEM, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func selfSignedPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubernetes-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// fixture is a machine with every place Load looks at filled: two
// kubeconfig files for $KUBECONFIG, a home kubeconfig, a service-account
// directory.
type fixture struct {
	flagFile, a, b, missing, bad, empty, home, sa string
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	dir := t.TempDir()
	f := fixture{missing: filepath.Join(dir, "missing"), home: filepath.Join(dir, "home")}
	f.flagFile = writeKubeconfig(t, filepath.Join(dir, "flag"), kubeconfig{
		clusters: map[string]string{"c": "https://flag.example", "alt": "https://flag-alt.example"},
		users:    map[string]string{"u": "flag-token"},
		contexts: map[string][2]string{"flag": {"c", "u"}, "flag-alt": {"alt", "u"}},
		current:  "flag",
	})
	// a and b both define the cluster "shared" and the context "both":
	// merged, a's win; b alone defines the user "u-b" and the contexts "b"
	// and "b-own".
	f.a = writeKubeconfig(t, filepath.Join(dir, "a"), kubeconfig{
		clusters: map[string]string{"shared": "https://a.example"},
		users:    map[string]string{"u-a": "a-token"},
		contexts: map[string][2]string{"a": {"shared", "u-a"}, "both": {"shared", "u-a"}},
		current:  "a",
	})
	f.b = writeKubeconfig(t, filepath.Join(dir, "b"), kubeconfig{
		clusters: map[string]string{"shared": "https://b.example", "b-only": "https://b-only.example"},
		users:    map[string]string{"u-b": "b-token"},
		contexts: map[string][2]string{"b": {"shared", "u-b"}, "b-own": {"b-only", "u-b"}, "both": {"b-only", "u-b"}},
		current:  "b",
	})
	if err := os.MkdirAll(filepath.Join(f.home, ".kube"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeKubeconfig(t, filepath.Join(f.home, ".kube", "config"), kubeconfig{
		clusters: map[string]string{"home": "https://home.example"},
		users:    map[string]string{"me": "home-token"},
		contexts: map[string][2]string{"home": {"home", "me"}},
		current:  "home",
	})
	f.bad = filepath.Join(dir, "bad")
	if err := os.WriteFile(f.bad, []byte("clusters: [this is: not: a kubeconfig"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.empty = filepath.Join(dir, "empty")
	if err := os.WriteFile(f.empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f.sa = writeServiceAccount(t, filepath.Join(dir, "sa"), "sa-token", selfSignedPEM(t))
	return f
}

var inPod = map[string]string{"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}

func with(m map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

func list(files ...string) string { return strings.Join(files, string(filepath.ListSeparator)) }

// TestLoadPrecedence: --kubeconfig, then $KUBECONFIG (merged, first file
// wins per name), then in-cluster, then ~/.kube/config, and --context.
func TestLoadPrecedence(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name       string
		kubeconfig string // Options.Kubeconfig
		context    string
		env        map[string]string
		noHome     bool
		wantHost   string
		wantToken  string
	}{
		{name: "flag wins over everything", kubeconfig: f.flagFile, env: with(inPod, "KUBECONFIG", list(f.a, f.b)), wantHost: "https://flag.example", wantToken: "flag-token"},
		{name: "flag with context", kubeconfig: f.flagFile, context: "flag-alt", env: with(inPod, "KUBECONFIG", f.a), wantHost: "https://flag-alt.example", wantToken: "flag-token"},
		{name: "KUBECONFIG wins over in-cluster and home", env: with(inPod, "KUBECONFIG", f.b), wantHost: "https://b.example", wantToken: "b-token"},
		{name: "KUBECONFIG list: current-context of the first file", env: map[string]string{"KUBECONFIG": list(f.a, f.b)}, wantHost: "https://a.example", wantToken: "a-token"},
		{name: "KUBECONFIG list reversed", env: map[string]string{"KUBECONFIG": list(f.b, f.a)}, wantHost: "https://b.example", wantToken: "b-token"},
		{name: "KUBECONFIG list: a context of the second file, a cluster of the first", context: "b", env: map[string]string{"KUBECONFIG": list(f.a, f.b)}, wantHost: "https://a.example", wantToken: "b-token"},
		{name: "KUBECONFIG list: a context only the second file has", context: "b-own", env: map[string]string{"KUBECONFIG": list(f.a, f.b)}, wantHost: "https://b-only.example", wantToken: "b-token"},
		{name: "KUBECONFIG list: the first file's context of a shared name", context: "both", env: map[string]string{"KUBECONFIG": list(f.a, f.b)}, wantHost: "https://a.example", wantToken: "a-token"},
		{name: "KUBECONFIG list: missing files skipped", env: map[string]string{"KUBECONFIG": list(f.missing, "", f.b)}, wantHost: "https://b.example", wantToken: "b-token"},
		{name: "KUBECONFIG of missing files: in-cluster", env: with(inPod, "KUBECONFIG", f.missing), wantHost: "https://10.0.0.1:443", wantToken: "sa-token"},
		{name: "KUBECONFIG set: home not read", env: map[string]string{"KUBECONFIG": list(f.a)}, wantHost: "https://a.example", wantToken: "a-token"},
		{name: "empty KUBECONFIG is unset", env: with(inPod, "KUBECONFIG", ""), wantHost: "https://10.0.0.1:443", wantToken: "sa-token"},
		{name: "in-cluster wins over home", env: inPod, wantHost: "https://10.0.0.1:443", wantToken: "sa-token"},
		{name: "in-cluster ignores context", context: "home", env: inPod, wantHost: "https://10.0.0.1:443", wantToken: "sa-token"},
		{name: "in-cluster IPv6", env: map[string]string{"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "6443"}, wantHost: "https://[fd00::1]:6443", wantToken: "sa-token"},
		{name: "home", env: map[string]string{}, wantHost: "https://home.example", wantToken: "home-token"},
		{name: "home from $HOME", env: map[string]string{"HOME": f.home}, noHome: true, wantHost: "https://home.example", wantToken: "home-token"},
		{name: "home without KUBERNETES_SERVICE_PORT", env: map[string]string{"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, wantHost: "https://home.example", wantToken: "home-token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := config.Options{Kubeconfig: tc.kubeconfig, Context: tc.context, LookupEnv: env(tc.env), HomeDir: f.home, ServiceAccountDir: f.sa}
			if tc.noHome {
				opts.HomeDir = ""
			}
			cfg, err := config.Load(opts)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Host != tc.wantHost || cfg.BearerToken != tc.wantToken {
				t.Errorf("host %q token %q, want %q %q", cfg.Host, cfg.BearerToken, tc.wantHost, tc.wantToken)
			}
			if cfg.QPS != -1 {
				t.Errorf("QPS %v, want -1 (no client-side limit)", cfg.QPS)
			}
			if tc.wantToken == "sa-token" {
				if want := filepath.Join(f.sa, "token"); cfg.BearerTokenFile != want {
					t.Errorf("BearerTokenFile %q, want %q (re-read on rotation)", cfg.BearerTokenFile, want)
				}
				if want := filepath.Join(f.sa, "ca.crt"); cfg.CAFile != want {
					t.Errorf("CAFile %q, want %q", cfg.CAFile, want)
				}
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	f := newFixture(t)
	noCA := writeServiceAccount(t, filepath.Join(t.TempDir(), "sa"), "t", nil)
	badCA := writeServiceAccount(t, filepath.Join(t.TempDir(), "sa"), "t", []byte("not a certificate"))
	nowhere := filepath.Join(t.TempDir(), "nowhere")
	for _, tc := range []struct {
		name       string
		kubeconfig string
		context    string
		env        map[string]string
		home, sa   string
		notFound   bool
		want       []string // in the error's text
	}{
		{name: "nothing anywhere", env: map[string]string{}, home: nowhere, sa: nowhere, notFound: true,
			want: []string{"--kubeconfig: not set", "$KUBECONFIG: not set", "in-cluster: $KUBERNETES_SERVICE_HOST and $KUBERNETES_SERVICE_PORT not set", filepath.Join(nowhere, ".kube", "config") + ": no such file", "Pass --kubeconfig"}},
		{name: "KUBECONFIG of missing files", env: map[string]string{"KUBECONFIG": list(f.missing, f.missing+"2")}, home: f.home, sa: nowhere, notFound: true,
			want: []string{"$KUBECONFIG=" + list(f.missing, f.missing+"2") + ": none of its files exists", "in-cluster: $KUBERNETES_SERVICE_HOST"}},
		{name: "in a pod without a token", env: inPod, home: nowhere, sa: nowhere, notFound: true,
			want: []string{"in-cluster: no service-account token " + filepath.Join(nowhere, "token")}},
		{name: "empty kubeconfig file", env: map[string]string{"KUBECONFIG": f.empty}, home: f.home, sa: f.sa, notFound: true,
			want: []string{f.empty + ": its files hold no cluster"}},
		{name: "flag file missing", kubeconfig: f.missing, env: map[string]string{"KUBECONFIG": f.a}, home: f.home, sa: f.sa,
			want: []string{"kubeconfig " + f.missing + " (--kubeconfig)", "no such file"}},
		{name: "flag file does not parse", kubeconfig: f.bad, env: map[string]string{}, home: f.home, sa: f.sa,
			want: []string{"kubeconfig " + f.bad + " (--kubeconfig)"}},
		{name: "KUBECONFIG file does not parse", env: map[string]string{"KUBECONFIG": list(f.a, f.bad)}, home: f.home, sa: f.sa,
			want: []string{"kubeconfig " + list(f.a, f.bad) + " ($KUBECONFIG)"}},
		{name: "unknown context", context: "nope", env: map[string]string{"KUBECONFIG": list(f.a, f.b)}, home: f.home, sa: f.sa,
			want: []string{`context "nope" not found in kubeconfig ` + list(f.a, f.b), "kubectl config get-contexts"}},
		{name: "unknown context at home", context: "nope", env: map[string]string{}, home: f.home, sa: nowhere,
			want: []string{`context "nope" not found in kubeconfig ` + filepath.Join(f.home, ".kube", "config")}},
		{name: "in-cluster without CA", env: inPod, home: f.home, sa: noCA,
			want: []string{"in-cluster CA", filepath.Join(noCA, "ca.crt")}},
		{name: "in-cluster CA not PEM", env: inPod, home: f.home, sa: badCA,
			want: []string{"in-cluster CA " + filepath.Join(badCA, "ca.crt") + " holds no PEM certificate"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Load(config.Options{Kubeconfig: tc.kubeconfig, Context: tc.context, LookupEnv: env(tc.env), HomeDir: tc.home, ServiceAccountDir: tc.sa})
			if err == nil {
				t.Fatalf("loaded %s, want an error", cfg.Host)
			}
			if got := errors.Is(err, config.ErrNotFound); got != tc.notFound {
				t.Errorf("errors.Is(err, ErrNotFound) = %v, want %v: %v", got, tc.notFound, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestRegisterFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want config.Options
	}{
		{nil, config.Options{}},
		{[]string{"--kubeconfig", "/etc/k/config"}, config.Options{Kubeconfig: "/etc/k/config"}},
		{[]string{"-context=staging", "-kubeconfig=k"}, config.Options{Kubeconfig: "k", Context: "staging"}},
	} {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		flags := config.RegisterFlags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if got := flags.Options(); got.Kubeconfig != tc.want.Kubeconfig || got.Context != tc.want.Context {
			t.Errorf("%q: Options %+v, want %+v", tc.args, got, tc.want)
		}
	}
}
