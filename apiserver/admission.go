package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	evanphx "gopkg.in/evanphx/json-patch.v4"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apiserver/pkg/admission"
	celplugin "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/cel/environment"

	"kloop.dev/kloop/apiserver/internal/jsontree"
	"kloop.dev/kloop/apiserver/internal/rbac"
	"kloop.dev/kloop/apiserver/storage"
)

// Admission webhooks: the MutatingWebhookConfigurations and
// ValidatingWebhookConfigurations stored in the server are called on every
// write of the resources their rules name, as kube-apiserver's
// MutatingAdmissionWebhook and ValidatingAdmissionWebhook plugins call them
// (k8s.io/apiserver/pkg/admission/plugin/webhook): mutating webhooks one
// after the other, in the order of their configurations' names, their JSON
// patches applied (and reinvoked once when a later one changed the object,
// for reinvocationPolicy IfNeeded); then the server's own defaulting and
// validation (the schema of a custom resource); then validating webhooks,
// all at once. rules (operations, groups, versions, resources and
// sub-resources, scope), matchPolicy Equivalent (the object converted to a
// version the rules name), namespaceSelector, objectSelector,
// matchConditions (kube-apiserver's CEL), failurePolicy, sideEffects with
// dry runs, timeoutSeconds and admissionReviewVersions are honoured; a
// denial is the webhook's Status, a failure to call it kube-apiserver's
// 500, its warnings are Warning headers.

// The stored webhook configurations.
const (
	mutatingConfigs   = "admissionregistration.k8s.io/mutatingwebhookconfigurations"
	validatingConfigs = "admissionregistration.k8s.io/validatingwebhookconfigurations"
)

// defaultWebhookTimeout is a webhook's timeoutSeconds when it sets none.
const defaultWebhookTimeout = 10 * time.Second

// The operations of admission.
const (
	opCreate = "CREATE"
	opUpdate = "UPDATE"
	opDelete = "DELETE"
)

// admissionCall is what admission needs of a write's request; its zero
// value (no request) stands for the server's own writes, which no webhook
// sees (kube-apiserver's controllers write through the API, but the
// embedded server has none of them). It is a value in writeOpts and reads
// the request only when a webhook is called (prepare).
type admissionCall struct {
	r *http.Request // nil: no admission
	// optionsKind is the kind of the write's options: CreateOptions,
	// UpdateOptions, PatchOptions, DeleteOptions.
	optionsKind string

	// Set by prepare.
	ctx  context.Context
	user *identity
	// options is the write's options object, as the AdmissionReview
	// carries it.
	options map[string]any
}

// newAdmissionCall returns the admission view of a write request with
// options of kind optionsKind.
func newAdmissionCall(r *http.Request, optionsKind string) admissionCall {
	return admissionCall{r: r, optionsKind: optionsKind}
}

// prepare reads what webhooks are sent from the request, once; it is
// called before any webhook is (and before validating webhooks are called
// concurrently).
func (c *admissionCall) prepare() {
	if c.ctx != nil {
		return
	}
	c.ctx, c.user = c.r.Context(), userFrom(c.r)
	q := c.r.URL.Query()
	opts := map[string]any{"kind": c.optionsKind, "apiVersion": "meta.k8s.io/v1"}
	if dry := q["dryRun"]; len(dry) > 0 {
		opts["dryRun"] = toAnySlice(dry)
	}
	if fm := q.Get("fieldManager"); fm != "" {
		opts["fieldManager"] = fm
	}
	if fv := q.Get("fieldValidation"); fv != "" {
		opts["fieldValidation"] = fv
	}
	if c.optionsKind == "PatchOptions" && q.Get("force") == "true" {
		opts["force"] = true
	}
	c.options = opts
}

// admissionActive reports whether any webhook configuration is stored: a
// write calls no webhook, and reads nothing for them, without one.
func (s *Server) admissionActive() bool {
	for _, res := range []string{mutatingConfigs, validatingConfigs} {
		if l, err := s.store.List(res, storage.ListOptions{Limit: 1}); err == nil && len(l.Objects) > 0 {
			return true
		}
	}
	return false
}

