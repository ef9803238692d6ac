package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"kloop.dev/kloop/apiserver/internal/jsontree"
)

// Conversion webhooks of CRDs (spec.conversion.strategy Webhook): an object
// read, written or watched at a version other than the one it is stored at
// goes through a ConversionReview, as kube-apiserver's webhook converter
// does; the answer is checked as kube-apiserver checks it (same kind, the
// desired version, same name, namespace and UID; only labels and
// annotations may change, the rest of metadata is restored from the
// original).

// conversionWebhookTimeout is kube-apiserver's timeout of a call to a
// conversion webhook (its webhook client's default).
const conversionWebhookTimeout = 30 * time.Second

// crdWebhook is the conversion webhook of one CRD.
type crdWebhook struct {
	endpoint    webhookEndpoint
	endpointErr error // a clientConfig that does not resolve
	// reviewVersion is the ConversionReview version sent: the first of
	// conversionReviewVersions the server knows.
	reviewVersion string
}

// setWebhookConversion makes the kinds of a CRD with strategy Webhook
// convert through its webhook, and check written objects against the
// storage version's schema (they are checked once converted to it).
func (s *Server) setWebhookConversion(kinds []*kind, crd *apiextensionsv1.CustomResourceDefinition) {
	c := crd.Spec.Conversion
	if c == nil || c.Strategy != apiextensionsv1.WebhookConverter || c.Webhook == nil || c.Webhook.ClientConfig == nil {
		return
	}
	wh := &crdWebhook{}
	cc := c.Webhook.ClientConfig
	var svc *webhookService
	if cc.Service != nil {
		svc = &webhookService{Namespace: cc.Service.Namespace, Name: cc.Service.Name, Path: cc.Service.Path, Port: cc.Service.Port}
	}
	wh.endpoint, wh.endpointErr = webhookClientConfig{URL: cc.URL, Service: svc, CABundle: cc.CABundle}.endpoint()
	for _, v := range c.Webhook.ConversionReviewVersions {
		if v == "v1" || v == "v1beta1" {
			wh.reviewVersion = "apiextensions.k8s.io/" + v
			break
		}
	}
	var storage *crdServing
	for _, v := range crd.Spec.Versions {
		if !v.Storage {
			continue
		}
		storage = &crdServing{schema: &crSchema{}}
		if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
			storage.schemaProps = v.Schema.OpenAPIV3Schema
			storage.schema.props = v.Schema.OpenAPIV3Schema
		}
	}
	for _, k := range kinds {
		k.crd.webhook = wh
		if k.apiVersion() != k.storageVersion {
			k.crd.check = storage
		}
		k.convert = &conversion{
			toStorage: func(obj map[string]any) (map[string]any, error) {
				out, err := s.convertCR(k, obj, k.storageVersion)
				if err != nil {
					// A write's body that does not convert: kube-apiserver's
					// 500 without a reason.
					return nil, serverError(err)
				}
				return out, nil
			},
			fromStorage: func(obj map[string]any) (map[string]any, error) {
				rv := jsontree.Str(meta(obj), "resourceVersion")
				out, err := s.convertCR(k, obj, k.apiVersion())
				if err != nil {
					// A stored object that does not convert: to
					// kube-apiserver's storage, a corrupt object.
					u := &unstructured.Unstructured{Object: obj}
					key := "/" + k.storageResource + "/" + u.GetName()
					if k.namespaced {
						key = "/" + k.storageResource + "/" + u.GetNamespace() + "/" + u.GetName()
					}
					return nil, &corruptObjectError{key: key, revision: rv, err: err}
				}
				return out, nil
			},
			byVersion: true,
		}
	}
}

// convertCR converts obj (a custom resource of k's CRD, at any version) to
// the apiVersion desired through the CRD's webhook; an object already
// there, or empty (only apiVersion and kind), is not sent.
func (s *Server) convertCR(k *kind, obj map[string]any, desired string) (map[string]any, error) {
	if av, _ := obj["apiVersion"].(string); av == desired {
		return obj, nil
	}
	if isEmptyObject(obj) {
		obj["apiVersion"] = desired
		return obj, nil
	}
	return s.callConversionWebhook(context.Background(), k.crd.webhook, obj, desired)
}

