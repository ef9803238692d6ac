// Package certreload serves a TLS certificate and key from two files and
// reloads them when they change (a cert-manager Secret rotated in its
// volume), for kloop's TLS servers: the manager's metrics server and the
// webhook server.
package certreload

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
)

// maxCertFile bounds what is read of a certificate or key file.
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

// Reloader serves a certificate and key from two files, reloading them
// at the first handshake after either changed. It reads both files (a few
// KiB) at each handshake and parses them only when their bytes changed: no
// goroutine, no file watch, and a rotation is seen by the next connection
// however the files were replaced (rewritten in place within the same
// mtime tick, renamed over, or a Secret volume's symlink swap).
type Reloader struct {
	certPath, keyPath string
	log               *slog.Logger
	server            string // names the server in logs

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

// New loads the pair once: an error means no certificate. server names
// the server in the logs ("metrics server").
func New(certPath, keyPath, server string, log *slog.Logger) (*Reloader, error) {
	r := &Reloader{certPath: certPath, keyPath: keyPath, log: log, server: server}
	if err := r.reload(); err != nil {
		return nil, err
	}
	return r, nil
}

// reload loads the pair if either file changed since the last load.
// r.mu must be held, or r not shared yet.
func (r *Reloader) reload() error {
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
		r.log.Info(r.server+": loaded a new certificate", "cert", r.certPath, "key", r.keyPath)
	}
	r.cert, r.certPEM, r.keyPEM = &cert, certPEM, keyPEM
	r.failed, r.failedErr = [2][]byte{}, nil
	return nil
}

// GetCertificate is the tls.Config hook: the pair as the files are now,
// or the last one that loaded when they are missing or do not match (a
// rotation half written: the next handshake tries again).
func (r *Reloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.reload()
	switch {
	case err == nil:
		r.logged = ""
	case err.Error() != r.logged:
		r.logged = err.Error()
		r.log.Warn(r.server+": keeping the previous certificate", "err", err)
	}
	return r.cert, nil
}