func toAnySlice(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// admissionAttrs are one write's admission attributes.
type admissionAttrs struct {
	call        *admissionCall
	op          string
	k           *kind // the kind of the request
	subresource string
	namespace   string
	name        string
	// obj and old are the new and the current object, stored form; obj is
	// nil for a delete, old for a create.
	obj, old map[string]any
	dryRun   bool
	// options overrides call.options (DeleteOptions).
	options map[string]any
}

// admissionHook is one webhook of a configuration, prepared for calls.
type admissionHook struct {
	config   string
	mutating bool
	hook     admissionregistrationv1.ValidatingWebhook // the fields both kinds have
	// reinvoke: reinvocationPolicy IfNeeded (mutating only).
	reinvoke    bool
	endpoint    webhookEndpoint
	endpointErr error
	nsSel       labels.Selector
	nsSelErr    error
	objSel      labels.Selector
	objSelErr   error
	// matcher evaluates matchConditions; nil without any.
	matcher matchconditions.Matcher
}

// admissionHooks caches the prepared webhooks of the stored
// configurations, by configuration, while its resourceVersion stays.
type admissionHooks struct {
	mu sync.Mutex // guards byKey
	// byKey: resource + "/" + configuration name.
	byKey map[string]cachedHooks

	compilerOnce sync.Once
	compiler     celplugin.ConditionCompiler
}

type cachedHooks struct {
	rv    int64
	hooks []*admissionHook
}

// webhooks returns the webhooks of the stored configurations of resource
// (mutatingConfigs or validatingConfigs), configurations in name order.
func (s *Server) webhooks(resource string) []*admissionHook {
	res, err := s.store.List(resource, storage.ListOptions{})
	if err != nil || len(res.Objects) == 0 {
		return nil
	}
	objs := slices.Clone(res.Objects)
	sort.Slice(objs, func(i, j int) bool { return objs[i].Name < objs[j].Name })
	c := &s.admission
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byKey == nil {
		c.byKey = map[string]cachedHooks{}
	}
	var out []*admissionHook
	for _, o := range objs {
		key := resource + "/" + o.Name
		ch, ok := c.byKey[key]
		if !ok || ch.rv != o.ResourceVersion {
			ch = cachedHooks{rv: o.ResourceVersion, hooks: s.prepareHooks(resource == mutatingConfigs, o)}
			if len(c.byKey) > 4096 {
				clear(c.byKey)
			}
			c.byKey[key] = ch
		}
		out = append(out, ch.hooks...)
	}
	return out
}

// prepareHooks decodes a stored configuration into its webhooks.
func (s *Server) prepareHooks(mutating bool, o *storage.Object) []*admissionHook {
	var hooks []admissionregistrationv1.ValidatingWebhook
	reinvoke := map[int]bool{}
	if mutating {
		var cfg admissionregistrationv1.MutatingWebhookConfiguration
		if err := json.Unmarshal(o.Data, &cfg); err != nil {
			s.opts.Logger.Error("apiserver: decoding a MutatingWebhookConfiguration", "name", o.Name, "err", err)
			return nil
		}
		for i, h := range cfg.Webhooks {
			hooks = append(hooks, admissionregistrationv1.ValidatingWebhook{
				Name: h.Name, ClientConfig: h.ClientConfig, Rules: h.Rules, FailurePolicy: h.FailurePolicy,
				MatchPolicy: h.MatchPolicy, NamespaceSelector: h.NamespaceSelector, ObjectSelector: h.ObjectSelector,
				SideEffects: h.SideEffects, TimeoutSeconds: h.TimeoutSeconds, AdmissionReviewVersions: h.AdmissionReviewVersions,
				MatchConditions: h.MatchConditions,
			})
			reinvoke[i] = h.ReinvocationPolicy != nil && *h.ReinvocationPolicy == admissionregistrationv1.IfNeededReinvocationPolicy
		}
	} else {
		var cfg admissionregistrationv1.ValidatingWebhookConfiguration
		if err := json.Unmarshal(o.Data, &cfg); err != nil {
			s.opts.Logger.Error("apiserver: decoding a ValidatingWebhookConfiguration", "name", o.Name, "err", err)
			return nil
		}
		hooks = cfg.Webhooks
	}
	out := make([]*admissionHook, 0, len(hooks))
	for i, h := range hooks {
		ah := &admissionHook{config: o.Name, mutating: mutating, hook: h, reinvoke: reinvoke[i]}
		var svc *webhookService
		if cs := h.ClientConfig.Service; cs != nil {
			svc = &webhookService{Namespace: cs.Namespace, Name: cs.Name, Path: cs.Path, Port: cs.Port}
		}
		ah.endpoint, ah.endpointErr = webhookClientConfig{URL: h.ClientConfig.URL, Service: svc, CABundle: h.ClientConfig.CABundle}.endpoint()
		ah.nsSel, ah.nsSelErr = selectorOf(h.NamespaceSelector)
		ah.objSel, ah.objSelErr = selectorOf(h.ObjectSelector)
		if len(h.MatchConditions) > 0 {
			ah.matcher = s.compileConditions(ah, mutating)
		}
		out = append(out, ah)
	}
	return out
}

func selectorOf(ls *metav1.LabelSelector) (labels.Selector, error) {
	if ls == nil {
		return labels.Everything(), nil
	}
	return metav1.LabelSelectorAsSelector(ls)
}

// compileConditions compiles a webhook's matchConditions as
// kube-apiserver does (with the authorizer variable).
func (s *Server) compileConditions(h *admissionHook, mutating bool) matchconditions.Matcher {
	c := &s.admission
	c.compilerOnce.Do(func() {
		c.compiler = celplugin.NewConditionCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	})
	exprs := make([]celplugin.ExpressionAccessor, len(h.hook.MatchConditions))
	for i, mc := range h.hook.MatchConditions {
		exprs[i] = &matchconditions.MatchCondition{Name: mc.Name, Expression: mc.Expression}
	}
	typ := "validating"
	if mutating {
		typ = "admit"
	}
	return matchconditions.NewMatcher(c.compiler.CompileCondition(exprs,
		celplugin.OptionalVariableDeclarations{HasParams: false, HasAuthorizer: true}, environment.StoredExpressions),
		h.hook.FailurePolicy, "webhook", typ, h.hook.Name)
}

// exemptFromWebhooks: the configurations of admission themselves, as
// kube-apiserver exempts them.
func exemptFromWebhooks(k *kind) bool {
	if k.gvr.Group != "admissionregistration.k8s.io" {
		return false
	}
	switch k.kind {
	case "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "ValidatingAdmissionPolicy",
		"ValidatingAdmissionPolicyBinding", "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding":
		return true
	}
	return false
}

// invocation is a webhook to call for a request, at the version (kind)
// its rules name.
type invocation struct {
	h *admissionHook
	k *kind // the version the object is sent at
}

// shouldCall decides whether h is called for a, and at which version, as
// kube-apiserver's ShouldCallHook: namespace and object selectors, rules
// (then, with matchPolicy Equivalent, the rules against the other versions
// of the resource), match conditions.
func (s *Server) shouldCall(h *admissionHook, a *admissionAttrs) (*invocation, error) {
	nsMatch, nsErr := s.matchNamespace(h, a)
	if !nsMatch && nsErr == nil {
		return nil, nil
	}
	objMatch, objErr := matchObject(h, a)
	if !objMatch && objErr == nil {
		return nil, nil
	}
	var inv *invocation
	for _, r := range h.hook.Rules {
		if ruleMatches(r, a, a.k.gvr) {
			inv = &invocation{h: h, k: a.k}
			break
		}
	}
	if inv == nil && h.hook.MatchPolicy != nil && *h.hook.MatchPolicy == admissionregistrationv1.Equivalent {
		equivalents := s.equivalentKinds(a.k)
	outer:
		for _, r := range h.hook.Rules {
			for _, ek := range equivalents {
				if ruleMatches(r, a, ek.gvr) {
					inv = &invocation{h: h, k: ek}
					break outer
				}
			}
		}
	}
	if inv == nil {
		return nil, nil
	}
	if nsErr != nil {
		return nil, nsErr
	}
	if objErr != nil {
		return nil, objErr
	}
	if h.matcher != nil {
		va, err := s.versionedAttributes(a, inv.k)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		res := h.matcher.Match(a.call.ctx, va, nil, admissionAuthorizer{s})
		if res.Error != nil {
			return nil, apierrors.NewForbidden(a.k.groupResource(), a.name, res.Error)
		}
		if !res.Matches {
			return nil, nil
		}
	}
	return inv, nil
}

// equivalentKinds returns the other served versions of a's resource.
func (s *Server) equivalentKinds(k *kind) []*kind {
	var out []*kind
	for _, o := range s.reg.all() {
		if o != k && o.storageResource == k.storageResource && o.gvr.Resource == k.gvr.Resource {
			out = append(out, o)
		}
	}
	return out
}

var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// ruleMatches is kube-apiserver's rules.Matcher, for the request a at
// resource gvr.
func ruleMatches(r admissionregistrationv1.RuleWithOperations, a *admissionAttrs, gvr schema.GroupVersionResource) bool {
	if r.Scope != nil && *r.Scope != admissionregistrationv1.AllScopes {
		switch *r.Scope {
		case admissionregistrationv1.NamespacedScope:
			if gvr == namespacesGVR || a.namespace == "" {
				return false
			}
		case admissionregistrationv1.ClusterScope:
			if gvr != namespacesGVR && a.namespace != "" {
				return false
			}
		default:
			return false
		}
	}
	opOK := false
	for _, op := range r.Operations {
		if op == admissionregistrationv1.OperationAll || string(op) == a.op {
			opOK = true
			break
		}
	}
	if !opOK || !exactOrWildcard(r.APIGroups, gvr.Group) || !exactOrWildcard(r.APIVersions, gvr.Version) {
		return false
	}
	for _, res := range r.Resources {
		name, sub, _ := strings.Cut(res, "/")
		if (name == "*" || name == gvr.Resource) && (sub == "*" || sub == a.subresource) {
			return true
		}
	}
	return false
}

func exactOrWildcard(items []string, requested string) bool {
	for _, item := range items {
		if item == "*" || item == requested {
			return true
		}
	}
	return false
}

// matchNamespace is kube-apiserver's namespace matcher: a cluster-scoped
// object (but a Namespace) always matches; a Namespace created or updated
// is matched by its own labels; else the labels of the namespace.
func (s *Server) matchNamespace(h *admissionHook, a *admissionAttrs) (bool, error) {
	isNamespace := a.k.gvr.Group == "" && a.k.gvr.Resource == "namespaces"
	if a.namespace == "" && !isNamespace {
		return true, nil
	}
	if h.nsSelErr != nil {
		return false, apierrors.NewInternalError(h.nsSelErr)
	}
	if h.nsSel.Empty() {
		return true, nil
	}
	var lbls map[string]string
	if isNamespace && a.subresource == "" && (a.op == opCreate || a.op == opUpdate) {
		lbls = (&unstructured.Unstructured{Object: a.obj}).GetLabels()
	} else {
		name := a.namespace
		if isNamespace {
			name = a.name
		}
		o, err := s.store.Get("/namespaces", "", name)
		if errors.Is(err, storage.ErrNotFound) {
			return false, apierrors.NewNotFound(namespacesGVR.GroupResource(), name)
		}
		if err != nil {
			return false, apierrors.NewInternalError(err)
		}
		m, err := decodeMap(o.Data)
		if err != nil {
			return false, apierrors.NewInternalError(err)
		}
		lbls = (&unstructured.Unstructured{Object: m}).GetLabels()
	}
	return h.nsSel.Matches(labels.Set(lbls)), nil
}

// matchObject is kube-apiserver's object matcher: the new or the old
// object's labels match.
func matchObject(h *admissionHook, a *admissionAttrs) (bool, error) {
	if h.objSelErr != nil {
		return false, apierrors.NewInternalError(h.objSelErr)
	}
	if h.objSel.Empty() {
		return true, nil
	}
	for _, o := range []map[string]any{a.obj, a.old} {
		if o != nil && h.objSel.Matches(labels.Set((&unstructured.Unstructured{Object: o}).GetLabels())) {
			return true, nil
		}
	}
	return false, nil
}

// served converts a stored object to the served form of k (a copy).
func (s *Server) servedCopy(k *kind, stored map[string]any) (map[string]any, error) {
	if stored == nil {
		return nil, nil
	}
	return s.toServed(k, runtime.DeepCopyJSON(stored))
}

// versionedAttributes are a's attributes at version k, for match
// conditions.
func (s *Server) versionedAttributes(a *admissionAttrs, k *kind) (*admission.VersionedAttributes, error) {
	obj, err := s.servedCopy(k, a.obj)
	if err != nil {
		return nil, err
	}
	old, err := s.servedCopy(k, a.old)
	if err != nil {
		return nil, err
	}
	var o, oo runtime.Object
	if obj != nil {
		o = &unstructured.Unstructured{Object: obj}
	}
	if old != nil {
		oo = &unstructured.Unstructured{Object: old}
	}
	opts := a.options
	if opts == nil {
		opts = a.call.options
	}
	gvk := k.gvr.GroupVersion().WithKind(k.kind)
	rec := admission.NewAttributesRecord(o, oo, a.k.gvr.GroupVersion().WithKind(a.k.kind), a.namespace, a.name, a.k.gvr, a.subresource,
		admission.Operation(a.op), &unstructured.Unstructured{Object: runtime.DeepCopyJSON(opts)}, a.dryRun, userInfoOf(a.call.user))
	return &admission.VersionedAttributes{Attributes: rec, VersionedKind: gvk,
		VersionedObject: admission.NewLazyObject(o), VersionedOldObject: admission.NewLazyObject(oo)}, nil
}

func userInfoOf(u *identity) user.Info {
	if u == nil {
		return &user.DefaultInfo{}
	}
	return &user.DefaultInfo{Name: u.Name, UID: u.UID, Groups: u.Groups, Extra: u.Extra}
}

// admissionAuthorizer is the authorizer of match conditions: the server's
// own authorization.
type admissionAuthorizer struct{ s *Server }

func (z admissionAuthorizer) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	u := a.GetUser()
	if u == nil {
		return authorizer.DecisionNoOpinion, "", nil
	}
	id := &identity{UserInfo: UserInfo{Name: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: u.GetExtra()}}
	id.masters = slices.Contains(id.Groups, MastersGroup)
	ra := rbac.Attributes{Verb: a.GetVerb(), ResourceRequest: a.IsResourceRequest(), APIGroup: a.GetAPIGroup(),
		Resource: a.GetResource(), Subresource: a.GetSubresource(), Namespace: a.GetNamespace(), Name: a.GetName(), Path: a.GetPath()}
	if ok, reason := z.s.decide(id, &ra); ok {
		return authorizer.DecisionAllow, reason, nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// callError is kube-apiserver's ErrCallingWebhook: a webhook that could
// not be called or answered nonsense; failurePolicy decides.
type callError struct {
	name   string
	reason error
}

func (e *callError) Error() string {
	return fmt.Sprintf("failed calling webhook %q: %v", e.name, e.reason)
}

// reviewResponse is what a webhook answered.
type reviewResponse struct {
	allowed   bool
	result    *metav1.Status
	patch     []byte
	patchType string
	warnings  []string
}

// call sends the AdmissionReview of a at inv's version to the webhook.
func (s *Server) callWebhook(a *admissionAttrs, inv *invocation, obj map[string]any) (*reviewResponse, error) {
	h := inv.h
	if a.dryRun {
		if h.hook.SideEffects == nil {
			return nil, &callError{h.hook.Name, errors.New("Webhook SideEffects is nil")}
		}
		if se := *h.hook.SideEffects; se != admissionregistrationv1.SideEffectClassNone && se != admissionregistrationv1.SideEffectClassNoneOnDryRun {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("admission webhook %q does not support dry run", h.hook.Name))
		}
	}
	version := ""
	for _, v := range h.hook.AdmissionReviewVersions {
		if v == "v1" || v == "v1beta1" {
			version = "admission.k8s.io/" + v
			break
		}
	}
	if version == "" {
		return nil, &callError{h.hook.Name, errors.New("could not create admission objects: webhook does not accept known AdmissionReview versions (v1, v1beta1)")}
	}
	if h.endpointErr != nil {
		return nil, &callError{h.hook.Name, fmt.Errorf("could not get REST client: %w", h.endpointErr)}
	}
	old, err := s.servedCopy(inv.k, a.old)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	uid := types.UID(uuid.NewUUID())
	opts := a.options
	if opts == nil {
		opts = a.call.options
	}
	req := map[string]any{
		"uid":                string(uid),
		"kind":               map[string]any{"group": inv.k.gvr.Group, "version": inv.k.gvr.Version, "kind": inv.k.kind},
		"resource":           map[string]any{"group": inv.k.gvr.Group, "version": inv.k.gvr.Version, "resource": inv.k.gvr.Resource},
		"requestKind":        map[string]any{"group": a.k.gvr.Group, "version": a.k.gvr.Version, "kind": a.k.kind},
		"requestResource":    map[string]any{"group": a.k.gvr.Group, "version": a.k.gvr.Version, "resource": a.k.gvr.Resource},
		"name":               a.name,
		"namespace":          a.namespace,
		"operation":          a.op,
		"userInfo":           reviewUser(a.call.user),
		"object":             obj,
		"oldObject":          old,
		"dryRun":             a.dryRun,
		"options":            opts,
		"subResource":        a.subresource,
		"requestSubResource": a.subresource,
	}
	if a.subresource == "" {
		delete(req, "subResource")
		delete(req, "requestSubResource")
	}
	if a.name == "" {
		delete(req, "name")
	}
	if a.namespace == "" {
		delete(req, "namespace")
	}
	body, err := jsontree.Append(nil, map[string]any{"kind": "AdmissionReview", "apiVersion": version, "request": req})
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	timeout := defaultWebhookTimeout
	if t := h.hook.TimeoutSeconds; t != nil {
		timeout = time.Duration(*t) * time.Second
	}
	ctx := a.call.ctx
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl); left < timeout {
			// As kube-apiserver: what the request has left, in whole
			// seconds rounded up.
			if left <= 0 {
				left = time.Second
			} else if tr := left.Truncate(time.Second); tr != left {
				left = tr + time.Second
			}
			timeout = left
		}
	}
	data, err := s.hooks.post(ctx, h.endpoint, timeout, body, maxAdmissionResponse)
	if err != nil {
		return nil, &callError{h.hook.Name, fmt.Errorf("failed to call webhook: %w", err)}
	}
	resp, err := verifyAdmissionResponse(data, version, uid, h.mutating)
	if err != nil {
		return nil, &callError{h.hook.Name, fmt.Errorf("received invalid webhook response: %w", err)}
	}
	return resp, nil
}