// isEmptyObject reports whether obj has nothing but its apiVersion and
// kind, which kube-apiserver converts without its webhook (the live object
// of a create, as its field manager converts it). An empty metadata counts
// as none: the field manager's copy of the live object has one here, and
// none in kube-apiserver.
func isEmptyObject(obj map[string]any) bool {
	n := 0
	for key, v := range obj {
		switch key {
		case "apiVersion", "kind":
			n++
		case "metadata":
			if m, ok := v.(map[string]any); !ok || len(m) > 0 {
				return false
			}
		default:
			return false
		}
	}
	return n == 2
}

// corruptObjectError is kube-apiserver's storage error for a stored object
// that does not decode (here: does not convert to the version read). A
// read answers it as a 500 InternalError; a list as StorageReadError
// (storageReadError).
type corruptObjectError struct {
	key      string // "/<group>/<resource>/[<namespace>/]<name>"
	revision string
	err      error
}

func (e *corruptObjectError) Error() string {
	return e.message(e.key)
}

func (e *corruptObjectError) message(key string) string {
	return fmt.Sprintf("StorageError: corrupt object, Code: 7, Key: %s, ResourceVersion: 0, AdditionalErrorMsg: object not decodable revision=%s: %v", key, e.revision, e.err)
}

func (e *corruptObjectError) Unwrap() error { return e.err }

// Status is a read's answer: a 500 InternalError.
func (e *corruptObjectError) Status() metav1.Status { return apierrors.NewInternalError(e).ErrStatus }

// storageReadError is kube-apiserver's answer to a list with objects that
// do not decode: a 500 StorageReadError with a cause for each (their keys
// under /registry).
func storageReadError(k *kind, errs []*corruptObjectError) error {
	st := metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusInternalServerError,
		Reason:  "StorageReadError",
		Message: fmt.Sprintf("failed to read one or more %s from the storage", k.groupResource()),
		Details: &metav1.StatusDetails{Name: "list", Group: k.gvr.Group, Kind: k.gvr.Resource},
	}
	for i, e := range errs {
		msg := e.message("/registry" + e.key)
		if i == 0 {
			st.Message += ": " + msg
		}
		st.Details.Causes = append(st.Details.Causes, metav1.StatusCause{Type: metav1.CauseTypeUnexpectedServerResponse, Message: msg, Field: "/registry" + e.key})
	}
	if len(errs) > 1 {
		st.Message += fmt.Sprintf(" (and %d more)", len(errs)-1)
	}
	return &apierrors.StatusError{ErrStatus: st}
}

// callConversionWebhook sends one object to the webhook, and returns it
// converted, or kube-apiserver's error.
func (s *Server) callConversionWebhook(ctx context.Context, wh *crdWebhook, obj map[string]any, desired string) (map[string]any, error) {
	in := &unstructured.Unstructured{Object: obj}
	gvk := in.GroupVersionKind()
	failed := func(err error) error { return fmt.Errorf("conversion webhook for %v failed: %v", gvk, err) }
	if wh.reviewVersion == "" {
		return nil, errors.New("no supported conversion review versions")
	}
	if wh.endpointErr != nil {
		return nil, failed(wh.endpointErr)
	}
	uid := uuid.NewUUID()
	body, err := jsontree.Append(nil, map[string]any{
		"apiVersion": wh.reviewVersion, "kind": "ConversionReview",
		"request":  map[string]any{"uid": string(uid), "desiredAPIVersion": desired, "objects": []any{obj}},
		"response": map[string]any{"uid": "", "convertedObjects": nil, "result": map[string]any{"metadata": map[string]any{}}},
	})
	if err != nil {
		return nil, err
	}
	data, err := s.hooks.post(ctx, wh.endpoint, conversionWebhookTimeout, body, maxConversionResponse)
	if err != nil {
		return nil, failed(err)
	}
	return checkConversionResponse(data, wh.reviewVersion, uid, in, desired)
}

