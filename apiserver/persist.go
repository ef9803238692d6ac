package apiserver

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"kloop.dev/kloop/apiserver/internal/jsontree"
	"kloop.dev/kloop/apiserver/storage"
	"kloop.dev/kloop/internal/selfsigned"
)

// Persistence (Options.DataDir). The store keeps the objects, the revision
// and the watch history in DataDir/store (storage.Options.Dir); next to it
// the server keeps what makes its clients' credentials stay valid across
// restarts:
//
//	admin-token      the administrator's token, when Options.Token is empty
//	sa-signing.key   the key that signs ServiceAccount tokens
//	serving.crt/.key the self-signed serving certificate, with Options.TLS
//
// The users of Options.Users and AddUser are configuration, as
// kube-apiserver's --token-auth-file is: they are not kept.
//
// What the server derives from stored objects (a CRD's served kinds, a
// Service's cluster IP, the RBAC policy) is rebuilt by New from the
// objects (kind.restore), the objects every cluster has are created if they
// are missing (as kube-apiserver's bootstrap controllers do), and the
// deletion of a terminating namespace or CRD that a crash interrupted goes
// on.

// Files of the data directory.
const (
	storeDirName = "store"
	tokenFile    = "admin-token"
	saKeyFile    = "sa-signing.key"
	certFile     = "serving.crt"
	certKeyFile  = "serving.key"
)

// certRenewBefore: a kept serving certificate that expires sooner is
// replaced by a new one (kubeconfigs written with the old one then need
// writing again).
const certRenewBefore = 30 * 24 * time.Hour

// storeDir is the store's directory; empty without DataDir.
func (o *Options) storeDir() string {
	if o.DataDir == "" {
		return ""
	}
	return filepath.Join(o.DataDir, storeDirName)
}

// credentials makes the administrator's token (unless Options.Token
// gives it), the ServiceAccount signing key and, with TLS, the serving
// certificate; with DataDir it reads them from there, making and keeping
// them the first time.
func (s *Server) credentials() error {
	dir := s.opts.DataDir
	if s.opts.Token == "" {
		token, err := keptFile(dir, tokenFile, func() ([]byte, error) {
			b := make([]byte, 32)
			_, err := rand.Read(b)
			return []byte(hex.EncodeToString(b) + "\n"), err
		})
		if err != nil {
			return err
		}
		s.opts.Token = strings.TrimSpace(string(token))
		if s.opts.Token == "" || strings.ContainsAny(s.opts.Token, " \t\r\n") {
			return fmt.Errorf("apiserver: %s: not a bearer token", filepath.Join(dir, tokenFile))
		}
	}
	keyPEM, err := keptFile(dir, saKeyFile, func() ([]byte, error) {
		t, err := newSATokens()
		if err != nil {
			return nil, err
		}
		der, err := x509.MarshalECPrivateKey(t.key)
		return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), err
	})
	if err != nil {
		return err
	}
	key, err := parseECKey(keyPEM)
	if err != nil {
		return fmt.Errorf("apiserver: %s: %w", filepath.Join(dir, saKeyFile), err)
	}
	s.saTokens = &saTokens{key: key}
	if s.opts.TLS {
		return s.servingCert()
	}
	return nil
}