func reviewUser(u *identity) map[string]any {
	if u == nil {
		return map[string]any{}
	}
	out := map[string]any{"username": u.Name}
	if u.UID != "" {
		out["uid"] = u.UID
	}
	if len(u.Groups) > 0 {
		out["groups"] = toAnySlice(u.Groups)
	}
	if len(u.Extra) > 0 {
		extra := map[string]any{}
		for k, v := range u.Extra {
			extra[k] = toAnySlice(v)
		}
		out["extra"] = extra
	}
	return out
}

// verifyAdmissionResponse is kube-apiserver's check of a webhook's answer.
func verifyAdmissionResponse(data []byte, version string, uid types.UID, mutating bool) (*reviewResponse, error) {
	var review struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Response   *struct {
			UID       types.UID        `json:"uid"`
			Allowed   bool             `json:"allowed"`
			Result    *metav1.Status   `json:"status"`
			Patch     []byte           `json:"patch"`
			PatchType *json.RawMessage `json:"patchType"`
			Warnings  []string         `json:"warnings"`
		} `json:"response"`
	}
	if err := json.Unmarshal(data, &review); err != nil {
		return nil, err
	}
	r := review.Response
	if r == nil {
		return nil, errors.New("webhook response was absent")
	}
	out := &reviewResponse{allowed: r.Allowed, result: r.Result, warnings: r.Warnings}
	var pt *string
	if r.PatchType != nil && string(*r.PatchType) != "null" {
		var p string
		if err := json.Unmarshal(*r.PatchType, &p); err != nil {
			return nil, err
		}
		pt = &p
	}
	if version == "admission.k8s.io/v1beta1" {
		if mutating && len(r.Patch) > 0 {
			out.patch, out.patchType = r.Patch, "JSONPatch"
		}
		return out, nil
	}
	if r.UID != uid {
		return nil, fmt.Errorf("expected response.uid=%q, got %q", uid, r.UID)
	}
	want := schema.GroupVersionKind{Group: "admission.k8s.io", Version: "v1", Kind: "AdmissionReview"}
	if got := schema.FromAPIVersionAndKind(review.APIVersion, review.Kind); got != want {
		return nil, fmt.Errorf("expected webhook response of %v, got %v", want, got)
	}
	if !mutating {
		if len(r.Patch) > 0 {
			return nil, errors.New("validating webhook may not return response.patch")
		}
		if pt != nil {
			return nil, errors.New("validating webhook may not return response.patchType")
		}
		return out, nil
	}
	switch {
	case len(r.Patch) > 0 && pt == nil:
		return nil, errors.New("webhook returned response.patch but not response.patchType")
	case len(r.Patch) == 0 && pt != nil:
		return nil, errors.New("webhook returned response.patchType but not response.patch")
	case pt != nil && *pt == "":
		return nil, fmt.Errorf("webhook returned invalid response.patchType of %q", *pt)
	}
	out.patch = r.Patch
	if pt != nil {
		out.patchType = *pt
	}
	return out, nil
}

