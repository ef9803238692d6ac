package controllerutil

import (
	"crypto/sha256"
	"encoding/binary"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// nameHashLen is the length of the hash suffix Name appends.
const nameHashLen = 10

// nameAlphabet is the hash suffix's alphabet: Kubernetes' "safe" alphabet
// (k8s.io/apimachinery/pkg/util/rand), lower-case consonants and digits, so
// that a suffix never spells a word.
const nameAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// Name returns a deterministic object name for parts: the same parts give
// the same name on every call, in every process, in every release.
//
// Use it for the objects a controller creates (a child named after its
// owner, say Name(owner.GetName(), "config")): the cache is a little behind
// the API server right after a write, so a reconcile can run again before it
// sees its own create. With a deterministic name, the second create of the
// same object fails with AlreadyExists (treat that as success, see
// client.IgnoreAlreadyExists) instead of making a duplicate, as it would
// with GenerateName.
//
// The result is always a valid DNS-1123 label (at most 63 characters of
// a-z, 0-9 and '-', starting and ending with a letter or digit), which is
// valid as the name of any kind, including Services, and as a label value.
// When the parts joined with "-" already form such a label, that is the
// name. Otherwise (too long, upper case, dots or other characters, empty)
// the joined parts are lower-cased, every run of other characters becomes
// one '-', the result is cut to 52 characters and a 10-character hash of
// the original parts is appended after a '-', as Kubernetes' generators do
// (a ReplicaSet is its Deployment's name plus a hash): parts that differ
// only beyond the cut, or only in the characters replaced, still get
// different names.
func Name(parts ...string) string {
	joined := strings.Join(parts, "-")
	if len(validation.IsDNS1123Label(joined)) == 0 {
		return joined
	}
	suffix := nameHash(parts)
	const maxPrefix = validation.DNS1123LabelMaxLength - 1 - nameHashLen
	var b strings.Builder
	b.Grow(min(len(joined), maxPrefix) + 1 + nameHashLen)
	dash := false // a '-' is pending: written only before the next letter or digit
	for _, r := range joined {
		var c byte
		switch {
		case 'a' <= r && r <= 'z', '0' <= r && r <= '9':
			c = byte(r)
		case 'A' <= r && r <= 'Z':
			c = byte(r) + 'a' - 'A'
		default:
			dash = b.Len() > 0
			continue
		}
		need := 1
		if dash {
			need = 2
		}
		if b.Len()+need > maxPrefix {
			break
		}
		if dash {
			b.WriteByte('-')
			dash = false
		}
		b.WriteByte(c)
	}
	if b.Len() > 0 {
		b.WriteByte('-')
	}
	b.WriteString(suffix)
	return b.String()
}

// nameHash returns a hash of parts in nameAlphabet. Each part is length-
// prefixed, so that ("a-b", "c") and ("a", "b-c") hash differently.
func nameHash(parts []string) string {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write([]byte(p))
	}
	sum := h.Sum(nil)
	v := binary.BigEndian.Uint64(sum[:8])
	out := make([]byte, nameHashLen)
	for i := range out {
		out[i] = nameAlphabet[v%uint64(len(nameAlphabet))]
		v /= uint64(len(nameAlphabet))
	}
	return string(out)
}
