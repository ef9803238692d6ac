package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"kloop.dev/kloop/apiserver/internal/garbagecollector"
	"kloop.dev/kloop/apiserver/internal/inproc"
	"kloop.dev/kloop/controller"
	"kloop.dev/kloop/handler"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/reconcile"
)

// What kube-controller-manager does beside kube-apiserver that clients see
// as API semantics, the embedded server does beside its API with
// controllers of its own, asynchronously, as kube does: the default
// ServiceAccount and the kube-root-ca.crt ConfigMap of every namespace
// (kube's serviceaccount and root-ca-cert-publisher controllers), and
// garbage collection (gc.go). They run on kloop's informer, work queue and
// controller packages, reach the API in process (inproc.Transport) and
// are authorized by RBAC as kube-controller-manager's are with
// --use-service-account-credentials: shared informers as
// system:kube-controller-manager, each controller's writes as its
// ServiceAccount in kube-system (system:controller:<name> in the bootstrap
// policy). They run while the server serves (Serve).

// controllerManagerUser is kube-controller-manager's own user.
const controllerManagerUser = "system:kube-controller-manager"

// controllerUserAgent is the user agent of the server's controllers: field
// managers are named after its first segment, kube-controller-manager, as
// kube's controllers' writes are.
func controllerUserAgent(controller string) string {
	return "kube-controller-manager/" + kubeGitVersion + " (kloop)/" + controller
}

// kubeGitVersion is the Kubernetes version the server follows.
const kubeGitVersion = "v1.37.2"

// Names kube's controllers give what they create.
const (
	// defaultServiceAccount is the ServiceAccount every namespace gets.
	defaultServiceAccount = "default"
	// rootCAConfigMap is the ConfigMap with the cluster's CA in every
	// namespace, and rootCADescription the annotation it carries.
	rootCAConfigMap   = "kube-root-ca.crt"
	rootCADescription = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. " +
		"No other usage is guaranteed across distributions of Kubernetes clusters."
)

// controllerSet is the server's controllers while they run.
type controllerSet struct {
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	stopped func() // after they stopped
}

// stop cancels the controllers and waits for them.
func (c *controllerSet) stop() {
	c.cancel()
	c.wg.Wait()
	if c.stopped != nil {
		c.stopped()
	}
}

