package apiservertest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// The real pair's versions; hack/realk8s.sh builds exactly these.
const (
	KubernetesVersion = "v1.37.2"
	EtcdVersion       = "v3.6.16"
)

// Environment variables read by the real-server helpers.
const (
	// EnvRealDir names the directory holding the kube-apiserver,
	// kube-controller-manager and etcd binaries (what hack/realk8s.sh
	// prints). Default
	// $HOME/.cache/kloop/realk8s-<k8s version>-etcd-<etcd version>.
	EnvRealDir = "KLOOP_REAL_K8S_DIR"
	// EnvRequireReal, when "1", makes a missing or broken real server fail
	// the tests that need it instead of skipping them (.ci/run sets it).
	EnvRequireReal = "KLOOP_REQUIRE_REAL_K8S"
	// EnvTargets restricts ForEachTarget to a comma-separated list of
	// targets ("embedded", "real"). Default: both.
	EnvTargets = "KLOOP_TEST_TARGETS"
)

// realServer is a kube-apiserver, its etcd and a kube-controller-manager
// running the controllers that make API semantics, shared by every test of
// one test binary. The processes run under supervisor shells that stop them
// (and remove their directory) when the test binary exits, however it
// exits: the supervisors read a pipe whose write end only this process holds.
type realServer struct {
	url   string // https://127.0.0.1:port
	token string // bearer token of a system:masters user
	// kcmToken is kube-controller-manager's bearer token (user
	// system:kube-controller-manager).
	kcmToken string
	caPEM    []byte // the serving certificate (self-signed)
	etcdURL  string // http://127.0.0.1:port, for compaction
	// clientCA signs the client certificates of Env.ConfigFor's users.
	clientCA *clientCA
	dir      string // the pair's files: certificates, logs, etcd data
	// keepAlive is the write end of the supervisors' pipe; it is never
	// closed, so the pair lives exactly as long as this process.
	keepAlive *os.File
}

// shared is the one real pair of this test binary, started on first use.
// It is process-wide on purpose: a kube-apiserver takes seconds to start,
// so every test of a binary shares one (each in its own namespace).
var shared struct {
	once sync.Once
	srv  *realServer
	err  error
}

// errMissing marks a real pair that is not built: tests skip (unless
// EnvRequireReal is set) rather than fail.
var errMissing = errors.New("real kube-apiserver not built")

// realDir returns the directory of the binaries.
func realDir() string {
	if d := os.Getenv(EnvRealDir); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return filepath.Join(home, ".cache", "kloop", "realk8s-"+KubernetesVersion+"-etcd-"+EtcdVersion)
}

// startShared starts the pair once per process and returns it.
func startShared() (*realServer, error) {
	shared.once.Do(func() {
		// Free ports are picked before the processes bind them, and other
		// test binaries start their own pairs at the same time: a lost
		// race is retried with new ports.
		for range 3 {
			shared.srv, shared.err = startReal(realDir())
			if shared.err == nil || errors.Is(shared.err, errMissing) {
				return
			}
		}
	})
	return shared.srv, shared.err
}

func startReal(bin string) (*realServer, error) {
	bins := realBinaries{apiserver: filepath.Join(bin, "kube-apiserver"), controllerManager: filepath.Join(bin, "kube-controller-manager"), etcd: filepath.Join(bin, "etcd")}
	for _, b := range []string{bins.apiserver, bins.controllerManager, bins.etcd} {
		if _, err := os.Stat(b); err != nil {
			return nil, fmt.Errorf("%w: %s is missing (run `bash hack/realk8s.sh` to build kube-apiserver and kube-controller-manager %s and etcd %s from the Go module proxy, or set %s)",
				errMissing, b, KubernetesVersion, EtcdVersion, EnvRealDir)
		}
	}
	dir, err := os.MkdirTemp("", "kloop-realk8s-")
	if err != nil {
		return nil, fmt.Errorf("real server: %w", err)
	}
	s := &realServer{dir: dir}
	if err := s.start(bins); err != nil {
		if s.keepAlive != nil {
			s.keepAlive.Close() // the supervisors stop what did start
		}
		os.RemoveAll(dir)
		return nil, fmt.Errorf("real server: %w", err)
	}
	return s, nil
}

// supervisor runs "$@" until its standard input reaches end of file, that is
// until the test binary holding the pipe's write end exits; then it stops the
// child and removes $KLOOP_RM if set.
const supervisor = `"$@" </dev/null &
child=$!
cat >/dev/null
kill -TERM "$child" 2>/dev/null
i=0
while kill -0 "$child" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
kill -KILL "$child" 2>/dev/null
if [ -n "$KLOOP_RM" ]; then rm -rf "$KLOOP_RM"; fi
`

// realBinaries are the paths of the real control plane's programs.
type realBinaries struct{ apiserver, controllerManager, etcd string }

