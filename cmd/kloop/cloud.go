package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"kloop.dev/kloop/examples/cloud"
)

// runCloud runs `kloop cloud`: the Widget operator's local cloud, standalone.
func runCloud(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("kloop cloud", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var opts cloud.Options
	fs.StringVar(&opts.Addr, "addr", "127.0.0.1:0", "address to listen on (port 0: a free port)")
	fs.DurationVar(&opts.ProvisionDelay, "provision-delay", 0, "how long an instance is pending after a create or modify, and shutting down after a delete")
	fs.DurationVar(&opts.VisibilityDelay, "visibility-delay", 0, "how long a new instance is invisible to describes (eventual consistency)")
	fs.Float64Var(&opts.RateLimit, "rate-limit", 0, "requests a second answered before 429 Throttled (0: no limit)")
	fs.IntVar(&opts.Burst, "burst", 0, "requests the rate limit lets through at once (default: the rate limit, rounded up)")
	fs.DurationVar(&opts.RetryAfter, "retry-after", 0, "the Retry-After of a 429, in whole seconds (default 1s)")
	fs.Float64Var(&opts.FailureRate, "failure-rate", 0, "fraction of requests, 0 to 1, that fail with 500 (half of the failed writes after the change)")
	fs.Uint64Var(&opts.Seed, "seed", 0, "seed of the random failures (0: random)")
	fs.StringVar(&opts.StateFile, "state-file", "", "keep the instances in this JSON file across restarts (default: in memory only)")
	verbose := fs.Bool("v", false, "log to stderr")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "kloop cloud: unexpected arguments %q\n", fs.Args())
		fs.Usage()
		return errUsage
	}
	opts.Logger = slog.New(slog.DiscardHandler)
	if *verbose {
		opts.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	}
	c, err := cloud.New(opts)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	select {
	case <-c.Ready():
	case err := <-done:
		return err
	}
	fmt.Fprintf(stdout, "cloud serving at %s\n", c.URL())
	if opts.StateFile != "" {
		fmt.Fprintf(stdout, "state file %s\n", opts.StateFile)
	}
	return <-done
}