// denied is kube-apiserver's error for a webhook's refusal: its Status,
// the message prefixed with the webhook's name, the code at least 400.
func denied(name string, result *metav1.Status) error {
	st := metav1.Status{Status: metav1.StatusFailure}
	if result != nil {
		st = *result
	}
	by := fmt.Sprintf("admission webhook %q denied the request", name)
	if st.Code < http.StatusBadRequest {
		st.Code = http.StatusBadRequest
	}
	if st.Status == "" || st.Status == metav1.StatusSuccess {
		st.Status = metav1.StatusFailure
	}
	switch {
	case st.Message != "":
		st.Message = by + ": " + st.Message
	case st.Reason != "":
		st.Message = by + ": " + string(st.Reason)
	default:
		st.Message = by + " without explanation"
	}
	st.TypeMeta = metav1.TypeMeta{}
	return &apierrors.StatusError{ErrStatus: st}
}

// admitMutating calls the mutating webhooks that match a, and returns the
// object as they left it (stored form; a.obj itself when none changed it).
// Warnings go to wo.
func (s *Server) admitMutating(a *admissionAttrs, wo *writeOpts) (map[string]any, bool, error) {
	if a.call == nil || a.call.r == nil || exemptFromWebhooks(a.k) {
		return a.obj, false, nil
	}
	hooks := s.webhooks(mutatingConfigs)
	if len(hooks) == 0 {
		return a.obj, false, nil
	}
	a.call.prepare()
	mutated := false
	// Reinvocation, as kube-apiserver's: a webhook with reinvocationPolicy
	// IfNeeded is called again, once, when a webhook after it changed the
	// object.
	var invokedIfNeeded []*admissionHook
	reinvoke := map[*admissionHook]bool{}
	for round := 0; round < 2; round++ {
		if round == 1 && len(reinvoke) == 0 {
			break
		}
		for _, h := range hooks {
			if round == 1 && !reinvoke[h] {
				continue
			}
			inv, err := s.shouldCall(h, a)
			if err != nil {
				return nil, false, err
			}
			if inv == nil {
				continue
			}
			changed, err := s.callMutating(a, inv, wo)
			mutated = mutated || changed
			if err != nil {
				var ce *callError
				if errors.As(err, &ce) {
					if h.hook.FailurePolicy != nil && *h.hook.FailurePolicy == admissionregistrationv1.Ignore {
						s.opts.Logger.Debug("apiserver: failed calling webhook, failing open", "webhook", h.hook.Name, "err", err)
						if a.call.ctx.Err() != nil {
							return nil, false, apierrors.NewTimeoutError("request did not complete within requested timeout", 0)
						}
						continue
					}
					return nil, false, apierrors.NewInternalError(err)
				}
				return nil, false, err
			}
			if changed && round == 0 {
				for _, p := range invokedIfNeeded {
					reinvoke[p] = true
				}
			}
			if h.reinvoke && round == 0 {
				invokedIfNeeded = append(invokedIfNeeded, h)
			}
		}
	}
	return a.obj, mutated, nil
}

