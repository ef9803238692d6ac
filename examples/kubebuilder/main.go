// Command kubebuilder is kubebuilder's cmd/main.go (the scaffold of
// `kubebuilder init`, v4) ported to kloop line by line: the same flags with
// the same defaults, a manager with secure metrics, health probes and
// leader election, and one controller. The controller is a small one that
// needs no CRD: every ConfigMap labelled kubebuilder.kloop.dev/mirror=true
// gets a Secret of the same name holding the same data, owned by the
// ConfigMap, and kept in step with it.
//
//	go run ./examples/kubebuilder --kubeconfig /tmp/kloop.kubeconfig --metrics-bind-address :8443
//
// (a kubeconfig from `go run ./cmd/kloop apiserver --kubeconfig-out
// /tmp/kloop.kubeconfig`, or any cluster's).
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kloop.dev/kloop/builder"
	"kloop.dev/kloop/client"
	"kloop.dev/kloop/client/config"
	"kloop.dev/kloop/controller/controllerutil"
	"kloop.dev/kloop/handler/predicate"
	"kloop.dev/kloop/manager"
	"kloop.dev/kloop/reconcile"
	"kloop.dev/kloop/webhook"
)

// mirrorLabel marks the ConfigMaps the controller mirrors.
const mirrorLabel = "kubebuilder.kloop.dev/mirror"

func main() {
	// ctrl.SetupSignalHandler()
	ctx, stop := manager.SignalContext(context.Background())
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		stop()
		os.Exit(1)
	}
}

// run is main with its arguments and its log's destination, for the test.
func run(ctx context.Context, args []string, logOut io.Writer) error {
	fs := flag.NewFlagSet("kubebuilder", flag.ContinueOnError)
	var metricsAddr, metricsCertPath, metricsCertName, metricsCertKey string
	var webhookCertPath, webhookCertName, webhookCertKey string
	var enableLeaderElection, secureMetrics, enableHTTP2, devel bool
	var probeAddr string
	fs.StringVar(&metricsAddr, "metrics-bind-address", "0", "The address the metrics endpoint binds to. "+
		"Use :8443 for HTTPS or :8080 for HTTP, or leave as 0 to disable the metrics service.")
	fs.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "The address the probe endpoint binds to.")
	fs.BoolVar(&enableLeaderElection, "leader-elect", false,
		"Enable leader election for controller manager. "+
			"Enabling this will ensure there is only one active controller manager.")
	fs.BoolVar(&secureMetrics, "metrics-secure", true,
		"If set, the metrics endpoint is served securely via HTTPS. Use --metrics-secure=false to use HTTP instead.")
	fs.StringVar(&webhookCertPath, "webhook-cert-path", "", "The directory that contains the webhook certificate.")
	fs.StringVar(&webhookCertName, "webhook-cert-name", "tls.crt", "The name of the webhook certificate file.")
	fs.StringVar(&webhookCertKey, "webhook-cert-key", "tls.key", "The name of the webhook key file.")
	fs.StringVar(&metricsCertPath, "metrics-cert-path", "",
		"The directory that contains the metrics server certificate.")
	fs.StringVar(&metricsCertName, "metrics-cert-name", "tls.crt", "The name of the metrics server certificate file.")
	fs.StringVar(&metricsCertKey, "metrics-cert-key", "tls.key", "The name of the metrics server key file.")
	fs.BoolVar(&enableHTTP2, "enable-http2", false,
		"If set, HTTP/2 will be enabled for the metrics server")
	// zap.Options{Development: true}.BindFlags: slog, Go's own logger.
	fs.BoolVar(&devel, "zap-devel", true, "Development mode: debug logs as text (false: info logs as JSON).")
	// ctrl.GetConfigOrDie's --kubeconfig (and --context).
	kubeconfig := config.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}

	// ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	var h slog.Handler = slog.NewJSONHandler(logOut, nil)
	if devel {
		h = slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: slog.LevelDebug})
	}
	setupLog := slog.New(h).With("logger", "setup")

	// if the enable-http2 flag is false (the default), http/2 should be
	// disabled due to its vulnerabilities (HTTP/2 Stream Cancellation and
	// Rapid Reset CVEs).
	var tlsOpts []func(*tls.Config)
	if !enableHTTP2 {
		tlsOpts = append(tlsOpts, func(c *tls.Config) {
			setupLog.Info("disabling http/2")
			c.NextProtos = []string{"http/1.1"}
		})
	}

	cfg, err := config.Load(kubeconfig.Options())
	if err != nil {
		return fmt.Errorf("unable to get kubeconfig: %w", err)
	}
	opts := manager.Options{
		Logger:                 slog.New(h),
		MetricsBindAddress:     metricsAddr,
		HealthProbeBindAddress: probeAddr,
		LeaderElection:         enableLeaderElection,
		LeaderElectionID:       "a1b2c3d4.kubebuilder.kloop.dev",
		// webhook.NewServer(webhook.Options{TLSOpts: …, CertDir: …}): it
		// serves once a webhook is registered (builder.WebhookManagedBy);
		// this operator has none.
		Webhook: webhook.Options{TLSOptions: tlsOpts},
	}
	if webhookCertPath != "" {
		opts.Webhook.CertDir = webhookCertPath
		opts.Webhook.CertName = webhookCertName
		opts.Webhook.KeyName = webhookCertKey
	}
	if secureMetrics && metricsAddr != "0" {
		// metricsserver.Options{SecureServing: true, FilterProvider:
		// filters.WithAuthenticationAndAuthorization, CertDir: …}
		opts.MetricsSecureServing = true
		opts.MetricsAuth = true
		opts.MetricsTLSOptions = tlsOpts
		// Without --metrics-cert-path, a self-signed certificate: for
		// development only (kubebuilder's scaffold says the same).
		if metricsCertPath != "" {
			opts.MetricsCertDir = metricsCertPath
			opts.MetricsCertName = metricsCertName
			opts.MetricsKeyName = metricsCertKey
		}
	}
	mgr, err := manager.New(cfg, opts)
	if err != nil {
		return fmt.Errorf("unable to start manager: %w", err)
	}

	if err := (&MirrorReconciler{Client: mgr.Client()}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("unable to create controller mirror: %w", err)
	}

	if err := mgr.AddHealthzCheck("healthz", manager.Ping); err != nil {
		return fmt.Errorf("unable to set up health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", manager.Ping); err != nil {
		return fmt.Errorf("unable to set up ready check: %w", err)
	}

	setupLog.Info("starting manager")
	if err := mgr.Start(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("problem running manager: %w", err)
	}
	return nil
}

