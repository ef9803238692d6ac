package controllerutil

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestName(t *testing.T) {
	long := strings.Repeat("a", 70)
	for _, tc := range []struct {
		desc  string
		parts []string
		want  string // exact, or a prefix when hashed
		hash  bool   // a hash suffix is expected
	}{
		{desc: "one part", parts: []string{"web"}, want: "web"},
		{desc: "owner and role", parts: []string{"web", "config"}, want: "web-config"},
		{desc: "digits", parts: []string{"w1", "2"}, want: "w1-2"},
		{desc: "exactly 63", parts: []string{strings.Repeat("b", 63)}, want: strings.Repeat("b", 63)},
		{desc: "64: cut and hashed", parts: []string{strings.Repeat("b", 64)}, want: strings.Repeat("b", 52) + "-", hash: true},
		{desc: "long owner", parts: []string{long, "config"}, want: strings.Repeat("a", 52) + "-", hash: true},
		{desc: "dots of a subdomain name", parts: []string{"my.app", "config"}, want: "my-app-config-", hash: true},
		{desc: "upper case", parts: []string{"Web"}, want: "web-", hash: true},
		{desc: "runs of other characters", parts: []string{"a__b", "..c"}, want: "a-b-c-", hash: true},
		{desc: "leading and trailing junk", parts: []string{"-a-", "_"}, want: "a-", hash: true},
		{desc: "unicode", parts: []string{"wïdget"}, want: "w-dget-", hash: true},
		{desc: "no parts", parts: nil, want: "", hash: true},
		{desc: "empty part", parts: []string{""}, want: "", hash: true},
		{desc: "only junk", parts: []string{"---", "..."}, want: "", hash: true},
		{desc: "a cut right before a junk run", parts: []string{strings.Repeat("c", 52) + "..d"}, want: strings.Repeat("c", 52) + "-", hash: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			got := Name(tc.parts...)
			if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
				t.Fatalf("Name(%q) = %q: not a DNS-1123 label: %v", tc.parts, got, errs)
			}
			if !tc.hash {
				if got != tc.want {
					t.Fatalf("Name(%q) = %q, want %q", tc.parts, got, tc.want)
				}
				return
			}
			suffix := nameHash(tc.parts)
			if got != tc.want+suffix {
				t.Fatalf("Name(%q) = %q, want %q + the hash %q", tc.parts, got, tc.want, suffix)
			}
			if Name(tc.parts...) != got {
				t.Fatal("not stable")
			}
		})
	}
}

// The hash is a fixed function of the parts: names stay the same across
// processes and releases (a changed name would orphan the objects made
// under the old one).
func TestNameGolden(t *testing.T) {
	for _, tc := range []struct {
		parts []string
		want  string
	}{
		{[]string{"my.app", "config"}, "my-app-config-vl2zj64qjc"},
		{[]string{"Web"}, "web-5vfw69htj8"},
		{nil, "k4m9fztmz7"},
		{[]string{"web", "config"}, "web-config"},
	} {
		if got := Name(tc.parts...); got != tc.want {
			t.Errorf("Name(%q) = %q, want %q: the hash changed, and with it every generated name", tc.parts, got, tc.want)
		}
	}
}

func TestNameDistinct(t *testing.T) {
	long := strings.Repeat("x", 80)
	for _, pair := range [][2][]string{
		{{long + "1"}, {long + "2"}},         // differ after the cut
		{{"a-b", "c.d"}, {"a", "b-c.d"}},     // same join, other split
		{{"Web"}, {"web."}},                  // same sanitized form
		{{long, "config"}, {long, "secret"}}, // same long owner, other role
		{{strings.Repeat("y", 63) + "A"}, {strings.Repeat("y", 63) + "B"}},
	} {
		a, b := Name(pair[0]...), Name(pair[1]...)
		if a == b {
			t.Errorf("Name(%q) = Name(%q) = %q", pair[0], pair[1], a)
		}
	}
}

// FuzzName: the name is always a valid DNS-1123 label, stable, and inputs
// that differ only beyond the cut get different names.
func FuzzName(f *testing.F) {
	for _, seed := range [][2]string{
		{"web", "config"}, {"my.app", "x"}, {"", ""}, {"Ünïcode", "---"},
		{strings.Repeat("a", 70), "b"}, {"-", "."}, {"a\x00b", "\xff"},
	} {
		f.Add(seed[0], seed[1])
	}
	long := strings.Repeat("p", 60)
	f.Fuzz(func(t *testing.T, a, b string) {
		for _, parts := range [][]string{{a}, {a, b}, {long + a}, {long, b}} {
			n := Name(parts...)
			if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
				t.Fatalf("Name(%q) = %q: %v", parts, n, errs)
			}
			if again := Name(parts...); again != n {
				t.Fatalf("Name(%q) not stable: %q, then %q", parts, n, again)
			}
		}
		if a != b {
			if x, y := Name(long+a), Name(long+b); x == y {
				t.Fatalf("Name(long+%q) = Name(long+%q) = %q", a, b, x)
			}
			if x, y := Name(long, a), Name(long, b); x == y {
				t.Fatalf("Name(long, %q) = Name(long, %q) = %q", a, b, x)
			}
		}
	})
}

func BenchmarkName(b *testing.B) {
	long := strings.Repeat("web", 30)
	for _, bc := range []struct {
		desc  string
		parts []string
	}{
		{"valid", []string{"web", "config"}},
		{"hashed", []string{long, "config"}},
	} {
		b.Run(bc.desc, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = Name(bc.parts...)
			}
		})
	}
}
