package builder

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kloop.dev/kloop/client"
	"kloop.dev/kloop/handler"
	"kloop.dev/kloop/manager"
	"kloop.dev/kloop/webhook/admission"
	"kloop.dev/kloop/webhook/conversion"
)

// ConversionPath is where WebhookManagedBy serves conversion, for every
// kind, as controller-runtime: the path of the CRDs'
// spec.conversion.webhook.clientConfig.
const ConversionPath = "/convert"

// WebhookBuilder registers the webhooks of one kind, T, on a manager's
// webhook server. Make it with WebhookManagedBy; errors are reported by
// Complete.
type WebhookBuilder[T client.Object] struct {
	mgr       *manager.Manager
	obj       T
	defaulter admission.Defaulter[T]
	validator admission.Validator[T]
	converter conversion.Converter
	paths     [2]string // custom paths of the defaulter and the validator
	errs      []error
}

// WebhookManagedBy starts building the webhooks of obj's kind (a pointer to
// a Go type of the manager's Scheme, such as &v1.Widget{}), served by mgr's
// webhook server, as controller-runtime's WebhookManagedBy(mgr, obj).
//
// The kind is a type parameter, so that WithDefaulter and WithValidator
// take an admission.Defaulter[T] and an admission.Validator[T] of that
// very type (a Go method cannot add a type parameter of its own, which is
// why the object comes here rather than in a For).
func WebhookManagedBy[T client.Object](mgr *manager.Manager, obj T) *WebhookBuilder[T] {
	b := &WebhookBuilder[T]{mgr: mgr, obj: obj}
	if mgr == nil {
		b.errs = append(b.errs, errors.New("builder: WebhookManagedBy needs a manager"))
	}
	return b
}

// WithDefaulter serves d as the kind's mutating webhook at
// /mutate-<group with '.' as '-'>-<version>-<lowercase kind>
// (admission.WithDefaulter).
func (b *WebhookBuilder[T]) WithDefaulter(d admission.Defaulter[T]) *WebhookBuilder[T] {
	b.defaulter = d
	return b
}

// WithValidator serves v as the kind's validating webhook at
// /validate-<group with '.' as '-'>-<version>-<lowercase kind>
// (admission.WithValidator).
func (b *WebhookBuilder[T]) WithValidator(v admission.Validator[T]) *WebhookBuilder[T] {
	b.validator = v
	return b
}

// WithConverter converts the kind's versions with c (for example
// conversion.Funcs) at ConversionPath. Without it, a kind whose Go types
// are a hub and its spokes (conversion.Hub, conversion.Convertible) in the
// manager's Scheme is converted through them.
func (b *WebhookBuilder[T]) WithConverter(c conversion.Converter) *WebhookBuilder[T] {
	b.converter = c
	return b
}

// WithDefaulterCustomPath serves the defaulter at path instead.
func (b *WebhookBuilder[T]) WithDefaulterCustomPath(path string) *WebhookBuilder[T] {
	b.paths[0] = path
	return b
}

// WithValidatorCustomPath serves the validator at path instead.
func (b *WebhookBuilder[T]) WithValidatorCustomPath(path string) *WebhookBuilder[T] {
	b.paths[1] = path
	return b
}

// webhookPath is controller-runtime's generated path of a kind's webhook.
func webhookPath(prefix string, gvk schema.GroupVersionKind) string {
	return "/" + prefix + "-" + strings.ReplaceAll(gvk.Group, ".", "-") + "-" + gvk.Version + "-" + strings.ToLower(gvk.Kind)
}

