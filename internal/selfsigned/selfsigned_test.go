package selfsigned

import (
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"
)

func TestNew(t *testing.T) {
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	cert, caPEM, err := New(now, "kloop-test")
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(caPEM)
	if block == nil {
		t.Fatal("CA bundle is not PEM")
	}
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if cert.Leaf == nil || !cert.Leaf.Equal(leaf) {
		t.Fatal("Leaf is not the certificate of the CA bundle")
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	for _, name := range []string{"localhost", "127.0.0.1", "::1"} {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: pool, CurrentTime: now}); err != nil {
			t.Errorf("verify for %s: %v", name, err)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "example.com", Roots: pool, CurrentTime: now}); err == nil {
		t.Error("verified for example.com")
	}
	if got := leaf.Subject.CommonName; got != "kloop-test" {
		t.Errorf("CommonName = %q", got)
	}
	if !leaf.NotAfter.Equal(now.Add(Validity)) || !leaf.NotBefore.Equal(now.Add(-time.Hour)) {
		t.Errorf("validity %v..%v", leaf.NotBefore, leaf.NotAfter)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "localhost", Roots: pool, CurrentTime: now.Add(Validity + time.Hour)}); err == nil {
		t.Error("verified after expiry")
	}
	_, other, err := New(now, "kloop-test")
	if err != nil {
		t.Fatal(err)
	}
	if string(other) == string(caPEM) {
		t.Error("two calls returned the same certificate")
	}
}
