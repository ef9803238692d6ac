package admission_test

import (
	"context"
	"fmt"
	"log/slog"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"kloop.dev/kloop/webhook/admission"
)

// A defaulting webhook for ConfigMaps: the API server receives the JSON
// patch of what Default changed.
func ExampleWithDefaulter() {
	h, err := admission.WithDefaulter(admission.DefaulterFunc[*corev1.ConfigMap](func(_ context.Context, cm *corev1.ConfigMap) error {
		if cm.Labels["team"] == "" {
			if cm.Labels == nil {
				cm.Labels = map[string]string{}
			}
			cm.Labels["team"] = "platform"
		}
		return nil
	}))
	if err != nil {
		panic(err)
	}
	wh, err := admission.New(h, admission.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	resp := wh.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID:       "42",
		Operation: admissionv1.Create,
		Object:    runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings"},"data":{"a":"b"}}`)},
	}})
	fmt.Println(resp.UID, resp.Allowed, *resp.PatchType, string(resp.Patch))
	// Output: 42 true JSONPatch [{"op":"add","path":"/metadata/labels","value":{"team":"platform"}}]
}

type minReplicas struct{}

func (minReplicas) ValidateCreate(_ context.Context, cm *corev1.ConfigMap) (admission.Warnings, error) {
	if cm.Data["replicas"] == "0" {
		return admission.Warnings{"0 replicas serve nothing"}, fmt.Errorf("replicas must be at least 1")
	}
	return nil, nil
}

func (v minReplicas) ValidateUpdate(ctx context.Context, _, cm *corev1.ConfigMap) (admission.Warnings, error) {
	return v.ValidateCreate(ctx, cm)
}

func (minReplicas) ValidateDelete(context.Context, *corev1.ConfigMap) (admission.Warnings, error) {
	return nil, nil
}

// A validating webhook denies with a reason and warns.
func ExampleWithValidator() {
	h, err := admission.WithValidator[*corev1.ConfigMap](minReplicas{})
	if err != nil {
		panic(err)
	}
	wh, err := admission.New(h, admission.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	resp := wh.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID:       "7",
		Operation: admissionv1.Create,
		Object:    runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app"},"data":{"replicas":"0"}}`)},
	}})
	fmt.Println(resp.Allowed, resp.Result.Code, resp.Result.Reason, resp.Result.Message, resp.Warnings)
	// Output: false 403 Forbidden replicas must be at least 1 [0 replicas serve nothing]
}