// callMutating calls one mutating webhook and applies its patch to a.obj.
func (s *Server) callMutating(a *admissionAttrs, inv *invocation, wo *writeOpts) (bool, error) {
	h := inv.h
	obj, err := s.servedCopy(inv.k, a.obj)
	if err != nil {
		return false, apierrors.NewInternalError(err)
	}
	resp, err := s.callWebhook(a, inv, obj)
	if err != nil {
		return false, err
	}
	addWarnings(wo, resp.warnings)
	if !resp.allowed {
		return false, denied(h.hook.Name, resp.result)
	}
	if len(resp.patch) == 0 {
		return false, nil
	}
	patch, err := evanphx.DecodePatch(resp.patch)
	if err != nil {
		return false, &callError{h.hook.Name, fmt.Errorf("received undecodable patch in webhook response: %w", err)}
	}
	if len(patch) == 0 {
		return false, nil
	}
	if obj == nil {
		return false, apierrors.NewInternalError(fmt.Errorf("admission webhook %q attempted to modify the object, which is not supported for this operation", h.hook.Name))
	}
	if resp.patchType != "JSONPatch" {
		return false, &callError{h.hook.Name, fmt.Errorf("unsupported patch type %q", resp.patchType)}
	}
	doc, err := jsontree.Append(nil, obj)
	if err != nil {
		return false, apierrors.NewInternalError(err)
	}
	patched, err := patch.Apply(doc)
	if err != nil {
		return false, apierrors.NewInternalError(err)
	}
	next, err := decodeMap(patched)
	if err != nil {
		return false, apierrors.NewInternalError(err)
	}
	if jsontree.Equal(next, obj) {
		return false, nil
	}
	stored, err := s.toStorage(inv.k, next)
	if err != nil {
		return false, err
	}
	a.obj = stored
	return true, nil
}

