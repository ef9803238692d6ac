package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// command is one subcommand. To add one, write its run function in its own
// file and add it to commands.
type command struct {
	name    string
	summary string
	// run runs the subcommand with its arguments until it is done or ctx is
	// cancelled (SIGINT, SIGTERM). A *flag.FlagSet error is a usage error.
	run func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{name: "apiserver", summary: "run the embedded Kubernetes API server", run: runAPIServer},
		{name: "cloud", summary: "run the Widget operator's local cloud (examples/cloud)", run: runCloud},
		{name: "version", summary: "print kloop's version and the Kubernetes versions it follows", run: runVersion},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// errUsage marks errors after which the usage was printed.
var errUsage = errors.New("usage")

// run dispatches to a subcommand and returns the exit code: 0, 1 on failure,
// 2 on a usage error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, args[1:], stdout, stderr)
		switch {
		case err == nil, errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, errUsage):
			return 2
		}
		fmt.Fprintf(stderr, "kloop %s: %v\n", c.name, err)
		return 1
	}
	fmt.Fprintf(stderr, "kloop: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: kloop <command> [flags]\n\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-12s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'kloop <command> -h' for the flags of a command.")
}