// controllerManagerControllers are the kube-controller-manager controllers
// the real target runs: those whose work clients see as API semantics
// (garbage collection, namespace deletion, the default ServiceAccount of
// every namespace, legacy token Secrets, the kube-root-ca.crt ConfigMap of
// every namespace). None of them schedules or runs anything.
var controllerManagerControllers = []string{
	"garbage-collector-controller",
	"namespace-controller",
	"serviceaccount-controller",
	"serviceaccount-token-controller",
	"root-ca-certificate-publisher-controller",
}

func (s *realServer) start(bins realBinaries) error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close() // the supervisors hold their own copies
	s.keepAlive = w

	s.token = strings.ToLower(rand.Text() + rand.Text())
	s.kcmToken = strings.ToLower(rand.Text() + rand.Text())
	files, err := s.writeFiles()
	if err != nil {
		return err
	}
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	etcdPort, peerPort, apiPort := ports[0], ports[1], ports[2]
	s.etcdURL = fmt.Sprintf("http://127.0.0.1:%d", etcdPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	s.url = fmt.Sprintf("https://127.0.0.1:%d", apiPort)

	etcdLog := filepath.Join(s.dir, "etcd.log")
	if err := s.spawn(r, etcdLog, true, bins.etcd,
		"--name=kloop",
		"--data-dir="+filepath.Join(s.dir, "etcd"),
		"--listen-client-urls="+s.etcdURL,
		"--advertise-client-urls="+s.etcdURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=kloop="+peerURL,
		"--unsafe-no-fsync",
		"--log-level=warn",
	); err != nil {
		return err
	}
	plain := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	if err := waitFor(60*time.Second, etcdLog, func() bool {
		resp, err := plain.Get(s.etcdURL + "/health")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusOK && bytes.Contains(body, []byte(`"health":"true"`))
	}); err != nil {
		return fmt.Errorf("etcd: %w", err)
	}

	apiLog := filepath.Join(s.dir, "kube-apiserver.log")
	if err := s.spawn(r, apiLog, false, bins.apiserver,
		"--etcd-servers="+s.etcdURL,
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", apiPort),
		// A loopback advertise address is refused by the endpoint
		// reconciler; nothing routes to this one, nothing needs to.
		"--advertise-address=10.254.254.1",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--tls-cert-file="+files.cert,
		"--tls-private-key-file="+files.key,
		"--token-auth-file="+files.tokens,
		"--client-ca-file="+files.clientCA,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+files.saPub,
		"--service-account-signing-key-file="+files.saKey,
		// The embedded server has no ServiceAccount admission (a Pod
		// gets no serviceAccountName and no token volume).
		"--disable-admission-plugins=ServiceAccount",
		// Compaction is the tests' to trigger (Env.Compact).
		"--etcd-compaction-interval=0",
		"--profiling=false",
	); err != nil {
		return err
	}
	tlsClient := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: s.tlsConfig(), DisableKeepAlives: true}}
	if err := waitFor(120*time.Second, apiLog, func() bool {
		req, _ := http.NewRequest(http.MethodGet, s.url+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+s.token)
		resp, err := tlsClient.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}); err != nil {
		return fmt.Errorf("kube-apiserver: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.aggregateClusterRoles(ctx); err != nil {
		return fmt.Errorf("kube-apiserver: aggregating the bootstrap ClusterRoles: %w", err)
	}
	return s.startControllerManager(ctx, r, bins.controllerManager, files)
}

// startControllerManager starts kube-controller-manager with
// controllerManagerControllers, as kubeadm configures it for those: its own
// user (system:kube-controller-manager, whose bootstrap role lets it make
// the controllers' ServiceAccounts and their tokens), each controller under
// its ServiceAccount's credentials (--use-service-account-credentials, so
// RBAC checks what kube's bootstrap policy gives each), the ServiceAccount
// key kube-apiserver verifies tokens with, the serving CA as the cluster's
// root CA (what kube-root-ca.crt publishes), no leader election and no
// serving port (nothing needs its /metrics; it listens nowhere). Its client
// rate limit is raised from 20 qps, burst 30, so that a test's namespace
// deletion or a garbage collection of thousands of objects is bound by the
// servers, not by the client's bucket. It is ready when the default
// namespace has its default ServiceAccount and kube-root-ca.crt ConfigMap.
func (s *realServer) startControllerManager(ctx context.Context, r *os.File, bin string, files realFiles) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["real"] = &clientcmdapi.Cluster{Server: s.url, CertificateAuthorityData: s.caPEM}
	kc.AuthInfos["real"] = &clientcmdapi.AuthInfo{Token: s.kcmToken}
	kc.Contexts["real"] = &clientcmdapi.Context{Cluster: "real", AuthInfo: "real"}
	kc.CurrentContext = "real"
	kubeconfig := filepath.Join(s.dir, "kube-controller-manager.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		return fmt.Errorf("kube-controller-manager: %w", err)
	}
	log := filepath.Join(s.dir, "kube-controller-manager.log")
	if err := s.spawn(r, log, false, bin,
		"--kubeconfig="+kubeconfig,
		"--controllers="+strings.Join(controllerManagerControllers, ","),
		"--use-service-account-credentials",
		"--service-account-private-key-file="+files.saKey,
		"--root-ca-file="+files.cert,
		"--leader-elect=false",
		"--secure-port=0",
		"--kube-api-qps=1000",
		"--kube-api-burst=2000",
		"--profiling=false",
	); err != nil {
		return err
	}
	tlsClient := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: s.tlsConfig(), DisableKeepAlives: true}}
	exists := func(path string) bool {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url+path, nil)
		req.Header.Set("Authorization", "Bearer "+s.token)
		resp, err := tlsClient.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	if err := waitFor(120*time.Second, log, func() bool {
		return exists("/api/v1/namespaces/default/serviceaccounts/default") && exists("/api/v1/namespaces/default/configmaps/kube-root-ca.crt")
	}); err != nil {
		return fmt.Errorf("kube-controller-manager: %w", err)
	}
	return nil
}