// admitValidating calls the validating webhooks that match a, all at once,
// and returns the first refusal (in the webhooks' order).
func (s *Server) admitValidating(a *admissionAttrs, wo *writeOpts) error {
	if a.call == nil || a.call.r == nil || exemptFromWebhooks(a.k) {
		return nil
	}
	hooks := s.webhooks(validatingConfigs)
	if len(hooks) == 0 {
		return nil
	}
	a.call.prepare()
	var invs []*invocation
	for _, h := range hooks {
		inv, err := s.shouldCall(h, a)
		if err != nil {
			return err
		}
		if inv != nil {
			invs = append(invs, inv)
		}
	}
	if len(invs) == 0 {
		return nil
	}
	if a.call.ctx.Err() != nil {
		return apierrors.NewTimeoutError("request did not complete within requested timeout", 0)
	}
	errs := make([]error, len(invs))
	warnings := make([][]string, len(invs))
	call := func(i int) {
		inv := invs[i]
		obj, err := s.servedCopy(inv.k, a.obj)
		if err != nil {
			errs[i] = apierrors.NewInternalError(err)
			return
		}
		resp, err := s.callWebhook(a, inv, obj)
		if err != nil {
			var ce *callError
			if errors.As(err, &ce) {
				if inv.h.hook.FailurePolicy != nil && *inv.h.hook.FailurePolicy == admissionregistrationv1.Ignore {
					s.opts.Logger.Debug("apiserver: failed calling webhook, failing open", "webhook", inv.h.hook.Name, "err", err)
					return
				}
				errs[i] = apierrors.NewInternalError(err)
				return
			}
			errs[i] = err
			return
		}
		warnings[i] = resp.warnings
		if !resp.allowed {
			errs[i] = denied(inv.h.hook.Name, resp.result)
		}
	}
	if len(invs) == 1 {
		call(0)
	} else {
		var wg sync.WaitGroup
		for i := range invs {
			wg.Go(func() { call(i) })
		}
		wg.Wait()
	}
	for _, w := range warnings {
		addWarnings(wo, w)
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// addWarnings records a webhook's warnings for the response, once each,
// after those already there.
func addWarnings(wo *writeOpts, ws []string) {
	if wo == nil {
		return
	}
	for _, w := range ws {
		if !slices.Contains(wo.warnings, w) && !slices.Contains(wo.admissionWarnings, w) {
			wo.admissionWarnings = append(wo.admissionWarnings, w)
		}
	}
}

// admitDelete runs admission for the deletion of the object ns/name of k
// (its current state, before the deletion). Webhooks' warnings are
// written to w.
func (s *Server) admitDelete(w http.ResponseWriter, r *http.Request, k *kind, ns, name string, opts metav1.DeleteOptions) error {
	if exemptFromWebhooks(k) || !s.admissionActive() {
		return nil
	}
	o, err := s.store.Get(k.storageResource, ns, name)
	if err != nil {
		return nil // the deletion answers it
	}
	old, err := decodeMap(o.Data)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	optsMap, err := toMap(opts)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	optsMap["kind"], optsMap["apiVersion"] = "DeleteOptions", "meta.k8s.io/v1"
	call := newAdmissionCall(r, "DeleteOptions")
	a := &admissionAttrs{call: &call, op: opDelete, k: k, namespace: ns, name: name,
		old: old, dryRun: len(opts.DryRun) > 0, options: optsMap}
	if k.gvr == namespacesGVR {
		a.namespace = name
	}
	wo := &writeOpts{}
	defer writeWarnings(w, wo)
	if _, _, err := s.admitMutating(a, wo); err != nil {
		return err
	}
	return s.admitValidating(a, wo)
}

// writeAttrs are the admission attributes of a create (old nil) or an
// update of k (sub: its subresource), objects in stored form.
func writeAttrs(k *kind, sub string, obj, old map[string]any, wo *writeOpts) *admissionAttrs {
	u := &unstructured.Unstructured{Object: obj}
	a := &admissionAttrs{call: &wo.adm, op: opUpdate, k: k, subresource: sub, namespace: u.GetNamespace(), name: u.GetName(),
		obj: obj, old: old, dryRun: wo.dryRun}
	if old == nil {
		a.op = opCreate
		if wo.adm.optionsKind != "CreateOptions" {
			// An apply that creates: kube-apiserver admits a create, with
			// the patch's options as CreateOptions.
			wo.adm.prepare()
			opts := runtime.DeepCopyJSON(wo.adm.options)
			opts["kind"] = "CreateOptions"
			delete(opts, "force")
			a.options = opts
		}
	}
	if k.gvr == namespacesGVR && old != nil {
		a.namespace = a.name
	}
	return a
}

// mutateWrite calls the mutating webhooks of a create (old nil) or an
// update, and returns the object they leave (a custom resource's schema
// applied again when they changed it: defaults, pruning).
func (s *Server) mutateWrite(k *kind, sub string, obj, old map[string]any, wo *writeOpts) (map[string]any, error) {
	if wo.adm.r == nil || sub == "scale" || !s.admissionActive() { // a Scale's admission: not yet
		return obj, nil
	}
	if old == nil && k.namespaced {
		// kube-apiserver's NamespaceLifecycle plugin refuses a create in a
		// namespace that is missing or terminating before any webhook.
		u := &unstructured.Unstructured{Object: obj}
		name := u.GetName()
		if name == "" {
			name = u.GetGenerateName() // names are generated after admission
		}
		if err := s.checkNamespace(u.GetNamespace(), k.groupResource(), name); err != nil {
			return nil, err
		}
	}
	out, changed, err := s.admitMutating(writeAttrs(k, sub, obj, old, wo), wo)
	if err != nil {
		return nil, err
	}
	if changed && k.crd != nil {
		if _, err := k.crd.checked().schema.decode(out); err != nil {
			return nil, crDecodeError(k, err)
		}
	}
	return out, nil
}

// validateWrite calls the validating webhooks of a create (old nil) or an
// update.
func (s *Server) validateWrite(k *kind, sub string, obj, old map[string]any, wo *writeOpts) error {
	if wo.adm.r == nil || sub == "scale" || !s.admissionActive() {
		return nil
	}
	return s.admitValidating(writeAttrs(k, sub, obj, old, wo), wo)
}
