package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// ApplyConfiguration is what [Client.Apply] sends: the fields its field
// manager wants set, and only those. The typed apply configurations of
// k8s.io/client-go/applyconfigurations are ones (corev1ac.ConfigMap("a",
// "ns").WithData(...)), as are those applyconfiguration-gen generates for a
// CRD's Go types; an unstructured object becomes one with
// [ApplyConfigurationFromUnstructured].
type ApplyConfiguration interface {
	// IsApplyConfiguration marks the root of an apply configuration.
	IsApplyConfiguration()
	GetAPIVersion() *string
	GetKind() *string
	GetName() *string
	GetNamespace() *string
}

// ApplyConfigurationFromUnstructured makes u an [ApplyConfiguration]: u is
// sent as it is (it must hold only the fields its manager owns: apiVersion,
// kind, metadata.name, and what it sets), and filled with the answer.
func ApplyConfigurationFromUnstructured(u *unstructured.Unstructured) ApplyConfiguration {
	return unstructuredApply{u}
}

// unstructuredApply is an unstructured object as an apply configuration.
type unstructuredApply struct{ u *unstructured.Unstructured }

func (a unstructuredApply) IsApplyConfiguration() {}
func (a unstructuredApply) GetAPIVersion() *string {
	return optional(a.u.GetAPIVersion())
}
func (a unstructuredApply) GetKind() *string      { return optional(a.u.GetKind()) }
func (a unstructuredApply) GetName() *string      { return optional(a.u.GetName()) }
func (a unstructuredApply) GetNamespace() *string { return optional(a.u.GetNamespace()) }

func (a unstructuredApply) MarshalJSON() ([]byte, error) { return a.u.MarshalJSON() }

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Apply applies config with server-side apply (a PATCH of type
// application/apply-patch+yaml): the server merges it into the live object
// (creating it if missing), records its fields as owned by the field
// manager, and takes from the object the fields the manager owned and no
// longer sets. Setting a field another manager owns to another value is a
// Conflict (apierrors.IsConflict; the Status names the managers and
// fields) unless [ForceOwnership]. The field manager is [FieldOwner]'s, or
// Options.FieldOwner: one is required. config is filled with the server's
// answer, the whole object (as controller-runtime's Apply does).
//
// Apply works for every kind the server serves: the built-in ones and
// custom resources, typed or unstructured, cached or not.
func (c *Client) Apply(ctx context.Context, config ApplyConfiguration, opts ...WriteOption) error {
	return c.apply(ctx, config, "", opts)
}

// Apply applies config to obj's status subresource: the fields of status
// config sets, owned by the field manager (see [Client.Apply]).
func (s *StatusWriter) Apply(ctx context.Context, config ApplyConfiguration, opts ...WriteOption) error {
	return s.c.apply(ctx, config, "status", opts)
}

func (c *Client) apply(ctx context.Context, config ApplyConfiguration, sub string, opts []WriteOption) error {
	if config == nil || isNilValue(config) {
		return errors.New("client: nil apply configuration")
	}
	if u, ok := config.(unstructuredApply); ok && u.u == nil {
		return errors.New("client: nil apply configuration")
	}
	gvk, name, namespace, err := applyTarget(config)
	if err != nil {
		return err
	}
	o, q := c.writeQuery(opts)
	if o.FieldManager == "" {
		return apierrors.NewBadRequest("client: server-side apply needs a field manager: pass client.FieldOwner(name) or set Options.FieldOwner")
	}
	if o.Force {
		q.Set("force", "true")
	}
	m, err := c.mapping(ctx, gvk)
	if err != nil {
		return err
	}
	u, err := c.url(m, namespace, name, sub)
	if err != nil {
		return err
	}
	u.RawQuery = q.Encode()
	body, err := json.Marshal(config)
	if err != nil {
		return fmt.Errorf("client: encoding the apply configuration of %s %s: %w", gvk.Kind, name, err)
	}
	ctx = withSpanSink(ctx)
	out, err := c.do(ctx, http.MethodPatch, u, "application/json", string(types.ApplyYAMLPatchType), body, m)
	if err != nil {
		return err
	}
	if err := decodeApplied(out, config, gvk); err != nil {
		return err
	}
	if md := appliedMeta(config); md != nil && !o.DryRun {
		if wantsManagedFields(ctx) {
			// An apply configuration has no managedFields: read them
			// from the answer for the reconcile's hot-loop detector.
			var ans struct {
				Metadata struct {
					ManagedFields []metav1.ManagedFieldsEntry `json:"managedFields"`
				} `json:"metadata"`
			}
			if json.Unmarshal(out, &ans) == nil {
				md.SetManagedFields(ans.Metadata.ManagedFields)
			}
		}
		c.wrote(ctx, gvk, m, md, sub, o.FieldManager)
	}
	return nil
}

// applyTarget reads what config is: its kind, name and namespace.
func applyTarget(config ApplyConfiguration) (schema.GroupVersionKind, string, string, error) {
	deref := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	apiVersion, kind, name := deref(config.GetAPIVersion()), deref(config.GetKind()), deref(config.GetName())
	if apiVersion == "" || kind == "" {
		return schema.GroupVersionKind{}, "", "", apierrors.NewBadRequest(fmt.Sprintf("client: the apply configuration (%T) has no apiVersion or kind", config))
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return schema.GroupVersionKind{}, "", "", apierrors.NewBadRequest(fmt.Sprintf("client: the apply configuration's apiVersion %q: %v", apiVersion, err))
	}
	if name == "" {
		return schema.GroupVersionKind{}, "", "", apierrors.NewBadRequest(fmt.Sprintf("client: the apply configuration (%s) has no name", kind))
	}
	return gv.WithKind(kind), name, deref(config.GetNamespace()), nil
}

// decodeApplied fills config with the server's answer.
func decodeApplied(body []byte, config ApplyConfiguration, gvk schema.GroupVersionKind) error {
	if ua, ok := config.(unstructuredApply); ok {
		ua.u.Object = nil
		if err := ua.u.UnmarshalJSON(body); err != nil {
			return fmt.Errorf("client: decoding %s: %w", gvk.Kind, err)
		}
		return nil
	}
	v := reflect.ValueOf(config)
	if v.Kind() != reflect.Pointer {
		return nil // not decodable into: the write is done
	}
	v.Elem().Set(reflect.Zero(v.Elem().Type()))
	if err := json.Unmarshal(body, config); err != nil {
		return fmt.Errorf("client: decoding %s into %T: %w", gvk.Kind, config, err)
	}
	return nil
}

// isNilValue reports whether v is a nil pointer in an interface.
func isNilValue(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}