// startControllers starts the server's controllers; they run until ctx is
// cancelled or stop is called. What needs no request is made here (the
// garbage collector included, so that deletions take its finalizers from
// the moment the server serves); the informers, which ask discovery, are
// made in the background, so that the server is ready at once.
func (s *Server) startControllers(ctx context.Context) (*controllerSet, error) {
	ctx, cancel := context.WithCancel(ctx)
	set := &controllerSet{cancel: cancel, stopped: func() {
		s.gcMu.Lock()
		s.gc = nil // deletions take the collector's finalizers no more
		s.gcMu.Unlock()
	}}
	fail := func(err error) (*controllerSet, error) {
		set.stop()
		return nil, fmt.Errorf("apiserver: controllers: %w", err)
	}
	kcm, err := s.inProcessConfig(UserInfo{Name: controllerManagerUser}, controllerUserAgent("shared-informers"))
	if err != nil {
		return fail(err)
	}
	var gc *garbagecollector.Collector
	if !s.opts.GarbageCollector.Disabled {
		if gc, err = s.newGarbageCollector(); err != nil {
			return fail(fmt.Errorf("garbage collector: %w", err))
		}
	}
	configs := map[string]*rest.Config{}
	for _, name := range []string{"service-account-controller", "root-ca-cert-publisher"} {
		if configs[name], err = s.controllerConfig(name); err != nil {
			return fail(err)
		}
	}
	set.wg.Go(func() {
		// (Its default scheme, all of client-go's types, takes
		// milliseconds to make.)
		factory, err := informer.NewFactory(kcm, informer.FactoryOptions{Logger: s.opts.Logger})
		if err != nil {
			s.opts.Logger.Error("apiserver: controllers' informers", "err", err)
			return
		}
		var runners []func(context.Context) error
		for _, c := range []struct {
			name string // its ServiceAccount in kube-system
			add  func(ctx context.Context, factory *informer.Factory, client inproc.Client) (func(context.Context) error, error)
		}{
			{"service-account-controller", s.serviceAccountController},
			{"root-ca-cert-publisher", s.rootCAPublisher},
		} {
			run, err := c.add(ctx, factory, inproc.NewClient(configs[c.name]))
			if err != nil {
				if ctx.Err() == nil {
					s.opts.Logger.Error("apiserver: starting a controller", "controller", c.name, "err", err)
				}
				continue
			}
			runners = append(runners, run)
		}
		if gc != nil {
			run, err := s.runGarbageCollector(gc, factory)
			if err != nil {
				if ctx.Err() == nil {
					s.opts.Logger.Error("apiserver: starting the garbage collector", "err", err)
				}
			} else {
				runners = append(runners, run)
			}
		}
		set.wg.Go(func() {
			if err := factory.Start(ctx); err != nil {
				s.opts.Logger.Error("apiserver: controllers' informers", "err", err)
			}
		})
		for _, run := range runners {
			set.wg.Go(func() {
				if err := run(ctx); err != nil && ctx.Err() == nil {
					s.opts.Logger.Error("apiserver: controller stopped", "err", err)
				}
			})
		}
		// kube-controller-manager makes each controller's ServiceAccount
		// (--use-service-account-credentials) as its own user.
		kcmClient := inproc.NewClient(kcm)
		for _, name := range []string{"generic-garbage-collector", "namespace-controller", "root-ca-cert-publisher", "service-account-controller"} {
			sa := corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: metav1.ObjectMeta{Name: name}}
			if err := kcmClient.Do(ctx, http.MethodPost, "/api/v1/namespaces/kube-system/serviceaccounts", "", sa, nil); err != nil && !apierrors.IsAlreadyExists(err) && ctx.Err() == nil {
				s.opts.Logger.Error("apiserver: creating a controller's ServiceAccount", "name", name, "err", err)
			}
		}
	})
	return set, nil
}

// newGarbageCollector makes the server's garbage collector, as its
// ServiceAccount kube-system/generic-garbage-collector, and registers its
// metrics. From then on deletions take its finalizers (gcEnabled).
func (s *Server) newGarbageCollector() (*garbagecollector.Collector, error) {
	cfg, err := s.controllerConfig("generic-garbage-collector")
	if err != nil {
		return nil, err
	}
	o := s.opts.GarbageCollector
	gc, err := garbagecollector.New(garbagecollector.Options{Config: cfg, Workers: o.Workers, Logger: s.opts.Logger,
		QueueMetrics: o.QueueMetrics, ControllerMetrics: o.ControllerMetrics})
	if err != nil {
		return nil, err
	}
	if o.Metrics != nil {
		if err := o.Metrics.Register("garbage_collector", func(st *GarbageCollectorStats) { *st = gcStats(gc) }); err != nil {
			return nil, err
		}
	}
	s.gcMu.Lock()
	s.gc = gc
	s.gcMu.Unlock()
	return gc, nil
}

// runGarbageCollector returns the runner of the garbage collector: every
// change of a CRD makes it read discovery again (it follows the kinds
// served); when it stops, deletions take its finalizers no more.
func (s *Server) runGarbageCollector(gc *garbagecollector.Collector, f *informer.Factory) (func(context.Context) error, error) {
	crds, err := f.Metadata(crdGVR.GroupVersion().WithKind("CustomResourceDefinition"), informer.Scope{})
	if err != nil {
		return nil, err
	}
	trigger := func() { gc.Trigger() }
	if _, err := crds.AddHandler(informer.HandlerFuncs[*metav1.PartialObjectMetadata]{
		AddFunc:    func(*metav1.PartialObjectMetadata, bool) { trigger() },
		UpdateFunc: func(_, _ *metav1.PartialObjectMetadata) { trigger() },
		DeleteFunc: func(informer.Deleted[*metav1.PartialObjectMetadata]) { trigger() },
	}, informer.HandlerOptions{Inline: true}); err != nil {
		return nil, err
	}
	return gc.Start, nil
}