// spawn starts bin under a supervisor reading r, with output appended to
// logPath. The process is never waited for: it ends with this process.
func (s *realServer) spawn(r *os.File, logPath string, removeDir bool, bin string, args ...string) error {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command("/bin/sh", append([]string{"-c", supervisor, "kloop-supervisor", bin}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = r, logFile, logFile
	cmd.Env = os.Environ()
	if removeDir {
		cmd.Env = append(cmd.Env, "KLOOP_RM="+s.dir)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", filepath.Base(bin), err)
	}
	return nil
}

// waitFor polls ready until it holds or the timeout passes; the error quotes
// the end of the log.
func waitFor(timeout time.Duration, logPath string, ready func() bool) error {
	deadline := time.Now().Add(timeout)
	for !ready() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %v; end of %s:\n%s", timeout, logPath, tail(logPath, 3000))
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

type realFiles struct{ cert, key, tokens, clientCA, saKey, saPub string }

// writeFiles writes the serving certificate, the token file and the
// service-account key pair into s.dir.
func (s *realServer) writeFiles() (realFiles, error) {
	f := realFiles{
		cert:     filepath.Join(s.dir, "serving.crt"),
		key:      filepath.Join(s.dir, "serving.key"),
		tokens:   filepath.Join(s.dir, "tokens.csv"),
		clientCA: filepath.Join(s.dir, "client-ca.crt"),
		saKey:    filepath.Join(s.dir, "sa.key"),
		saPub:    filepath.Join(s.dir, "sa.pub"),
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return f, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return f, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "kloop-real-kube-apiserver"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return f, err
	}
	s.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return f, err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return f, err
	}
	if s.clientCA, err = newClientCA(); err != nil {
		return f, err
	}
	saKeyDER, err := x509.MarshalPKCS8PrivateKey(saKey)
	if err != nil {
		return f, err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return f, err
	}
	for path, content := range map[string][]byte{
		f.cert: s.caPEM,
		f.key:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		f.tokens: fmt.Appendf(nil, "%s,kloop-admin,kloop-admin,\"system:masters\"\n%s,system:kube-controller-manager,system:kube-controller-manager,\n",
			s.token, s.kcmToken),
		f.clientCA: s.clientCA.pem,
		f.saKey:    pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: saKeyDER}),
		f.saPub:    pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPubDER}),
	} {
		if err := os.WriteFile(path, content, 0o600); err != nil {
			return f, err
		}
	}
	return f, nil
}

func (s *realServer) tlsConfig() *tls.Config {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.caPEM)
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

// compact compacts etcd at its current revision through etcd's JSON
// gateway, the way kube-apiserver's own compactor does.
func (s *realServer) compact(ctx context.Context) error {
	var status struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	if err := s.etcdCall(ctx, "/v3/maintenance/status", map[string]any{}, &status); err != nil {
		return err
	}
	if status.Header.Revision == "" {
		return errors.New("etcd status has no revision")
	}
	return s.etcdCall(ctx, "/v3/kv/compaction", map[string]any{"revision": status.Header.Revision, "physical": true}, nil)
}

func (s *realServer) etcdCall(ctx context.Context, path string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.etcdURL+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("etcd %s: %w", path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("etcd %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s: %s: %s", path, resp.Status, strings.TrimSpace(string(data)))
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("etcd %s: %w", path, err)
		}
	}
	return nil
}

// freePorts returns n distinct ports free on 127.0.0.1 a moment ago.
func freePorts(n int) ([]int, error) {
	var ports []int
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// randomString returns n random lowercase letters and digits (n <= 26).
func randomString(n int) string { return strings.ToLower(rand.Text())[:n] }
