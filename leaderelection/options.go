package leaderelection

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// JitterFactor stretches the wait between two attempts to acquire the lease
// by a random factor in [1, 1+JitterFactor), as client-go's leaderelection
// does, so that candidates started together do not hit the API server in
// lockstep. RenewDeadline must exceed RetryPeriod×JitterFactor.
const JitterFactor = 1.2

// serviceAccountNamespace is the file from which a pod learns its namespace.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// Options configure an Elector. The zero value works except for Name, which
// is required (it is the election ID).
type Options struct {
	// Namespace of the Lease. Default: the pod's namespace when running in a
	// cluster (read from the service account's namespace file), otherwise
	// "default".
	Namespace string
	// Name of the Lease: the election ID, shared by all replicas that take
	// part in one election. Required; it must be a DNS subdomain.
	Name string
	// Identity of this candidate, written as the Lease's holderIdentity while
	// it leads. It must be unique among the candidates: a candidate that
	// finds its own identity in the Lease takes it at once, as client-go
	// does (so a restarted process with a fixed identity resumes without
	// waiting). Default: the hostname, "_" and a random suffix, so that two
	// processes on one host never share an identity.
	Identity string

	// LeaseDuration is how long candidates that are not leading wait, after
	// they last observed a change of the Lease, before they take it over. It
	// is written to the Lease in whole seconds (leaseDurationSeconds), so it
	// must be a whole number of seconds, at most math.MaxInt32 seconds.
	// Default: 15 s.
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader keeps leading without a
	// successful renewal; it then gives leadership up. Measured from the
	// start of the last renewal that succeeded. Default: 10 s.
	RenewDeadline time.Duration
	// RetryPeriod is the wait between renewals, between failed renewals, and
	// (jittered by JitterFactor) between attempts to acquire. Default: 2 s.
	RetryPeriod time.Duration

	// ReleaseOnCancel: when the context of Run is cancelled, the leader
	// releases the Lease (empty holder, leaseDurationSeconds 1) after its
	// onStarted function has returned, so that another replica takes over at
	// once instead of after LeaseDuration. Default (nil): true. Set it to
	// new(false) to keep the lease until it expires.
	ReleaseOnCancel *bool

	// Clock is the source of time. Default: RealClock (testing/synctest
	// makes it deterministic in tests).
	Clock Clock
	// Logger receives the elector's log. Default: slog.Default().
	Logger *slog.Logger
	// Metrics, when set, is given a reader of the elector's Status once, by
	// New (for leader_election_master_status). Default: none.
	Metrics MetricsProvider
}

// MetricsProvider exposes electors' statistics, for example to Prometheus
// (kloop.dev/kloop/metrics). The package keeps no global provider.
type MetricsProvider interface {
	// Register is called once by New with the election's name (the Lease's
	// name, as client-go's leader_election_master_status{name}) and a reader
	// of the elector's status. read fills *Status with a consistent snapshot;
	// it may be called from any goroutine at any time. A provider refuses a
	// name it already has (kloop.dev/kloop/metrics does): New then fails
	// with its error.
	Register(name string, read func(*Status)) error
}

func (o *Options) setDefaults() error {
	if o.Namespace == "" {
		o.Namespace = "default"
		if b, err := os.ReadFile(serviceAccountNamespace); err == nil {
			if ns := strings.TrimSpace(string(b)); ns != "" {
				o.Namespace = ns
			}
		}
	}
	if o.Identity == "" {
		host, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("leaderelection: default identity: %w", err)
		}
		var suffix [8]byte
		if _, err := io.ReadFull(rand.Reader, suffix[:]); err != nil {
			return fmt.Errorf("leaderelection: default identity: %w", err)
		}
		o.Identity = host + "_" + hex.EncodeToString(suffix[:])
	}
	if o.LeaseDuration == 0 {
		o.LeaseDuration = 15 * time.Second
	}
	if o.RenewDeadline == 0 {
		o.RenewDeadline = 10 * time.Second
	}
	if o.RetryPeriod == 0 {
		o.RetryPeriod = 2 * time.Second
	}
	if o.ReleaseOnCancel == nil {
		o.ReleaseOnCancel = new(true)
	}
	if o.Clock == nil {
		o.Clock = RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return nil
}

func (o *Options) validate() error {
	var errs []error
	if o.Name == "" {
		errs = append(errs, errors.New("Name (the election ID) is required"))
	} else if msgs := validation.IsDNS1123Subdomain(o.Name); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("Name %q: %s", o.Name, strings.Join(msgs, "; ")))
	}
	if msgs := validation.IsDNS1123Label(o.Namespace); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("Namespace %q: %s", o.Namespace, strings.Join(msgs, "; ")))
	}
	switch {
	case o.LeaseDuration < time.Second:
		errs = append(errs, fmt.Errorf("LeaseDuration %v must be at least 1s", o.LeaseDuration))
	case o.LeaseDuration > math.MaxInt32*time.Second:
		errs = append(errs, fmt.Errorf("LeaseDuration %v must be at most %ds (the Lease stores leaseDurationSeconds as an int32)", o.LeaseDuration, math.MaxInt32))
	case o.LeaseDuration%time.Second != 0:
		errs = append(errs, fmt.Errorf("LeaseDuration %v must be a whole number of seconds (the Lease stores leaseDurationSeconds)", o.LeaseDuration))
	}
	if o.RenewDeadline <= 0 {
		errs = append(errs, fmt.Errorf("RenewDeadline %v must be greater than zero", o.RenewDeadline))
	}
	if o.RetryPeriod <= 0 {
		errs = append(errs, fmt.Errorf("RetryPeriod %v must be greater than zero", o.RetryPeriod))
	}
	if o.LeaseDuration <= o.RenewDeadline {
		errs = append(errs, fmt.Errorf("LeaseDuration %v must be greater than RenewDeadline %v", o.LeaseDuration, o.RenewDeadline))
	}
	if o.RenewDeadline <= time.Duration(JitterFactor*float64(o.RetryPeriod)) {
		errs = append(errs, fmt.Errorf("RenewDeadline %v must be greater than RetryPeriod %v × JitterFactor %v", o.RenewDeadline, o.RetryPeriod, JitterFactor))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("leaderelection: invalid options: %w", err)
	}
	return nil
}
