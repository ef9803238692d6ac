package config

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// ErrNotFound is wrapped by Load's error when no place holds a
// configuration; the error lists the places tried.
var ErrNotFound = errors.New("no Kubernetes configuration found")

// DefaultServiceAccountDir is where the kubelet mounts a pod's
// service-account token, CA and namespace.
const DefaultServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// Options say where Load looks. The zero value looks where kubectl and
// controller-runtime look, in the process's environment.
type Options struct {
	// Kubeconfig is the path of a kubeconfig file (--kubeconfig). When set,
	// that file alone is read and must exist: $KUBECONFIG, the in-cluster
	// configuration and ~/.kube/config are not consulted. Default: "".
	Kubeconfig string

	// Context is the name of the kubeconfig context to use (--context).
	// Default: the kubeconfig's current-context. The in-cluster
	// configuration has no contexts and ignores it.
	Context string

	// LookupEnv reads the environment ($KUBECONFIG, $HOME,
	// $KUBERNETES_SERVICE_HOST, $KUBERNETES_SERVICE_PORT). Default:
	// os.LookupEnv.
	LookupEnv func(key string) (string, bool)

	// HomeDir is the directory whose .kube/config is read last. Default:
	// $HOME (%USERPROFILE% on Windows) from LookupEnv, else the current
	// user's home directory from the OS's user database.
	HomeDir string

	// ServiceAccountDir holds the in-cluster token and ca.crt. Default:
	// DefaultServiceAccountDir.
	ServiceAccountDir string
}

func (o *Options) defaults() {
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	if o.ServiceAccountDir == "" {
		o.ServiceAccountDir = DefaultServiceAccountDir
	}
}

// home returns the home directory, or "" and why there is none.
func (o *Options) home() (string, string) {
	if o.HomeDir != "" {
		return o.HomeDir, ""
	}
	key := "HOME"
	if runtime.GOOS == "windows" {
		key = "USERPROFILE"
	}
	if h, ok := o.LookupEnv(key); ok && h != "" {
		return h, ""
	}
	u, err := user.Current()
	if err != nil {
		return "", fmt.Sprintf("home directory: $%s not set and %v", key, err)
	}
	if u.HomeDir == "" {
		return "", fmt.Sprintf("home directory: $%s not set and user %s has none", key, u.Username)
	}
	return u.HomeDir, ""
}

// Load returns the client configuration of the first place that holds one,
// in the order of the package documentation: Options.Kubeconfig, then
// $KUBECONFIG, then in-cluster, then ~/.kube/config. The configuration gets
// QPS -1 (no client-side rate limit) unless the kubeconfig set one.
func Load(opts Options) (*rest.Config, error) {
	opts.defaults()
	cfg, err := load(opts)
	if err != nil {
		return nil, err
	}
	if cfg.QPS == 0 {
		cfg.QPS = -1
	}
	return cfg, nil
}

func load(opts Options) (*rest.Config, error) {
	var tried []string
	if opts.Kubeconfig != "" {
		if _, err := os.Stat(opts.Kubeconfig); err != nil {
			return nil, fmt.Errorf("config: kubeconfig %s (--kubeconfig): %w; pass the path of an existing kubeconfig file", opts.Kubeconfig, err)
		}
		cfg, ok, err := fromFiles(opts, []string{opts.Kubeconfig}, "--kubeconfig")
		if err != nil || ok {
			return cfg, err
		}
		tried = append(tried, fmt.Sprintf("--kubeconfig %s: it holds no cluster", opts.Kubeconfig))
	} else {
		tried = append(tried, "--kubeconfig: not set")
	}

	inClusterTried := false
	if opts.Kubeconfig == "" {
		if env, _ := opts.LookupEnv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
			files := splitList(env)
			cfg, ok, err := fromFiles(opts, files, "$KUBECONFIG")
			if err != nil || ok {
				return cfg, err
			}
			tried = append(tried, fmt.Sprintf("$KUBECONFIG=%s: %s", env, absent(files)))
		} else {
			tried = append(tried, "$KUBECONFIG: not set")
			inClusterTried = true
			cfg, why, err := inCluster(opts)
			if err != nil || cfg != nil {
				return cfg, err
			}
			tried = append(tried, "in-cluster: "+why)
			home, why := opts.home()
			if home == "" {
				tried = append(tried, "~/.kube/config: "+why)
			} else {
				file := filepath.Join(home, clientcmd.RecommendedHomeDir, clientcmd.RecommendedFileName)
				cfg, ok, err := fromFiles(opts, []string{file}, "")
				if err != nil || ok {
					return cfg, err
				}
				tried = append(tried, fmt.Sprintf("%s: %s", file, absent([]string{file})))
			}
		}
	}

	// As clientcmd's deferred loading: kubeconfig files that hold nothing
	// fall back to the in-cluster configuration.
	if !inClusterTried {
		cfg, why, err := inCluster(opts)
		if err != nil || cfg != nil {
			return cfg, err
		}
		tried = append(tried, "in-cluster: "+why)
	}
	return nil, fmt.Errorf("config: %w; tried %s. Pass --kubeconfig FILE, set $KUBECONFIG, write ~/.kube/config (kubectl config set-cluster …), or run in a pod with a service account",
		ErrNotFound, strings.Join(tried, "; "))
}