// gcEnabled reports whether deletions take the garbage collector's
// finalizers: while it runs, as kube-apiserver's with
// --enable-garbage-collector (a server whose collector does not run,
// Options.GarbageCollector.Disabled or a server not serving, adds none:
// nothing would remove them).
func (s *Server) gcEnabled() bool {
	s.gcMu.Lock()
	defer s.gcMu.Unlock()
	return s.gc != nil
}

// GarbageCollectorStats returns the garbage collector's counters; zero when
// it does not run.
func (s *Server) GarbageCollectorStats() GarbageCollectorStats {
	s.gcMu.Lock()
	gc := s.gc
	s.gcMu.Unlock()
	if gc == nil {
		return GarbageCollectorStats{}
	}
	return gcStats(gc)
}

func gcStats(gc *garbagecollector.Collector) GarbageCollectorStats {
	var st garbagecollector.Stats
	gc.ReadStats(&st)
	return GarbageCollectorStats{DeletionsAttempted: st.DeletionsAttempted, DeletionsDone: st.DeletionsDone, DeletionsFailed: st.DeletionsFailed,
		Orphaned: st.Orphaned, FinalizersRemoved: st.FinalizersRemoved, GraphNodes: st.GraphNodes, Monitors: st.Monitors, ResourceSyncErrors: st.ResourceSyncErrors}
}

// controllerConfig is the in-process client configuration of the
// controller whose ServiceAccount in kube-system is name.
func (s *Server) controllerConfig(name string) (*rest.Config, error) {
	return s.inProcessConfig(UserInfo{
		Name:   "system:serviceaccount:kube-system:" + name,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system"},
	}, controllerUserAgent(name))
}

// newController returns a kloop controller for one of the server's
// controllers, logging to the server's logger.
func (s *Server) newController(name string, r reconcile.Func, workers int) (*controller.Controller, error) {
	return controller.New(name, r, controller.Options{MaxConcurrentReconciles: workers, Logger: s.opts.Logger})
}

// namespaceRequests maps an object to the request of its namespace.
func namespaceRequests(_ context.Context, o handler.Object) []reconcile.Request {
	if o.GetNamespace() == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.GetNamespace()}}}
}

// nameRequests maps a namespace to its request.
// namespaceSource is a source of the namespaces' events that enqueues, for
// each namespace created or updated, the request named after it.
func namespaceSource(namespaces *informer.Informer[*corev1.Namespace]) (*informer.Source[*corev1.Namespace], error) {
	return informer.NewSource(namespaces, handler.Funcs{
		CreateFunc: func(ctx context.Context, e handler.CreateEvent, q handler.Enqueuer) {
			enqueueAll(q, nameRequests(ctx, e.Object))
		},
		UpdateFunc: func(ctx context.Context, e handler.UpdateEvent, q handler.Enqueuer) {
			enqueueAll(q, nameRequests(ctx, e.ObjectNew))
		},
	}, informer.SourceOptions{Name: "namespaces"})
}

func nameRequests(_ context.Context, o handler.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.GetName()}}}
}

// serviceAccountController makes the default ServiceAccount of every
// active namespace, as kube's serviceaccount controller: on a namespace's
// add or update, and on the deletion of a ServiceAccount, if the namespace
// has none named default it creates one (an already existing one, or a
// namespace that began terminating, is no error).
func (s *Server) serviceAccountController(ctx context.Context, f *informer.Factory, client inproc.Client) (func(context.Context) error, error) {
	namespaces, err := informer.InformerFor[*corev1.Namespace](f, informer.Scope{})
	if err != nil {
		return nil, err
	}
	sas, err := f.Metadata(corev1.SchemeGroupVersion.WithKind("ServiceAccount"), informer.Scope{FieldSelector: "metadata.name=" + defaultServiceAccount})
	if err != nil {
		return nil, err
	}
	c, err := s.newController("serviceaccount", func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		ns, ok := namespaces.Get("", req.Name)
		if !ok || ns.Status.Phase != corev1.NamespaceActive {
			return reconcile.Result{}, nil
		}
		if _, ok := sas.Get(req.Name, defaultServiceAccount); ok {
			return reconcile.Result{}, nil
		}
		sa := corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: metav1.ObjectMeta{Name: defaultServiceAccount, Namespace: req.Name}}
		err := client.Do(ctx, http.MethodPost, "/api/v1/namespaces/"+req.Name+"/serviceaccounts", "", sa, nil)
		if err != nil && !apierrors.IsAlreadyExists(err) && !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, nil
	}, 1)
	if err != nil {
		return nil, err
	}
	nsSrc, err := namespaceSource(namespaces)
	if err != nil {
		return nil, err
	}
	saSrc, err := informer.NewSource(sas, handler.Funcs{
		DeleteFunc: func(ctx context.Context, e handler.DeleteEvent, q handler.Enqueuer) {
			enqueueAll(q, namespaceRequests(ctx, e.Object))
		},
	}, informer.SourceOptions{Name: "serviceaccounts"})
	if err != nil {
		return nil, err
	}
	for _, src := range []controller.Source{nsSrc, saSrc} {
		if err := c.Watch(src); err != nil {
			return nil, err
		}
	}
	return c.Start, nil
}

