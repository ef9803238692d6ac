package apiext

import (
	"testing"
)

// BenchmarkCustomObject measures the per-request schema work of a custom
// resource write: prune, default, validate.
func BenchmarkCustomObject(b *testing.B) {
	crd, _ := loadCRD(b, "testdata/kubebuilder_cronjobs.yaml")
	s, err := NewStructural(crd.Spec.Versions[0].Schema.OpenAPIV3Schema)
	if err != nil {
		b.Fatal(err)
	}
	const obj = `{"apiVersion":"batch.tutorial.kubebuilder.io/v1","kind":"CronJob","metadata":{"name":"c","namespace":"d"},"spec":{"schedule":"*/5 * * * *","jobTemplate":{"spec":{"template":{}}},"replicas":3,"ports":[{"containerPort":80},{"containerPort":443,"protocol":"TCP"}],"resources":{"cpu":"100m","memory":1024},"selector":{"matchLabels":{"a":"b"}},"tags":["x","y"],"unknown":1},"status":{"replicas":3}}`
	b.ReportAllocs()
	for b.Loop() {
		o := mustObj(b, obj)
		s.Prune(o)
		s.Default(o)
		if errs := s.Validate(o); len(errs) != 0 {
			b.Fatal(errs)
		}
	}
}
