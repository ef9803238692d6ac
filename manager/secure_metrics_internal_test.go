package manager

import (
	"net/http"
	"testing"
	"time"
)

func TestTTLCache(t *testing.T) {
	var c ttlCache[string, bool]
	now := time.Unix(1000, 0)
	if _, ok := c.get("a", now); ok {
		t.Fatal("empty cache has a")
	}
	c.put("a", true, now, time.Minute)
	if v, ok := c.get("a", now.Add(59*time.Second)); !ok || !v {
		t.Fatalf("a before its TTL: %v %v", v, ok)
	}
	if _, ok := c.get("a", now.Add(time.Minute)); ok {
		t.Fatal("a after its TTL")
	}
	// Full: the expired entries go first, then everything.
	c.put("b", false, now.Add(-time.Hour), time.Minute) // expired
	for i := range reviewCacheSize - 2 {
		c.put(string(rune('c'+i)), true, now, time.Hour)
	}
	c.put("new", true, now, time.Hour)
	if _, ok := c.m["b"]; ok || len(c.m) != reviewCacheSize {
		t.Fatalf("after eviction of expired entries: %d entries, b kept: %v", len(c.m), ok)
	}
	c.put("x1", true, now, time.Hour)
	c.put("x2", true, now, time.Hour)
	if len(c.m) > reviewCacheSize {
		t.Fatalf("%d entries, bound %d", len(c.m), reviewCacheSize)
	}
}

func TestBearerToken(t *testing.T) {
	for _, tt := range []struct {
		header, token string
		ok            bool
	}{
		{"Bearer abc", "abc", true},
		{"bearer abc", "abc", true},
		{"  Bearer   abc  ", "abc", true},
		{"", "", false},
		{"Bearer", "", false},
		{"Bearer ", "", false},
		{"Basic abc", "", false},
		{"Bearer a b", "", false},
	} {
		r, _ := http.NewRequest(http.MethodGet, "/metrics", nil)
		if tt.header != "" {
			r.Header.Set("Authorization", tt.header)
		}
		if token, ok := bearerToken(r); token != tt.token || ok != tt.ok {
			t.Errorf("bearerToken(%q) = %q, %v; want %q, %v", tt.header, token, ok, tt.token, tt.ok)
		}
	}
}
