package demo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"kloop.dev/kloop/apiserver"
	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/client"
	kconfig "kloop.dev/kloop/client/config"
	"kloop.dev/kloop/examples/cloud"
	"kloop.dev/kloop/examples/cloud/cloudclient"
	examplev1 "kloop.dev/kloop/examples/widget/api/v1"
	"kloop.dev/kloop/examples/widget/config"
	"kloop.dev/kloop/examples/widget/operator"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/manager"
)

// Options configure a demo run. The zero value works.
type Options struct {
	// Widgets is how many Widgets run at the end: half from a WidgetSet,
	// half made one by one. Default 100.
	Widgets int
	// CloudFailureRate is the fraction of cloud requests that fail (0 to
	// 1). Default 0.
	CloudFailureRate float64
	// CloudRateLimit is the requests a second the cloud answers before it
	// throttles. Default 500.
	CloudRateLimit float64
	// Workers is the Widget controller's number of workers. Default 8.
	Workers int
	// Kubeconfig, when set, runs the demo against that cluster (in a
	// namespace of its own, deleted at the end) instead of the embedded
	// API server. Default "": the embedded server.
	Kubeconfig string
	// Serve keeps everything running after the summary, until ctx ends,
	// for kubectl. Default false.
	Serve bool
	// Timeout bounds the run up to the summary. Default 3 minutes.
	Timeout time.Duration
	// Terminal redraws the progress in place (ANSI escapes) with a cell
	// per Widget; otherwise it is printed as plain lines. Default false.
	Terminal bool
	// Refresh is how often the progress is drawn. Default 200 ms on a
	// terminal, 1 s otherwise.
	Refresh time.Duration
	// LiveView is the address the manager's live view of the pipeline
	// (manager.Options.LiveViewBindAddress) listens on; its URL is
	// printed. Default "127.0.0.1:0" (a free loopback port); "0" turns it
	// off.
	LiveView string
	// Logger receives the manager's logs (reconcile errors, injected cloud
	// failures among them). Default: discarded, the progress is the
	// output.
	Logger *slog.Logger
}