// rootCAPublisher keeps a kube-root-ca.crt ConfigMap in every namespace
// with the cluster's CA, as kube's root-ca-cert-publisher: ca.crt is the
// certificate clients verify the server with (CAData: the self-signed
// certificate with TLS; empty without), the description annotation says
// what it is for. A namespace's add or update, and the update or deletion
// of its kube-root-ca.crt, make it create or restore the ConfigMap.
func (s *Server) rootCAPublisher(ctx context.Context, f *informer.Factory, client inproc.Client) (func(context.Context) error, error) {
	namespaces, err := informer.InformerFor[*corev1.Namespace](f, informer.Scope{})
	if err != nil {
		return nil, err
	}
	cms, err := informer.InformerFor[*corev1.ConfigMap](f, informer.Scope{FieldSelector: "metadata.name=" + rootCAConfigMap})
	if err != nil {
		return nil, err
	}
	data := map[string]string{"ca.crt": string(s.caPEM)}
	c, err := s.newController("root-ca-cert-publisher", func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		if _, ok := namespaces.Get("", req.Name); !ok {
			return reconcile.Result{}, nil
		}
		path := "/api/v1/namespaces/" + req.Name + "/configmaps"
		cm, ok := cms.Get(req.Name, rootCAConfigMap)
		if !ok {
			cm := corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
				ObjectMeta: metav1.ObjectMeta{Name: rootCAConfigMap, Namespace: req.Name, Annotations: map[string]string{"kubernetes.io/description": rootCADescription}},
				Data:       data}
			err := client.Do(ctx, http.MethodPost, path, "", cm, nil)
			if apierrors.IsNotFound(err) || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				return reconcile.Result{}, nil
			}
			return reconcile.Result{}, err
		}
		if mapsEqual(cm.Data, data) && cm.Annotations["kubernetes.io/description"] != "" {
			return reconcile.Result{}, nil
		}
		cm = cm.DeepCopy()
		cm.Data = data
		if cm.Annotations == nil {
			cm.Annotations = map[string]string{}
		}
		cm.Annotations["kubernetes.io/description"] = rootCADescription
		cm.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}
		return reconcile.Result{}, client.Do(ctx, http.MethodPut, path+"/"+rootCAConfigMap, "", cm, nil)
	}, 1)
	if err != nil {
		return nil, err
	}
	nsSrc, err := namespaceSource(namespaces)
	if err != nil {
		return nil, err
	}
	cmSrc, err := informer.NewSource(cms, handler.Funcs{
		UpdateFunc: func(ctx context.Context, e handler.UpdateEvent, q handler.Enqueuer) {
			enqueueAll(q, namespaceRequests(ctx, e.ObjectNew))
		},
		DeleteFunc: func(ctx context.Context, e handler.DeleteEvent, q handler.Enqueuer) {
			enqueueAll(q, namespaceRequests(ctx, e.Object))
		},
	}, informer.SourceOptions{Name: "configmaps"})
	if err != nil {
		return nil, err
	}
	for _, src := range []controller.Source{nsSrc, cmSrc} {
		if err := c.Watch(src); err != nil {
			return nil, err
		}
	}
	return c.Start, nil
}

func enqueueAll(q handler.Enqueuer, reqs []reconcile.Request) {
	for _, r := range reqs {
		q.Add(r)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