// MirrorReconciler keeps a Secret beside every labelled ConfigMap (the
// scaffold's internal/controller/<kind>_controller.go).
type MirrorReconciler struct {
	Client *client.Client
}

// SetupWithManager sets up the controller with the Manager.
func (r *MirrorReconciler) SetupWithManager(mgr *manager.Manager) error {
	labelled, err := predicate.LabelSelector(metav1.LabelSelector{MatchLabels: map[string]string{mirrorLabel: "true"}})
	if err != nil {
		return err
	}
	return builder.ControllerManagedBy(mgr).
		Named("mirror").
		For(&corev1.ConfigMap{}, builder.WithPredicates(labelled)).
		Owns(&corev1.Secret{}).
		Complete(r)
}

// Reconcile makes the ConfigMap's Secret hold its data.
func (r *MirrorReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	log := reconcile.LoggerFrom(ctx)
	var cm corev1.ConfigMap
	if err := r.Client.Get(ctx, req.NamespacedName, &cm); err != nil {
		// Gone: its Secret goes with it (an owner reference).
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if cm.Labels[mirrorLabel] != "true" || cm.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	secret := &corev1.Secret{}
	secret.Namespace, secret.Name = cm.Namespace, cm.Name
	op, err := controllerutil.CreateOrUpdate(ctx, r.Client, secret, func() error {
		secret.Data = make(map[string][]byte, len(cm.Data))
		for k, v := range cm.Data {
			secret.Data[k] = []byte(v)
		}
		return controllerutil.SetControllerReference(&cm, secret, r.Client.Scheme())
	})
	if apierrors.IsAlreadyExists(err) {
		// Created by someone else since the cache was read: look again.
		return reconcile.Result{}, err
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("mirroring into Secret %s: %w", req, err)
	}
	if op != controllerutil.OperationResultNone {
		log.Info("mirrored", "operation", op, "keys", len(cm.Data))
	}
	return reconcile.Result{}, nil
}