func (o *Options) defaults() {
	if o.Widgets == 0 {
		o.Widgets = 100
	}
	if o.CloudRateLimit == 0 {
		o.CloudRateLimit = 500
	}
	if o.Workers == 0 {
		o.Workers = 8
	}
	if o.Timeout == 0 {
		o.Timeout = 3 * time.Minute
	}
	if o.Refresh == 0 {
		o.Refresh = time.Second
		if o.Terminal {
			o.Refresh = 200 * time.Millisecond
		}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.LiveView == "" {
		o.LiveView = "127.0.0.1:0"
	}
}

func (o *Options) validate() error {
	var errs []error
	if o.Widgets < 1 || o.Widgets > 20000 {
		errs = append(errs, fmt.Errorf("widgets %d: want 1 to 20000", o.Widgets))
	}
	if !(o.CloudFailureRate >= 0 && o.CloudFailureRate < 1) {
		errs = append(errs, fmt.Errorf("cloud failure rate %v: want at least 0 and below 1", o.CloudFailureRate))
	}
	if o.CloudRateLimit < 0 {
		errs = append(errs, fmt.Errorf("cloud rate limit %v is negative", o.CloudRateLimit))
	}
	if o.Workers < 1 {
		errs = append(errs, fmt.Errorf("workers %d: want at least 1", o.Workers))
	}
	if o.Timeout < 0 || o.Refresh < 0 {
		errs = append(errs, fmt.Errorf("negative timeout %v or refresh %v", o.Timeout, o.Refresh))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	return nil
}

// Run runs the demo, writing its progress and summary to out. It returns
// an error if the Widgets did not converge within Options.Timeout.
func Run(ctx context.Context, opts Options, out io.Writer) error {
	opts.defaults()
	if err := opts.validate(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p := &printer{out: out, terminal: opts.Terminal, start: time.Now()}
	var bg sync.WaitGroup // the servers and the manager, stopped by cancel
	defer bg.Wait()
	defer cancel()

	// 1. The API server.
	cfg, kubeconfig, err := apiServer(ctx, &opts, p, &bg)
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := examplev1.AddToScheme(scheme); err != nil {
		return err
	}
	crds, err := config.CRDs()
	if err != nil {
		return err
	}
	if err := apiservertest.InstallCRDs(ctx, cfg, crds...); err != nil {
		return err
	}
	admin, err := client.New(cfg, client.Options{Scheme: scheme, Logger: opts.Logger})
	if err != nil {
		return err
	}
	ns := "kloop-demo"
	if opts.Kubeconfig != "" {
		ns += "-" + randomSuffix()
	}
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreAlreadyExists(err) != nil {
		return err
	}
	p.line("namespace %s; watch it from another terminal:", ns)
	p.line("    kubectl --kubeconfig %s -n %s get widgets -w", kubeconfig, ns)

	// 2. The cloud.
	cl, err := cloud.New(cloud.Options{
		ProvisionDelay: time.Second, VisibilityDelay: time.Second,
		RateLimit: opts.CloudRateLimit, FailureRate: opts.CloudFailureRate, Logger: opts.Logger,
	})
	if err != nil {
		return err
	}
	cloudDone := make(chan error, 1)
	bg.Go(func() { cloudDone <- cl.Start(ctx) })
	select {
	case <-cl.Ready():
	case err := <-cloudDone:
		return err
	}
	p.line("local cloud at %s (instances pending 1s, invisible to describes for 1s, %.0f requests/s, %.0f%% failures)",
		cl.URL(), opts.CloudRateLimit, 100*opts.CloudFailureRate)

	// 3. The manager and the controllers.
	reg := prometheus.NewRegistry()
	mgr, err := manager.New(cfg, manager.Options{
		Cache:      informer.FactoryOptions{Scheme: scheme, DefaultNamespaces: []string{ns}},
		Logger:     opts.Logger,
		Registerer: reg,
		// "0" is off, as for the manager's other servers.
		LiveViewBindAddress: opts.LiveView,
	})
	if err != nil {
		return err
	}
	cc, err := cloudclient.New(cl.URL(), cloudclient.Options{})
	if err != nil {
		return err
	}
	if err := operator.AddToManager(mgr, cc, operator.Options{Workers: opts.Workers, ConsistencyWindow: 3 * time.Second}); err != nil {
		return err
	}
	view := newWidgetView()
	inf, err := mgr.Factory().ForObject(&examplev1.Widget{}, informer.Scope{Namespace: ns})
	if err != nil {
		return err
	}
	if _, err := inf.AddHandler(view.handler(), informer.HandlerOptions{}); err != nil {
		return err
	}
	mgrDone := make(chan error, 1)
	bg.Go(func() { mgrDone <- mgr.Start(ctx) })
	select {
	case <-mgr.Started():
	case err := <-mgrDone:
		return err
	}
	p.line("manager started: Widget controller (%d workers), WidgetSet controller", opts.Workers)
	if a := mgr.LiveViewAddr(); a != nil {
		p.line("live view of the pipeline at http://%s/", a)
	}

	// 4. The progress, drawn until the end.
	st := &stats{reg: reg, cloud: cl, view: view}
	progressCtx, stopProgress := context.WithCancel(ctx)
	var progress sync.WaitGroup
	progress.Go(func() { p.loop(progressCtx, opts.Refresh, st.render) })
	defer func() { stopProgress(); progress.Wait() }()

	// 5. The session.
	runCtx, cancelRun := context.WithTimeout(ctx, opts.Timeout)
	defer cancelRun()
	s := &session{c: admin, ns: ns, p: p, view: view, cloud: cl}
	cleanedUp := false
	if opts.Kubeconfig != "" {
		// However it ends, the cluster keeps no Widget whose finalizer
		// only this process could clear.
		defer func() {
			if cleanedUp {
				return
			}
			// The operator first: running, it would put the finalizers
			// back on Widgets that are not being deleted.
			cancel()
			bg.Wait()
			actx, cancelAbandon := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancelAbandon()
			p.line("removing the Widgets' finalizers and namespace %s", ns)
			if err := s.abandon(actx); err != nil {
				p.line("cleaning up namespace %s: %v (delete it by hand)", ns, err)
			}
		}()
	}
	if err := s.run(runCtx, opts.Widgets); err != nil {
		stopProgress()
		progress.Wait()
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return fmt.Errorf("demo: timed out after %v: %w", opts.Timeout, err)
		}
		return fmt.Errorf("demo: %w", err)
	}
	stopProgress()
	progress.Wait()
	sum, err := s.verify(ctx)
	if err != nil {
		return err
	}
	p.line("%s", st.render(false))
	p.line("converged in %.1fs: %s", time.Since(p.start).Seconds(), sum)
	if sum.leaked != 0 || sum.duplicated != 0 || sum.wrongSize != 0 || sum.running != opts.Widgets || sum.instances != opts.Widgets {
		return fmt.Errorf("demo: the end state is wrong: %s", sum)
	}

	if opts.Serve {
		p.line("serving until interrupted; try:")
		p.line("    kubectl --kubeconfig %s -n %s get widgets,widgetsets", kubeconfig, ns)
		p.line("    kubectl --kubeconfig %s -n %s apply -f - <<<'{\"apiVersion\":\"example.kloop.dev/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"mine\"},\"spec\":{\"region\":\"local-1\"}}'", kubeconfig, ns)
		// The progress goes on, for what kubectl does; it ends with ctx.
		progress.Go(func() { p.loop(ctx, opts.Refresh, st.render) })
		<-ctx.Done()
		return nil
	}
	if opts.Kubeconfig != "" {
		p.line("deleting namespace %s and its Widgets (their instances first)", ns)
		if err := s.cleanup(runCtx); err != nil {
			return fmt.Errorf("demo: cleaning up: %w", err)
		}
		cleanedUp = true
	}
	return nil
}

// apiServer starts the embedded API server, or loads the kubeconfig.
func apiServer(ctx context.Context, opts *Options, p *printer, bg *sync.WaitGroup) (*rest.Config, string, error) {
	if opts.Kubeconfig != "" {
		cfg, err := kconfig.Load(kconfig.Options{Kubeconfig: opts.Kubeconfig})
		if err != nil {
			return nil, "", err
		}
		p.line("cluster at %s (kubeconfig %s)", cfg.Host, opts.Kubeconfig)
		return cfg, opts.Kubeconfig, nil
	}
	srv, err := apiserver.New(apiserver.Options{TLS: true})
	if err != nil {
		return nil, "", err
	}
	done := make(chan error, 1)
	bg.Go(func() { done <- srv.Start(ctx) })
	select {
	case <-srv.Ready():
	case err := <-done:
		return nil, "", fmt.Errorf("api server: %w", err)
	}
	dir, err := os.MkdirTemp("", "kloop-demo-")
	if err != nil {
		return nil, "", err
	}
	bg.Go(func() { <-ctx.Done(); os.RemoveAll(dir) })
	path := filepath.Join(dir, "kubeconfig")
	if err := srv.WriteKubeconfig(path); err != nil {
		return nil, "", err
	}
	p.line("embedded API server at %s (kubeconfig %s)", srv.URL(), path)
	return srv.RESTConfig(), path, nil
}

func randomSuffix() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// widgetView follows the Widgets through an informer handler: their
// states for the progress, and the watch events counted.
type widgetView struct {
	events atomic.Int64

	mu      sync.Mutex // guards widgets
	widgets map[string]widgetState
}

type widgetState struct {
	uid      types.UID
	state    string // a WidgetStatus.State, or "" (not reconciled yet)
	current  bool   // the status describes the current generation
	deleting bool
}

func newWidgetView() *widgetView { return &widgetView{widgets: map[string]widgetState{}} }

func (v *widgetView) handler() informer.HandlerFuncs[informer.Object] {
	set := func(obj informer.Object) {
		w, ok := obj.(*examplev1.Widget)
		if !ok {
			return
		}
		v.mu.Lock()
		v.widgets[w.Name] = widgetState{uid: w.UID, state: w.Status.State,
			current: w.Status.ObservedGeneration == w.Generation, deleting: !w.DeletionTimestamp.IsZero()}
		v.mu.Unlock()
	}
	return informer.HandlerFuncs[informer.Object]{
		AddFunc:    func(obj informer.Object, _ bool) { v.events.Add(1); set(obj) },
		UpdateFunc: func(_, obj informer.Object) { v.events.Add(1); set(obj) },
		DeleteFunc: func(d informer.Deleted[informer.Object]) {
			v.events.Add(1)
			if d.Object == nil {
				return
			}
			v.mu.Lock()
			delete(v.widgets, d.Object.GetName())
			v.mu.Unlock()
		},
	}
}

// snapshot returns the Widgets' states by name.
func (v *widgetView) snapshot() map[string]widgetState {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make(map[string]widgetState, len(v.widgets))
	for k, s := range v.widgets {
		out[k] = s
	}
	return out
}

// glyph is a Widget's cell in the terminal grid.
func (s widgetState) glyph() (byte, string) {
	switch {
	case s.deleting:
		return 'd', "Deleting"
	case s.state == examplev1.StateRunning && s.current:
		return 'R', "Running"
	case s.state == examplev1.StateFailed:
		return 'F', "Failed"
	case s.state == "":
		return '.', "New"
	default:
		return 'p', "Pending"
	}
}

// stats renders the pipeline's counters.
type stats struct {
	reg   *prometheus.Registry
	cloud *cloud.Cloud
	view  *widgetView
}

// render returns the progress: one line of counters, and on a terminal
// the grid of Widgets.
func (s *stats) render(grid bool) string {
	fams, _ := s.reg.Gather()
	byName := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		byName[f.GetName()] = f
	}
	sum := func(name string, want map[string]string) float64 {
		f := byName[name]
		if f == nil {
			return 0
		}
		total := 0.0
	metrics:
		for _, m := range f.GetMetric() {
			for k, v := range want {
				ok := false
				for _, l := range m.GetLabel() {
					if l.GetName() == k && l.GetValue() == v {
						ok = true
					}
				}
				if !ok {
					continue metrics
				}
			}
			switch {
			case m.Counter != nil:
				total += m.GetCounter().GetValue()
			case m.Gauge != nil:
				total += m.GetGauge().GetValue()
			}
		}
		return total
	}
	w := map[string]string{"controller": "widget"}
	res := func(r string) float64 {
		return sum("controller_runtime_reconcile_total", map[string]string{"controller": "widget", "result": r})
	}
	snap := s.view.snapshot()
	counts := map[string]int{}
	names := make([]string, 0, len(snap))
	for n, st := range snap {
		_, label := st.glyph()
		counts[label]++
		names = append(names, n)
	}
	cs := s.cloud.Stats()
	var b strings.Builder
	fmt.Fprintf(&b, "widgets %d: %d Running, %d Pending, %d New, %d Deleting, %d Failed\n",
		len(snap), counts["Running"], counts["Pending"], counts["New"], counts["Deleting"], counts["Failed"])
	fmt.Fprintf(&b, "pipeline: %d watch events, queue depth %.0f, %.0f reconciles in flight; reconciles: %.0f ok, %.0f requeue-after, %.0f errors, %.0f terminal\n",
		s.view.events.Load(), sum("workqueue_depth", w), sum("controller_runtime_active_workers", w),
		res("success"), res("requeue_after"), res("error"),
		sum("controller_runtime_terminal_reconcile_errors_total", w))
	var reqs int64
	for _, n := range cs.Requests {
		reqs += n
	}
	fmt.Fprintf(&b, "cloud: %d instances live, %d created, %d requests, %d throttled, %d failed",
		cs.Live, cs.Created, reqs, cs.Throttled, cs.Failed)
	if grid {
		slices.SortFunc(names, compareNames)
		b.WriteString("\n")
		const width = 64
		for i, n := range names {
			if i > 0 && i%width == 0 {
				b.WriteString("\n")
			}
			g, _ := snap[n].glyph()
			b.WriteByte(g)
		}
		b.WriteString("\n(R Running, p Pending, . New, d Deleting, F Failed)")
	}
	return b.String()
}

// compareNames orders fleet-2 before fleet-10.
func compareNames(a, b string) int {
	pa, na := splitIndex(a)
	pb, nb := splitIndex(b)
	if c := strings.Compare(pa, pb); c != 0 {
		return c
	}
	return na - nb
}

func splitIndex(s string) (string, int) {
	i := strings.LastIndexByte(s, '-')
	n := 0
	for _, c := range s[i+1:] {
		if c < '0' || c > '9' {
			return s, 0
		}
		n = n*10 + int(c-'0')
	}
	return s[:i], n
}

// printer writes the demo's lines and its progress block: on a terminal
// the block is redrawn in place below the lines.
type printer struct {
	out      io.Writer
	terminal bool
	start    time.Time

	mu    sync.Mutex // guards block and the writes to out
	block int        // lines of the progress block drawn last (terminal)
}

func (p *printer) stamp() string { return fmt.Sprintf("%6.1fs  ", time.Since(p.start).Seconds()) }

// line prints a line (above the progress block, on a terminal).
func (p *printer) line(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.erase()
	msg := fmt.Sprintf(format, args...)
	fmt.Fprint(p.out, indent(p.stamp(), msg)+"\n")
	p.block = 0
}

// erase removes the progress block. p.mu is held.
func (p *printer) erase() {
	if p.terminal && p.block > 0 {
		fmt.Fprintf(p.out, "\x1b[%dA\x1b[J", p.block)
		p.block = 0
	}
}

// loop draws render's output every period until ctx ends.
func (p *printer) loop(ctx context.Context, period time.Duration, render func(grid bool) string) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			p.mu.Lock()
			p.erase()
			p.mu.Unlock()
			return
		case <-t.C:
		}
		text := render(p.terminal)
		p.mu.Lock()
		if p.terminal {
			p.erase()
			fmt.Fprint(p.out, text+"\n")
			p.block = strings.Count(text, "\n") + 1
		} else {
			fmt.Fprint(p.out, indent(p.stamp(), text)+"\n")
		}
		p.mu.Unlock()
	}
}

func indent(first, text string) string {
	pad := strings.Repeat(" ", len(first))
	return first + strings.ReplaceAll(text, "\n", "\n"+pad)
}
