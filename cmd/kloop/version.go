package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"kloop.dev/kloop/apiserver"
)

// runVersion prints kloop's version (its module version, or the commit it
// was built from), the Go toolchain, the Kubernetes API the embedded server
// follows and the Kubernetes libraries kloop is built on.
func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("kloop version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "kloop version: unexpected arguments %q\n", fs.Args())
		return errUsage
	}
	bi, _ := debug.ReadBuildInfo()
	fmt.Fprintf(stdout, "kloop:                   %s\n", kloopVersion(bi))
	fmt.Fprintf(stdout, "go:                      %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(stdout, "embedded kube-apiserver: %s\n", apiserver.Version().GitVersion)
	for _, path := range []string{"k8s.io/client-go", "k8s.io/apimachinery", "k8s.io/api"} {
		fmt.Fprintf(stdout, "%-24s %s\n", path+":", depVersion(bi, path))
	}
	return nil
}

// kloopVersion is the main module's version when kloop was built as a
// module dependency (go install kloop.dev/kloop/cmd/kloop@v1.2.3), else
// the commit of the checkout it was built in, marked when it had changes.
func kloopVersion(bi *debug.BuildInfo) string {
	if bi == nil {
		return "unknown (no build information)"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = " (with uncommitted changes)"
			}
		}
	}
	if rev == "" {
		return "(devel)"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	return "(devel) " + rev + modified
}

// depVersion is the version of the module at path kloop was built with.
func depVersion(bi *debug.BuildInfo, path string) string {
	if bi == nil {
		return "unknown"
	}
	for _, d := range bi.Deps {
		if d.Path == path {
			if d.Replace != nil {
				return d.Replace.Version + " (replacing " + d.Version + ")"
			}
			return d.Version
		}
	}
	return "unknown"
}