// Complete registers the webhooks on the manager's webhook server (which
// the manager then runs). A builder with neither a defaulter, a validator
// nor a conversion is an error.
func (b *WebhookBuilder[T]) Complete() error {
	if err := errors.Join(b.errs...); err != nil {
		return err
	}
	if handler.IsNil(b.obj) {
		return errors.New("builder: WebhookManagedBy with a nil object")
	}
	var gvk schema.GroupVersionKind
	if u, ok := any(b.obj).(*unstructured.Unstructured); ok {
		gvk = u.GroupVersionKind()
		if gvk.Kind == "" || gvk.Version == "" {
			return errors.New("builder: webhook of an unstructured object: apiVersion and kind must be set")
		}
	} else {
		gvks, _, err := b.mgr.Scheme().ObjectKinds(b.obj)
		if err != nil {
			return fmt.Errorf("builder: webhook of %T: not in the manager's Scheme (add it with AddToScheme): %w", b.obj, err)
		}
		if len(gvks) != 1 {
			return fmt.Errorf("builder: webhook of %T: registered as %d kinds %v; want one", b.obj, len(gvks), gvks)
		}
		gvk = gvks[0]
	}
	// A kind whose Go types are a hub and spokes needs no converter of its
	// own: the conversion webhook converts a kind without one through them.
	hubAndSpoke := false
	if b.converter == nil {
		ok, err := conversion.IsConvertible(b.mgr.Scheme(), gvk.GroupKind())
		if err != nil {
			return fmt.Errorf("builder: webhook of %s: %w", gvk.Kind, err)
		}
		hubAndSpoke = ok
	}
	if b.defaulter == nil && b.validator == nil && b.converter == nil && !hubAndSpoke {
		return fmt.Errorf("builder: webhook of %s: no defaulter, validator or conversion to serve", gvk.Kind)
	}
	srv := b.mgr.WebhookServer()
	log := b.mgr.Logger().With("component", "webhook", "kind", gvk.Kind)
	type hook struct {
		path string
		h    func() (admission.Handler, error)
	}
	var hooks []hook
	if b.defaulter != nil {
		path := b.paths[0]
		if path == "" {
			path = webhookPath("mutate", gvk)
		}
		hooks = append(hooks, hook{path, func() (admission.Handler, error) { return admission.WithDefaulter(b.defaulter) }})
	}
	if b.validator != nil {
		path := b.paths[1]
		if path == "" {
			path = webhookPath("validate", gvk)
		}
		hooks = append(hooks, hook{path, func() (admission.Handler, error) { return admission.WithValidator(b.validator) }})
	}
	for _, hk := range hooks {
		h, err := hk.h()
		if err != nil {
			return fmt.Errorf("builder: webhook of %s: %w", gvk.Kind, err)
		}
		wh, err := admission.New(h, admission.Options{Logger: log})
		if err != nil {
			return fmt.Errorf("builder: webhook of %s: %w", gvk.Kind, err)
		}
		if err := srv.Register(hk.path, wh); err != nil {
			return fmt.Errorf("builder: webhook of %s: %w", gvk.Kind, err)
		}
	}
	if b.converter != nil || hubAndSpoke {
		cw, err := b.conversionWebhook()
		if err != nil {
			return err
		}
		if b.converter != nil {
			if err := cw.Register(gvk.GroupKind(), b.converter); err != nil {
				return fmt.Errorf("builder: webhook of %s: %w", gvk.Kind, err)
			}
		}
	}
	return nil
}

// conversionWebhook returns the conversion webhook at ConversionPath,
// registering it on first use.
func (b *WebhookBuilder[T]) conversionWebhook() (*conversion.Webhook, error) {
	srv := b.mgr.WebhookServer()
	for range 2 {
		if h := srv.Handler(ConversionPath); h != nil {
			cw, ok := h.(*conversion.Webhook)
			if !ok {
				return nil, fmt.Errorf("builder: %s serves %T, not a conversion webhook", ConversionPath, h)
			}
			return cw, nil
		}
		cw, err := conversion.New(b.mgr.Scheme(), conversion.Options{Logger: b.mgr.Logger().With("component", "webhook")})
		if err != nil {
			return nil, fmt.Errorf("builder: %w", err)
		}
		if err := srv.Register(ConversionPath, cw); err == nil {
			return cw, nil
		}
		// Registered meanwhile by another builder: use that one.
	}
	return nil, fmt.Errorf("builder: cannot register the conversion webhook at %s", ConversionPath)
}
