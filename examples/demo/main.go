package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"
	"time"
)

// demoPackage is what the launcher builds and runs.
const demoPackage = "kloop.dev/kloop/examples/widget/cmd/demo"

func main() {
	os.Exit(launch(context.Background(), os.Args[1:], nil, os.Stdin, os.Stdout, os.Stderr))
}

// launch builds the demo and runs it with args, and returns its exit code.
// env, when set, is added to the go command's environment.
func launch(ctx context.Context, args, env []string, stdin io.Reader, stdout, stderr io.Writer) int {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		fmt.Fprintf(stderr, "demo: the go command is needed to build the demo: %v\n", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "kloop-demo-bin-")
	if err != nil {
		fmt.Fprintf(stderr, "demo: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "demo")
	fmt.Fprintln(stderr, "demo: building the Widget operator demo (the first build on a cold machine downloads and compiles the Kubernetes libraries: a few minutes; then seconds)")
	start := time.Now()
	build := exec.CommandContext(ctx, goCmd, "build", "-o", bin, demoPackage)
	build.Dir = moduleDir()
	build.Env = append(os.Environ(), env...)
	build.Stdout, build.Stderr = stderr, stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(stderr, "demo: building %s: %v\n", demoPackage, err)
		return 1
	}
	fmt.Fprintf(stderr, "demo: built in %.1fs\n", time.Since(start).Seconds())

	// The terminal sends Ctrl-C to the demo as well as to the launcher: the
	// launcher waits for the demo to stop. A SIGTERM sent to the launcher
	// alone is passed on.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "demo: %v\n", err)
		return 1
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case sig := <-sigs:
			if sig == syscall.SIGTERM {
				_ = cmd.Process.Signal(sig)
			}
		case err := <-done:
			var exit *exec.ExitError
			switch {
			case err == nil:
				return 0
			case errors.As(err, &exit) && exit.ExitCode() > 0:
				return exit.ExitCode()
			default:
				fmt.Fprintf(stderr, "demo: %v\n", err)
				return 1
			}
		}
	}
}

// moduleDir is the root of kloop's module, where this file's directory
// says it is (../..), so that the launcher works from any directory; ""
// (the current directory) when the source is not there.
func moduleDir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return ""
	}
	root := filepath.Join(filepath.Dir(file), "..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return ""
	}
	return root
}
