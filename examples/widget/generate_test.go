package widget_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The committed generated files are what controller-gen makes of the
// current markers: the test runs doc.go's go:generate command with its
// outputs in a temporary directory, and compares.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for l := range strings.Lines(string(src)) {
		if rest, ok := strings.CutPrefix(l, "//go:generate "); ok {
			line = strings.TrimSpace(rest)
		}
	}
	tmp := t.TempDir()
	outputs := map[string]string{ // the command's outputs → where the test puts them
		"output:crd:artifacts:config=config/crd/bases": "output:crd:artifacts:config=" + filepath.Join(tmp, "crd"),
		"output:rbac:artifacts:config=config/rbac":     "output:rbac:artifacts:config=" + filepath.Join(tmp, "rbac"),
	}
	args := strings.Fields(line)
	if len(args) < 4 || args[0] != "go" || args[1] != "run" || !strings.HasPrefix(args[2], "sigs.k8s.io/controller-tools/cmd/controller-gen@") {
		t.Fatalf("doc.go's go:generate line %q does not run controller-gen", line)
	}
	for i, a := range args {
		if o, ok := outputs[a]; ok {
			args[i] = o
			delete(outputs, a)
		}
	}
	if len(outputs) > 0 {
		t.Fatalf("doc.go's go:generate line %q lacks the outputs %v", line, outputs)
	}
	args = append(args, "output:object:dir="+filepath.Join(tmp, "object"))

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out.String())
	}

	compare := func(genDir, committedDir, pattern string) {
		t.Helper()
		gen, _ := filepath.Glob(filepath.Join(genDir, pattern))
		committed, _ := filepath.Glob(filepath.Join(committedDir, pattern))
		base := func(ps []string) []string {
			out := make([]string, len(ps))
			for i, p := range ps {
				out[i] = filepath.Base(p)
			}
			return out
		}
		if !slices.Equal(base(gen), base(committed)) {
			t.Errorf("%s: controller-gen makes %v, committed are %v; run go generate in examples/widget", committedDir, base(gen), base(committed))
			return
		}
		for i := range gen {
			want, err := os.ReadFile(gen[i])
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(committed[i])
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s is not what controller-gen makes of the current markers; run go generate in examples/widget", committed[i])
			}
		}
	}
	compare(filepath.Join(tmp, "object"), "api/v1", "zz_generated.*.go")
	compare(filepath.Join(tmp, "crd"), "config/crd/bases", "*.yaml")
	compare(filepath.Join(tmp, "rbac"), "config/rbac", "*.yaml")
}
