package apiserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteFileAtomicErrors checks that a failed write names the path the
// caller gave, never the temporary file, and says what to do.
func TestWriteFileAtomicErrors(t *testing.T) {
	dir := t.TempDir()
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o500); err != nil {
		t.Fatal(err)
	}
	isDir := filepath.Join(dir, "taken")
	if err := os.Mkdir(isDir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, want string
		skipRoot         bool
	}{
		{"missing directory", filepath.Join(dir, "nope", "kc"), "does not exist (create it, or give another path)", false},
		{"read-only directory", filepath.Join(ro, "kc"), "no permission to write in " + ro, true},
		{"a directory in the way", isDir, isDir + ": ", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.skipRoot && os.Geteuid() == 0 {
				t.Skip("root writes anywhere")
			}
			err := writeFileAtomic(tc.path, []byte("x"), 0o600)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.HasPrefix(err.Error(), tc.path+":") || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), ".tmp") {
				t.Errorf("error %q, want it to start with %q, contain %q and name no temporary file", err, tc.path+":", tc.want)
			}
		})
	}
	ok := filepath.Join(dir, "kc")
	if err := writeFileAtomic(ok, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(ok); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("written file: %v %v", fi, err)
	}
}
