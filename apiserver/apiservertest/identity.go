package apiservertest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"path/filepath"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	asn1util "k8s.io/apimachinery/pkg/apis/asn1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"kloop.dev/kloop/apiserver"
)

// UserInfo is an identity for ConfigFor: a user name, a UID, groups and
// extra attributes (see apiserver.UserInfo).
type UserInfo = apiserver.UserInfo

// ConfigFor returns a client configuration (a new copy on each call) that
// authenticates as u, in u.Groups and system:authenticated; what it may do
// is what the server's RBAC objects give it. The test makes the Roles and
// bindings it needs with Config, the administrator's.
//
// On the embedded server u gets a bearer token of its own
// (apiserver.Server.AddUser). On the real server, whose token file cannot
// change once it runs, u gets a client certificate (the user name as its
// common name, the groups as its organizations, the UID in kube's UID
// attribute), signed by the CA kube-apiserver trusts (--client-ca-file):
// real authentication either way, no impersonation. What kube-apiserver
// makes of a certificate differs from a token in one thing only, which
// kubectl auth whoami shows: the user's extra attribute
// authentication.kubernetes.io/credential-id, the certificate's
// fingerprint. Extra attributes of u cannot be carried by a certificate:
// on the real server ConfigFor fails the test when u has any
// (impersonation, rest.Config.Impersonate, can set them on both).
func (e *Env) ConfigFor(u UserInfo) *rest.Config {
	e.t.Helper()
	if u.Name == "" {
		e.t.Fatalf("apiservertest: ConfigFor a user without a name")
	}
	cfg := e.Config()
	if e.Embedded != nil {
		token := strings.ToLower(rand.Text() + rand.Text())
		if err := e.Embedded.AddUser(token, u); err != nil {
			e.t.Fatalf("apiservertest: %v", err)
		}
		cfg.BearerToken = token
		return cfg
	}
	if len(u.Extra) > 0 {
		e.t.Fatalf("apiservertest: the real server authenticates ConfigFor's users with client certificates, which carry no extra attributes (user %q has %v)", u.Name, u.Extra)
	}
	certPEM, keyPEM, err := e.real.clientCert(u)
	if err != nil {
		e.t.Fatalf("apiservertest: client certificate for %q: %v", u.Name, err)
	}
	cfg.BearerToken = ""
	cfg.CertData, cfg.KeyData = certPEM, keyPEM
	return cfg
}

// ServiceAccountConfig returns a client configuration that authenticates
// as the ServiceAccount ns/name (user system:serviceaccount:<ns>:<name>,
// in system:serviceaccounts and system:serviceaccounts:<ns>), creating the
// ServiceAccount if it does not exist: the identity an operator's Pod runs
// as, to test it with the permissions its RBAC manifests give it. The
// token comes from the TokenRequest API on both servers (an hour long; the
// embedded server signs its own), and the user's extra attribute
// authentication.kubernetes.io/credential-id is the token's "JTI=<id>", as
// kube-apiserver gives it.
func (e *Env) ServiceAccountConfig(ns, name string) *rest.Config {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := kubernetes.NewForConfig(e.cfg)
	if err != nil {
		e.t.Fatalf("apiservertest: %v", err)
	}
	_, err = cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		err = nil
	}
	if err != nil {
		e.t.Fatalf("apiservertest: ServiceAccount %s/%s: %v", ns, name, err)
	}
	cfg := e.Config()
	expiry := int64(3600)
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("apiservertest: token of ServiceAccount %s/%s: %v", ns, name, err)
	}
	cfg.BearerToken = tr.Status.Token
	return cfg
}

// KubeconfigFor writes a kubeconfig with the credentials of cfg (one of
// the Env's: Config, ConfigFor, ServiceAccountConfig) into the test's
// temporary directory and returns its path, for kubectl as that identity;
// its context's namespace is the test's namespace.
func (e *Env) KubeconfigFor(cfg *rest.Config) string {
	e.t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["kloop"] = &clientcmdapi.Cluster{Server: e.cfg.Host, CertificateAuthorityData: e.cfg.CAData}
	kc.AuthInfos["kloop"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken, ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["kloop"] = &clientcmdapi.Context{Cluster: "kloop", AuthInfo: "kloop", Namespace: e.Namespace}
	kc.CurrentContext = "kloop"
	path := filepath.Join(e.t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		e.t.Fatalf("apiservertest: %v", err)
	}
	return path
}

// clientCA is the CA whose client certificates the real server trusts.
type clientCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newClientCA() (*clientCA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kloop-real-client-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &clientCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// clientCert issues a client certificate for u.
func (s *realServer) clientCert(u UserInfo) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, err
	}
	subject := pkix.Name{CommonName: u.Name, Organization: u.Groups}
	if u.UID != "" {
		subject.ExtraNames = append(subject.ExtraNames, pkix.AttributeTypeAndValue{Type: asn1util.X509UID(), Value: u.UID})
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      subject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, s.clientCA.cert, &key.PublicKey, s.clientCA.key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}
