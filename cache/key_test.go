package cache

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestKey(t *testing.T) {
	tests := []struct {
		namespace, name, want string
	}{
		{"default", "web", "default/web"},
		{"", "node-1", "node-1"},
		{"kube-system", "a.b-c", "kube-system/a.b-c"},
	}
	for _, tt := range tests {
		obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: tt.namespace, Name: tt.name}}
		if got := Key(obj); got != tt.want {
			t.Errorf("Key(%q, %q) = %q, want %q", tt.namespace, tt.name, got, tt.want)
		}
		if got := string(appendKey(nil, tt.namespace, tt.name)); got != tt.want {
			t.Errorf("appendKey(%q, %q) = %q, want %q", tt.namespace, tt.name, got, tt.want)
		}
	}
}

func TestSplitKey(t *testing.T) {
	tests := []struct {
		key, namespace, name string
		wantErr              bool
	}{
		{key: "default/web", namespace: "default", name: "web"},
		{key: "node-1", name: "node-1"},
		{key: "", wantErr: true},
		{key: "/web", wantErr: true},
		{key: "default/", wantErr: true},
		{key: "a/b/c", wantErr: true},
		{key: "/", wantErr: true},
	}
	for _, tt := range tests {
		ns, name, err := SplitKey(tt.key)
		if tt.wantErr {
			if !errors.Is(err, ErrInvalidKey) {
				t.Errorf("SplitKey(%q) error = %v, want ErrInvalidKey", tt.key, err)
			}
			continue
		}
		if err != nil || ns != tt.namespace || name != tt.name {
			t.Errorf("SplitKey(%q) = %q, %q, %v; want %q, %q, nil", tt.key, ns, name, err, tt.namespace, tt.name)
		}
	}
}

func FuzzSplitKey(f *testing.F) {
	for _, s := range []string{"default/web", "node", "", "/", "a/b/c", "a//b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		ns, name, err := SplitKey(key)
		if err != nil {
			if !errors.Is(err, ErrInvalidKey) {
				t.Fatalf("SplitKey(%q): error %v does not wrap ErrInvalidKey", key, err)
			}
			return
		}
		if name == "" || strings.Contains(name, "/") || strings.Contains(ns, "/") {
			t.Fatalf("SplitKey(%q) = %q, %q: bad parts", key, ns, name)
		}
		obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if got := Key(obj); got != key {
			t.Fatalf("Key(SplitKey(%q)) = %q", key, got)
		}
	})
}
