package rctx

import (
	"context"
	"regexp"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestScope(t *testing.T) {
	type other struct{}
	parent := context.WithValue(context.Background(), other{}, "v")
	if From(parent) != nil {
		t.Fatal("a scope outside a reconcile")
	}
	u := [16]byte{0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0x4d, 0xef, 0x80, 1, 2, 3, 4, 5, 6, 7}
	tests := []struct {
		name string
		s    *Scope
		want string
	}{
		{"text", &Scope{Context: parent, ID: "id-1"}, "id-1"},
		{"uuid", &Scope{Context: parent, UUID: u, HasUUID: true}, "12345678-9abc-4def-8001-020304050607"},
		{"text wins", &Scope{Context: parent, ID: "id-2", UUID: u, HasUUID: true}, "id-2"},
		{"none", &Scope{Context: parent}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := From(tt.s)
			if got != tt.s || got.IDString() != tt.want {
				t.Fatalf("From = %p, IDString %q; want %p, %q", got, got.IDString(), tt.s, tt.want)
			}
			if tt.s.Value(other{}) != "v" {
				t.Fatal("the parent's values are lost")
			}
		})
	}
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`).MatchString(FormatUUID([16]byte{})) {
		t.Fatal("FormatUUID is not canonical")
	}
}
