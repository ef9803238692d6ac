package manager

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"sync"
	"time"
)

// selfSignedValidity is how long the self-signed certificate of the
// metrics server is valid.
const selfSignedValidity = 365 * 24 * time.Hour

// selfSigned returns a new self-signed ECDSA P-256 certificate for
// localhost, 127.0.0.1 and ::1, as controller-runtime's metrics server
// makes when it is given none: the scrape is encrypted; the scraper does
// not verify who it talks to (Prometheus in a cluster scrapes with
// insecure_skip_verify, as kubebuilder's ServiceMonitor does).
func selfSigned(now time.Time) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: fmt.Sprintf("localhost@%d", now.Unix())},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(selfSignedValidity),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
}

// maxCertFile bounds what the metrics server reads of a certificate or
// key file.
const maxCertFile = 1 << 20

func readSmall(path string) ([]byte, error) {
	f, err := os.Open(path) // follows symlinks: a Secret volume swaps ..data
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxCertFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxCertFile {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxCertFile)
	}
	return b, nil
}

// certReloader serves a certificate and key from two files, reloading them
// at the first handshake after either changed. It reads both files (a few
// KiB) at each handshake and parses them only when their bytes changed: no
// goroutine, no file watch, and a rotation is seen by the next connection
// however the files were replaced (rewritten in place within the same
// mtime tick, renamed over, or a Secret volume's symlink swap).
type certReloader struct {
	certPath, keyPath string
	log               *slog.Logger

	mu sync.Mutex // guards cert, certPEM, keyPEM, failed, failedErr, logged
	// cert is the pair loaded last, parsed from certPEM and keyPEM.
	cert            *tls.Certificate
	certPEM, keyPEM []byte
	// failed is the last pair that did not load (certificate then key),
	// with failedErr: not parsed again until a file changes.
	failed    [2][]byte
	failedErr error
	// logged is the last reload error logged, logged once.
	logged string
}

// newCertReloader loads the pair once: an error means no certificate.
func newCertReloader(certPath, keyPath string, log *slog.Logger) (*certReloader, error) {
	r := &certReloader{certPath: certPath, keyPath: keyPath, log: log}
	if err := r.reload(); err != nil {
		return nil, err
	}
	return r, nil
}

// reload loads the pair if either file changed since the last load.
// r.mu must be held, or r not shared yet.
func (r *certReloader) reload() error {
	certPEM, err := readSmall(r.certPath)
	if err != nil {
		return err
	}
	keyPEM, err := readSmall(r.keyPath)
	if err != nil {
		return err
	}
	if r.cert != nil && bytes.Equal(certPEM, r.certPEM) && bytes.Equal(keyPEM, r.keyPEM) {
		return nil
	}
	if r.failedErr != nil && bytes.Equal(certPEM, r.failed[0]) && bytes.Equal(keyPEM, r.failed[1]) {
		return r.failedErr
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		err = fmt.Errorf("%s and %s: %w", r.certPath, r.keyPath, err)
		r.failed, r.failedErr = [2][]byte{certPEM, keyPEM}, err
		return err
	}
	if r.cert != nil {
		r.log.Info("metrics server: loaded a new certificate", "cert", r.certPath, "key", r.keyPath)
	}
	r.cert, r.certPEM, r.keyPEM = &cert, certPEM, keyPEM
	r.failed, r.failedErr = [2][]byte{}, nil
	return nil
}

// GetCertificate is the tls.Config hook: the pair as the files are now,
// or the last one that loaded when they are missing or do not match (a
// rotation half written: the next handshake tries again).
func (r *certReloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.reload()
	switch {
	case err == nil:
		r.logged = ""
	case err.Error() != r.logged:
		r.logged = err.Error()
		r.log.Warn("metrics server: keeping the previous certificate", "err", err)
	}
	return r.cert, nil
}