// checkConversionResponse reads a webhook's ConversionReview answer for the
// one object in, converted to desired, and checks it as kube-apiserver
// does.
func checkConversionResponse(data []byte, reviewVersion string, uid types.UID, in *unstructured.Unstructured, desired string) (map[string]any, error) {
	gvk := in.GroupVersionKind()
	failed := func(err error) error { return fmt.Errorf("conversion webhook for %v failed: %v", gvk, err) }
	var review struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Response   *struct {
			UID              types.UID         `json:"uid"`
			ConvertedObjects []json.RawMessage `json:"convertedObjects"`
			Result           struct {
				Status  string `json:"status"`
				Message string `json:"message"`
			} `json:"result"`
		} `json:"response"`
	}
	if err := json.Unmarshal(data, &review); err != nil {
		return nil, failed(err)
	}
	if reviewVersion == "apiextensions.k8s.io/v1" {
		want := schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "ConversionReview"}
		if got := schema.FromAPIVersionAndKind(review.APIVersion, review.Kind); got != want {
			return nil, failed(fmt.Errorf("expected webhook response of %v, got %v", want, got))
		}
	}
	r := review.Response
	switch {
	case r == nil:
		return nil, failed(errors.New("no response provided"))
	case reviewVersion == "apiextensions.k8s.io/v1" && r.UID != uid:
		return nil, failed(fmt.Errorf("expected response.uid=%q, got %q", uid, r.UID))
	case r.Result.Status != "Success" && r.Result.Message != "":
		return nil, failed(errors.New(r.Result.Message))
	case r.Result.Status != "Success":
		return nil, failed(fmt.Errorf("response.result.status was '%s', not 'Success'", r.Result.Status))
	case len(r.ConvertedObjects) != 1:
		return nil, fmt.Errorf("conversion webhook for %v returned %d objects, expected 1", gvk, len(r.ConvertedObjects))
	}
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(r.ConvertedObjects[0]); err != nil {
		return nil, err
	}
	toGV, _ := schema.ParseGroupVersion(desired)
	if got := out.GroupVersionKind().GroupVersion(); got != toGV {
		return nil, fmt.Errorf("conversion webhook for %v returned invalid object at index 0: invalid groupVersion (expected %v, received %v)", gvk, toGV, got)
	}
	if got := out.GetKind(); got != gvk.Kind {
		return nil, fmt.Errorf("conversion webhook for %v returned invalid object at index 0: invalid kind (expected %v, received %v)", gvk, gvk.Kind, got)
	}
	if err := validateConverted(in, out); err != nil {
		return nil, fmt.Errorf("conversion webhook for %v returned invalid object: %v", gvk, err)
	}
	if err := restoreMeta(in, out); err != nil {
		return nil, fmt.Errorf("conversion webhook for %v returned invalid metadata: %v", gvk, err)
	}
	return out.Object, nil
}

// validateConverted checks what a conversion may not change.
func validateConverted(in, out *unstructured.Unstructured) error {
	switch {
	case in.GetKind() != out.GetKind():
		return fmt.Errorf("must have the same kind: %v != %v", in.GetKind(), out.GetKind())
	case in.GetName() != out.GetName():
		return fmt.Errorf("must have the same name: %v != %v", in.GetName(), out.GetName())
	case in.GetNamespace() != out.GetNamespace():
		return fmt.Errorf("must have the same namespace: %v != %v", in.GetNamespace(), out.GetNamespace())
	case in.GetUID() != out.GetUID():
		return fmt.Errorf("must have the same UID: %v != %v", in.GetUID(), out.GetUID())
	}
	return nil
}

// restoreMeta gives the converted object the original's metadata, but for
// the labels and annotations the webhook returned (validated if changed).
func restoreMeta(in, out *unstructured.Unstructured) error {
	m, ok := out.Object["metadata"]
	if !ok {
		return errors.New("missing metadata in converted object")
	}
	answered, ok := m.(map[string]any)
	if !ok {
		return fmt.Errorf("invalid metadata of type %T in converted object", m)
	}
	restored := map[string]any{}
	if orig, ok := in.Object["metadata"].(map[string]any); ok {
		restored = runtime.DeepCopyJSONValue(orig).(map[string]any)
	}
	out.Object["metadata"] = restored
	for _, f := range []string{"labels", "annotations"} {
		v, found := answered[f]
		if !found || v == nil {
			delete(restored, f)
			continue
		}
		got, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("invalid metadata.%s of type %T in converted object", f, v)
		}
		had, _ := restored[f].(map[string]any)
		changed := len(had) != len(got)
		strs := make(map[string]string, len(got))
		for key, val := range got {
			str, ok := val.(string)
			if !ok {
				return fmt.Errorf("metadata.%s[%s] must be a string, but is %T in converted object", f, key, val)
			}
			if had[key] != any(str) {
				changed = true
			}
			strs[key] = str
		}
		if changed {
			var errs field.ErrorList
			if f == "labels" {
				errs = metav1validation.ValidateLabels(strs, field.NewPath("metadata", "labels"))
			} else {
				errs = apivalidation.ValidateAnnotations(strs, field.NewPath("metadata", "annotation"))
			}
			if len(errs) > 0 {
				return errs.ToAggregate()
			}
		}
		restored[f] = got
	}
	return nil
}
