package config

import "flag"

// Flags holds the values of the --kubeconfig and --context flags that
// RegisterFlags registered; read them with Options after parsing.
type Flags struct {
	// Kubeconfig is the value of --kubeconfig.
	Kubeconfig string
	// Context is the value of --context.
	Context string
}

// RegisterFlags registers --kubeconfig and --context, as kubectl's, on fs
// (flag.CommandLine when fs is nil) and returns where their values land.
// For spf13/pflag, register on a flag.FlagSet and add it with
// pflag.FlagSet.AddGoFlagSet.
func RegisterFlags(fs *flag.FlagSet) *Flags {
	if fs == nil {
		fs = flag.CommandLine
	}
	f := &Flags{}
	fs.StringVar(&f.Kubeconfig, "kubeconfig", "", "Path to the kubeconfig file to use (default: $KUBECONFIG, else in-cluster, else ~/.kube/config)")
	fs.StringVar(&f.Context, "context", "", "The name of the kubeconfig context to use (default: its current-context)")
	return f
}

// Options returns Options with the flags' values; the other fields are
// their defaults.
func (f *Flags) Options() Options {
	return Options{Kubeconfig: f.Kubeconfig, Context: f.Context}
}
