package kloop_test

import (
	"go/build"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const module = "kloop.dev/kloop"

// deps returns the kloop packages pkg links (its non-test imports,
// transitively), read from the import clauses of this module's sources.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	seen := map[string]bool{}
	var walk func(path string)
	walk = func(path string) {
		if seen[path] {
			return
		}
		seen[path] = true
		dir := strings.TrimPrefix(strings.TrimPrefix(path, module), "/")
		p, err := build.ImportDir(filepath.FromSlash("./"+dir), 0)
		if err != nil {
			t.Fatalf("reading %s: %v", path, err)
		}
		for _, imp := range p.Imports {
			if imp == module || strings.HasPrefix(imp, module+"/") {
				walk(imp)
			}
		}
	}
	walk(module + "/" + pkg)
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, strings.TrimPrefix(p, module+"/"))
	}
	slices.Sort(out)
	return out
}

// The stages' imports point one way (issue 16): the controller does not
// link the client and the informer stages (its helpers that write through
// the client are controller/controllerutil); the metrics of a raw loop do
// not link them either; the informer, whose Source feeds a controller, does
// not import the controller nor the work queue.
func TestImportsPointOneWay(t *testing.T) {
	for _, tc := range []struct {
		pkg string
		not []string
	}{
		{"controller", []string{"client", "informer", "reflector", "cache", "fifo", "manager", "builder"}},
		{"metrics", []string{"client", "informer", "reflector", "cache", "fifo", "manager", "builder"}},
		{"informer", []string{"controller", "workqueue", "client", "manager", "builder"}},
	} {
		t.Run(tc.pkg, func(t *testing.T) {
			got := deps(t, tc.pkg)
			for _, p := range tc.not {
				if slices.Contains(got, p) {
					t.Errorf("%s links %s; its kloop dependencies are %v", tc.pkg, p, got)
				}
			}
		})
	}
}