// servingCert makes the self-signed serving certificate, or with DataDir
// uses the one kept there while it is valid for a month more.
func (s *Server) servingCert() error {
	now := s.opts.Now()
	dir := s.opts.DataDir
	if dir != "" {
		certPEM, err1 := os.ReadFile(filepath.Join(dir, certFile))
		keyPEM, err2 := os.ReadFile(filepath.Join(dir, certKeyFile))
		switch {
		case err1 == nil && err2 == nil:
			cert, err := tls.X509KeyPair(certPEM, keyPEM)
			if err != nil {
				return fmt.Errorf("apiserver: the serving certificate of %s: %w", dir, err)
			}
			if cert.Leaf.NotAfter.After(now.Add(certRenewBefore)) {
				s.cert, s.caPEM = &cert, certPEM
				return nil
			}
			s.opts.Logger.Warn("apiserver: the kept serving certificate expires soon: replacing it (write kubeconfigs again)", "notAfter", cert.Leaf.NotAfter)
		case !errors.Is(err1, os.ErrNotExist) && err1 != nil:
			return fmt.Errorf("apiserver: %w", err1)
		case !errors.Is(err2, os.ErrNotExist) && err2 != nil:
			return fmt.Errorf("apiserver: %w", err2)
		}
	}
	cert, caPEM, err := selfsigned.New(now, "kloop-apiserver")
	if err != nil {
		return fmt.Errorf("apiserver: TLS certificate: %w", err)
	}
	s.cert, s.caPEM = &cert, caPEM
	if dir == "" {
		return nil
	}
	der, err := x509.MarshalECPrivateKey(cert.PrivateKey.(*ecdsa.PrivateKey))
	if err != nil {
		return fmt.Errorf("apiserver: TLS certificate: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(dir, certKeyFile), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return fmt.Errorf("apiserver: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(dir, certFile), caPEM, 0o600); err != nil {
		return fmt.Errorf("apiserver: %w", err)
	}
	return nil
}

// keptFile returns what make makes; with dir, the content of dir/name,
// made by make and written there the first time.
func keptFile(dir, name string, make func() ([]byte, error)) ([]byte, error) {
	if dir == "" {
		return make()
	}
	path := filepath.Join(dir, name)
	b, err := os.ReadFile(path)
	if err == nil {
		return b, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("apiserver: %w", err)
	}
	if b, err = make(); err != nil {
		return nil, fmt.Errorf("apiserver: %s: %w", name, err)
	}
	if err := writeFileAtomic(path, b, 0o600); err != nil {
		return nil, fmt.Errorf("apiserver: %w", err)
	}
	return b, nil
}

func parseECKey(b []byte) (*ecdsa.PrivateKey, error) {
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "EC PRIVATE KEY" {
		return nil, errors.New("not a PEM EC private key")
	}
	return x509.ParseECPrivateKey(block.Bytes)
}

// restore rebuilds what the server derives from the objects a data
// directory holds: each stored object goes through its kind's restore
// hook. It does nothing on an empty store.
func (s *Server) restore() error {
	seen := map[string]bool{}
	for _, k := range s.reg.all() {
		if k.restore == nil || seen[k.storageResource] {
			continue
		}
		seen[k.storageResource] = true
		res, err := s.store.List(k.storageResource, storage.ListOptions{})
		if err != nil {
			return fmt.Errorf("apiserver: restoring %s: %w", k.gvr.Resource, err)
		}
		for _, o := range res.Objects {
			k.restore(s, o)
		}
	}
	return nil
}

// resumeDeletions goes on with the deletion of the terminating objects
// whose kind deletes their content (namespaces, CRDs): a crash may have
// interrupted it.
func (s *Server) resumeDeletions() {
	seen := map[string]bool{}
	for _, k := range s.reg.all() {
		if k.deleteContent == nil || seen[k.storageResource] {
			continue
		}
		seen[k.storageResource] = true
		res, err := s.store.List(k.storageResource, storage.ListOptions{Predicate: terminating})
		if err != nil {
			continue
		}
		for _, o := range res.Objects {
			k.deleteContent(s, o.Name)
		}
	}
}

// restoreServiceIPs marks a stored Service's cluster IPs allocated.
func (s *Server) restoreServiceIPs(o *storage.Object) {
	obj, err := decodeMap(o.Data)
	if err != nil {
		s.opts.Logger.Error("apiserver: decoding a stored Service", "namespace", o.Namespace, "name", o.Name, "err", err)
		return
	}
	ips, _ := jsontree.Get(obj, "spec", "clusterIPs").([]any)
	if len(ips) == 0 {
		ips = []any{jsontree.Str(obj, "spec", "clusterIP")}
	}
	for _, ip := range ips {
		if ip, _ := ip.(string); ip != "" && ip != "None" {
			if _, err := s.ips.allocate(ip); err != nil {
				s.opts.Logger.Error("apiserver: a stored Service's cluster IP", "namespace", o.Namespace, "name", o.Name, "err", err)
			}
		}
	}
}

// Close releases the data directory (Options.DataDir): the log is made
// durable and the directory's lock released, so that another server may
// open it. Serve closes the server when it returns; a server used only
// through Handler is closed by its owner. Without DataDir it does nothing.
// Requests that write fail after it.
func (s *Server) Close() error {
	if err := s.store.Close(); err != nil {
		return fmt.Errorf("apiserver: %w", err)
	}
	return nil
}
