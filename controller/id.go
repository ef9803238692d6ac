package controller

import (
	"crypto/rand"
	mrand "math/rand/v2"
)

// idSource makes reconcile IDs: random (version 4) UUIDs from a ChaCha8
// generator seeded from crypto/rand. Each worker owns one, so no lock is
// taken. It is cheaper than apimachinery's uuid.NewUUID, which reads
// crypto/rand on every call, and allocates once instead of twice: see
// BenchmarkReconcileID.
type idSource struct {
	g *mrand.ChaCha8
}

func newIDSource() idSource {
	var seed [32]byte
	_, _ = rand.Read(seed[:]) // crypto/rand.Read never fails (Go 1.24+)
	return idSource{g: mrand.NewChaCha8(seed)}
}

// next returns a new version 4 UUID (rctx.FormatUUID gives its text).
func (s idSource) next() [16]byte {
	var u [16]byte
	_, _ = s.g.Read(u[:])   // ChaCha8.Read never fails
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // variant RFC 4122
	return u
}
