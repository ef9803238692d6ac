package certreload

import (
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/pem"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"kloop.dev/kloop/internal/selfsigned"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// writePair writes a new self-signed pair into dir and returns its
// certificate's DER.
func writePair(t *testing.T, dir string) []byte {
	t.Helper()
	cert, certPEM, err := selfsigned.New(time.Now(), "certreload-test")
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalECPrivateKey(cert.PrivateKey.(*ecdsa.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return cert.Certificate[0]
}

func TestReloader(t *testing.T) {
	dir := t.TempDir()
	certPath, keyPath := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if _, err := New(certPath, keyPath, "test server", slog.New(slog.DiscardHandler)); err == nil {
		t.Fatal("New without files: no error")
	}
	first := writePair(t, dir)
	r, err := New(certPath, keyPath, "test server", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	serving := func() []byte {
		t.Helper()
		c, err := r.GetCertificate(nil)
		if err != nil || c == nil {
			t.Fatalf("GetCertificate: %v, %v", c, err)
		}
		return c.Certificate[0]
	}
	if got := serving(); string(got) != string(first) {
		t.Fatal("not the first certificate")
	}
	// Rotated: the next handshake serves the new pair.
	second := writePair(t, dir)
	if got := serving(); string(got) != string(second) {
		t.Fatal("the rotated certificate is not served")
	}
	// Half written (a key that does not match): the previous pair stays.
	if err := os.WriteFile(keyPath, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := serving(); string(got) != string(second) {
		t.Fatal("a broken pair replaced the serving one")
	}
	// Too large a file is refused.
	if err := os.WriteFile(certPath, make([]byte, maxCertFile+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(certPath, keyPath, "test server", slog.New(slog.DiscardHandler)); err == nil {
		t.Fatal("New with an oversized certificate: no error")
	}
}
