package apiserver

import (
	"testing"
)

// negotiate picks what kube-apiserver's NegotiateMediaTypeOptions picks,
// with its endpoint restrictions.
func TestNegotiate(t *testing.T) {
	builtin := endpoint{transforms: true}
	cr := endpoint{transforms: true, noProtobuf: true}
	pb := protobufContentType
	tests := []struct {
		accept string
		ep     endpoint
		want   answer
		ok     bool
	}{
		{"", builtin, answer{}, true},
		{"application/json", builtin, answer{}, true},
		{"*/*", builtin, answer{}, true},
		{"application/*", builtin, answer{}, true},
		{"application/yaml", builtin, answer{format: formatYAML}, true},
		{pb, builtin, answer{format: formatProtobuf}, true},
		{pb + ", application/json", builtin, answer{format: formatProtobuf}, true},
		{pb + ",application/json", cr, answer{}, true},
		{pb, cr, answer{}, false},
		{pb + ", */*", cr, answer{}, true},
		{"text/plain", builtin, answer{}, false},
		{"text/plain, application/yaml", builtin, answer{format: formatYAML}, true},
		// Quality first, then specificity.
		{"application/json;q=0.5, " + pb, builtin, answer{format: formatProtobuf}, true},
		{pb + ";q=0.5, application/json", builtin, answer{}, true},
		{"*/*, " + pb, builtin, answer{format: formatProtobuf}, true},
		{"application/*;q=0.9, application/yaml", builtin, answer{format: formatYAML}, true},
		// Streams.
		{"application/json;stream=watch", builtin, answer{}, true},
		{pb + ";stream=watch", builtin, answer{format: formatProtobuf}, true},
		{"application/yaml;stream=watch", builtin, answer{}, false},
		{"application/json;stream=other", builtin, answer{}, false},
		// Transformations.
		{"application/json;as=Table;v=v1;g=meta.k8s.io,application/json", builtin, answer{as: "Table", asVersion: "v1"}, true},
		{"application/yaml;as=Table;v=v1beta1;g=meta.k8s.io", builtin, answer{format: formatYAML, as: "Table", asVersion: "v1beta1"}, true},
		{pb + ";as=Table;v=v1;g=meta.k8s.io", builtin, answer{}, false},
		{pb + ";as=Table;v=v1;g=meta.k8s.io, application/json", builtin, answer{}, true},
		{pb + ";as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json", builtin, answer{format: formatProtobuf, as: "PartialObjectMetadata", asVersion: "v1"}, true},
		{pb + ";as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", cr, answer{format: formatProtobuf, as: "PartialObjectMetadataList", asVersion: "v1"}, true},
		{"application/json;as=Table;v=v2;g=meta.k8s.io", builtin, answer{}, false},
		{"application/json;as=Widget;v=v1;g=meta.k8s.io", builtin, answer{}, false},
		{"application/json;v=v1", builtin, answer{}, false},
		{"application/json;as=Table;v=v1;g=meta.k8s.io", errorEndpoint, answer{}, false},
		{pb + ";as=Table;v=v1;g=meta.k8s.io, " + pb, errorEndpoint, answer{format: formatProtobuf}, true},
		// Server version, and parameters kube-apiserver leaves alone.
		{"application/json;sv=v1", builtin, answer{}, true},
		{"application/json;sv=v2", builtin, answer{}, false},
		{"application/json;sv=v1", errorEndpoint, answer{}, false},
		{"application/json;pretty=1;charset=utf-8", builtin, answer{}, true},
		// Malformed clauses are skipped.
		{"application, application/json/x, " + pb, builtin, answer{format: formatProtobuf}, true},
		{";;,", builtin, answer{}, false},
	}
	for _, tt := range tests {
		got, ok := negotiate(tt.accept, tt.ep)
		if got != tt.want || ok != tt.ok {
			t.Errorf("negotiate(%q, %+v) = %+v, %v; want %+v, %v", tt.accept, tt.ep, got, ok, tt.want, tt.ok)
		}
	}
}

func TestNotAcceptable(t *testing.T) {
	for stream, want := range map[bool]string{
		false: "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf",
		true:  "only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch",
	} {
		if got := notAcceptable(stream).Error(); got != want {
			t.Errorf("stream %v: %q, want %q", stream, got, want)
		}
	}
}

// FuzzNegotiate: any Accept header negotiates without panicking, and what
// it picks is a served representation the endpoint allows.
func FuzzNegotiate(f *testing.F) {
	for _, s := range []string{"", "*/*", protobufContentType + ", application/json", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
		protobufContentType + ";as=PartialObjectMetadataList;g=meta.k8s.io;v=v1;q=0.9", "a/b;c=d=e;;q=x, */*;stream=watch"} {
		f.Add(s, false, true)
	}
	f.Fuzz(func(t *testing.T, accept string, noProtobuf, transforms bool) {
		ep := endpoint{noProtobuf: noProtobuf, transforms: transforms}
		a, ok := negotiate(accept, ep)
		if !ok {
			if a != (answer{}) {
				t.Fatalf("no answer, yet %+v", a)
			}
			return
		}
		if a.format > formatProtobuf {
			t.Fatalf("format %d", a.format)
		}
		switch a.as {
		case "":
			if a.format == formatProtobuf && noProtobuf {
				t.Fatalf("protobuf for an endpoint without it: %+v", a)
			}
		case "Table":
			if a.format == formatProtobuf || !transforms {
				t.Fatalf("Table in %+v", a)
			}
		case "PartialObjectMetadata", "PartialObjectMetadataList":
			if !transforms {
				t.Fatalf("transformed answer %+v for an endpoint without", a)
			}
		default:
			t.Fatalf("as=%q", a.as)
		}
		if a.as != "" && a.asVersion != "v1" && a.asVersion != "v1beta1" {
			t.Fatalf("version %q", a.asVersion)
		}
	})
}
