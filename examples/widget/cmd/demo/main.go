// Command demo runs the Widget operator's live demo (package
// kloop.dev/kloop/examples/widget/demo); `go run ./examples/demo` runs it
// after saying that it is building.
//
//	go run ./examples/widget/cmd/demo [--widgets 100] [--cloud-failure-rate 0.05] [--workers 8] [--serve] [--kubeconfig PATH] [--timeout 3m]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"kloop.dev/kloop/examples/widget/demo"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

var errUsage = errors.New("usage")

// run parses the flags and runs the demo.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var opts demo.Options
	fs.IntVar(&opts.Widgets, "widgets", 100, "how many Widgets run at the end (half from a WidgetSet)")
	fs.Float64Var(&opts.CloudFailureRate, "cloud-failure-rate", 0.05, "fraction of cloud requests that fail (0 to 1)")
	fs.Float64Var(&opts.CloudRateLimit, "cloud-rate-limit", 500, "cloud requests a second before it throttles (429)")
	fs.IntVar(&opts.Workers, "workers", 8, "workers of the Widget controller")
	fs.BoolVar(&opts.Serve, "serve", false, "keep the API server, the cloud and the manager running after the summary, for kubectl")
	fs.StringVar(&opts.Kubeconfig, "kubeconfig", "", "run against this cluster, in a namespace of its own, instead of the embedded API server")
	fs.DurationVar(&opts.Timeout, "timeout", 0, "give up if the Widgets have not converged by then (default 3m)")
	fs.StringVar(&opts.LiveView, "live-view", "127.0.0.1:0", `address of the live view of the pipeline, a web page whose URL is printed ("0": off)`)
	plain := fs.Bool("plain", false, "print the progress as plain lines even on a terminal")
	logFile := fs.String("log", "", "write the manager's logs (reconcile errors, injected cloud failures) to this file")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "demo: unexpected arguments %q\n", fs.Args())
		return errUsage
	}
	if f, ok := stdout.(*os.File); ok && !*plain {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 && os.Getenv("TERM") != "dumb" {
			opts.Terminal = true
		}
	}
	if *logFile != "" {
		f, err := os.Create(*logFile)
		if err != nil {
			return err
		}
		defer f.Close()
		opts.Logger = slog.New(slog.NewTextHandler(f, nil))
	}
	return demo.Run(ctx, opts, stdout)
}