// splitList splits a $KUBECONFIG list, dropping empty entries and
// repeats, as clientcmd does.
func splitList(env string) []string {
	var out []string
	seen := map[string]bool{}
	for _, f := range filepath.SplitList(env) {
		if f != "" && !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	return out
}

// absent says why files yielded no configuration: none exists, or those
// that exist hold no cluster.
func absent(files []string) string {
	for _, f := range files {
		if _, err := os.Stat(f); err == nil {
			return "its files hold no cluster"
		}
	}
	if len(files) == 1 {
		return "no such file"
	}
	return "none of its files exists"
}

// fromFiles loads and merges the kubeconfig files with clientcmd (missing
// ones are skipped; the first file to set a name wins) and returns the
// configuration of the chosen context; ok is false when the files hold no
// configuration at all. source names the files' origin in errors.
func fromFiles(opts Options, files []string, source string) (cfg *rest.Config, ok bool, err error) {
	rules := &clientcmd.ClientConfigLoadingRules{Precedence: files}
	name := strings.Join(files, string(filepath.ListSeparator))
	if source != "" {
		name += " (" + source + ")"
	}
	if source == "--kubeconfig" {
		rules = &clientcmd.ClientConfigLoadingRules{ExplicitPath: files[0]}
	}
	merged, err := rules.Load()
	if err != nil {
		return nil, false, fmt.Errorf("config: kubeconfig %s: %w", name, err)
	}
	if len(merged.Clusters) == 0 && len(merged.Contexts) == 0 && len(merged.AuthInfos) == 0 {
		return nil, false, nil
	}
	if opts.Context != "" {
		if _, exists := merged.Contexts[opts.Context]; !exists {
			return nil, false, fmt.Errorf("config: context %q not found in kubeconfig %s; `kubectl config get-contexts` lists its contexts", opts.Context, name)
		}
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: opts.Context}
	cfg, err = clientcmd.NewNonInteractiveClientConfig(*merged, opts.Context, overrides, rules).ClientConfig()
	if err != nil {
		ctx := opts.Context
		if ctx == "" {
			ctx = merged.CurrentContext
		}
		if ctx == "" {
			return nil, false, fmt.Errorf("config: kubeconfig %s: %w; set its current-context or pass --context", name, err)
		}
		return nil, false, fmt.Errorf("config: kubeconfig %s, context %q: %w", name, ctx, err)
	}
	return cfg, true, nil
}

// inCluster returns the in-cluster configuration, nil and why there is
// none (not in a pod), or an error when the pod's files are broken.
func inCluster(opts Options) (*rest.Config, string, error) {
	host, _ := opts.LookupEnv("KUBERNETES_SERVICE_HOST")
	port, _ := opts.LookupEnv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return nil, "$KUBERNETES_SERVICE_HOST and $KUBERNETES_SERVICE_PORT not set", nil
	}
	tokenFile := filepath.Join(opts.ServiceAccountDir, "token")
	token, err := os.ReadFile(tokenFile)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Sprintf("no service-account token %s", tokenFile), nil
		}
		return nil, "", fmt.Errorf("config: in-cluster service-account token: %w", err)
	}
	caFile := filepath.Join(opts.ServiceAccountDir, "ca.crt")
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return nil, "", fmt.Errorf("config: in-cluster CA: %w; the pod's service-account volume should hold it", err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(ca) {
		return nil, "", fmt.Errorf("config: in-cluster CA %s holds no PEM certificate", caFile)
	}
	return &rest.Config{
		Host:            "https://" + net.JoinHostPort(host, port),
		BearerToken:     strings.TrimSpace(string(token)),
		BearerTokenFile: tokenFile,
		TLSClientConfig: rest.TLSClientConfig{CAFile: caFile},
	}, "", nil
}
