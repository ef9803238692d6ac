package manager_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"kloop.dev/kloop/manager"
)

// signalChild is set in the environment of the test binary re-executed by
// TestSignalContext; its value says how the child shuts down.
const signalChild = "KLOOP_TEST_SIGNAL_CHILD"

// runSignalChild is the child's side: it prints "ready" once its handlers
// are installed, and when its context is cancelled prints the cause, then
// either returns (clean: the test binary exits 0 after the test's cleanup)
// or stays busy "shutting down" for a minute.
func runSignalChild(mode string) {
	// A first SignalContext stopped at once: calling it again works and
	// the first one's handlers are gone.
	first, stopFirst := manager.SignalContext(context.Background())
	stopFirst()
	ctx, stop := manager.SignalContext(context.Background())
	defer stop()
	fmt.Println("ready")
	<-ctx.Done()
	fmt.Printf("cancelled: %v; first: %v\n", context.Cause(ctx), context.Cause(first))
	if mode == "busy" {
		fmt.Println("shutting down")
		time.Sleep(time.Minute)
		fmt.Println("shut down")
	}
}

// TestSignalContext re-executes the test binary as a child that waits on
// SignalContext: the first SIGINT or SIGTERM cancels its context (the
// child prints the signal and exits 0 on its own), a second one while the
// child is still shutting down exits it at once with code 1.
func TestSignalContext(t *testing.T) {
	if mode := os.Getenv(signalChild); mode != "" {
		runSignalChild(mode)
		return
	}
	for _, tc := range []struct {
		name     string
		mode     string
		signals  []syscall.Signal
		wantCode int
		want     []string // the child's output lines, in order
	}{
		{"SIGTERM", "clean", []syscall.Signal{syscall.SIGTERM}, 0,
			[]string{"ready", "cancelled: manager: received signal terminated; first: context canceled"}},
		{"SIGINT", "clean", []syscall.Signal{syscall.SIGINT}, 0,
			[]string{"ready", "cancelled: manager: received signal interrupt; first: context canceled"}},
		{"second SIGTERM while shutting down", "busy", []syscall.Signal{syscall.SIGTERM, syscall.SIGTERM}, 1,
			[]string{"ready", "cancelled: manager: received signal terminated; first: context canceled", "shutting down"}},
		{"SIGINT then SIGTERM", "busy", []syscall.Signal{syscall.SIGINT, syscall.SIGTERM}, 1,
			[]string{"ready", "cancelled: manager: received signal interrupt; first: context canceled", "shutting down"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestSignalContext$", "-test.count=1")
			cmd.Env = append(os.Environ(), signalChild+"="+tc.mode)
			cmd.Stderr = os.Stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			lines := bufio.NewScanner(out)
			var got []string
			// next reads the child's next line, the test binary's own
			// ("PASS") aside.
			next := func() string {
				for lines.Scan() {
					if l := lines.Text(); l != "PASS" {
						got = append(got, l)
						return l
					}
				}
				return ""
			}
			// The signals go when the child is ready for them: the first
			// after "ready", the second after the line that shows the
			// first was seen ("shutting down").
			waitFor := []string{"ready", "shutting down"}
			for i, sig := range tc.signals {
				for l := next(); l != waitFor[i]; l = next() {
					if l == "" {
						t.Fatalf("child ended before printing %q; printed %q", waitFor[i], got)
					}
				}
				if err := cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
			}
			for next() != "" {
			}
			_, _ = io.Copy(io.Discard, out)
			err = cmd.Wait()
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if ctx.Err() != nil {
				t.Fatalf("child did not exit within 30 s (killed): output %q", got)
			}
			if code != tc.wantCode {
				t.Errorf("exit code %d (%v), want %d; output %q", code, err, tc.wantCode, got)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("output\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// The context ends with its parent, and stop cancels it and returns,
// releasing the handlers, however often it is called.
func TestSignalContextStop(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cancelFrom string // "parent" or "stop"
		want       error
	}{
		{"parent cancelled", "parent", context.Canceled},
		{"stop", "stop", context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent, cancelParent := context.WithCancel(context.Background())
			defer cancelParent()
			ctx, stop := manager.SignalContext(parent)
			defer stop()
			if ctx.Err() != nil {
				t.Fatalf("context done before any signal: %v", ctx.Err())
			}
			if tc.cancelFrom == "parent" {
				cancelParent()
			} else {
				stop()
			}
			<-ctx.Done()
			if err := context.Cause(ctx); !errors.Is(err, tc.want) {
				t.Errorf("cause %v, want %v", err, tc.want)
			}
			stop()
			stop()
		})
	}
}

// A program's context: cancelled on SIGINT or SIGTERM (a second signal
// exits at once); stop releases the handlers and cancels it.
func ExampleSignalContext() {
	ctx, stop := manager.SignalContext(context.Background())
	defer stop()
	// mgr.Start(ctx) would run here until the first signal.
	stop()
	<-ctx.Done()
	fmt.Println(ctx.Err())
	// Output:
	// context canceled
}
