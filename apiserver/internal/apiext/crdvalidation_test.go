package apiext

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

func TestSetDefaults(t *testing.T) {
	crd := &CustomResourceDefinition{Spec: CustomResourceDefinitionSpec{
		Names:    CustomResourceDefinitionNames{Kind: "Widget", Plural: "widgets"},
		Versions: []CustomResourceDefinitionVersion{{Name: "v1beta1"}, {Name: "v1", Storage: true}},
	}}
	SetDefaults(crd)
	tests := []struct {
		name      string
		got, want any
	}{
		{"singular", crd.Spec.Names.Singular, "widget"},
		{"listKind", crd.Spec.Names.ListKind, "WidgetList"},
		{"conversion", crd.Spec.Conversion.Strategy, NoneConverter},
		{"storedVersions", strings.Join(crd.Status.StoredVersions, ","), "v1"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %v, want %v", tt.name, tt.got, tt.want)
		}
	}
	kept := &CustomResourceDefinition{Spec: CustomResourceDefinitionSpec{Names: CustomResourceDefinitionNames{Kind: "A", Singular: "b", ListKind: "C"}}}
	SetDefaults(kept)
	if kept.Spec.Names.Singular != "b" || kept.Spec.Names.ListKind != "C" {
		t.Errorf("set names overwritten: %+v", kept.Spec.Names)
	}
	SetDefaults(nil) // must not panic
}

func validCRD(t *testing.T) *CustomResourceDefinition {
	t.Helper()
	crd, _ := loadCRD(t, "testdata/kubebuilder_cronjobs.yaml")
	SetDefaults(crd)
	return crd
}

func TestValidateCRDAcceptsRealDocuments(t *testing.T) {
	crd := validCRD(t)
	if errs := ValidateCRD(crd); len(errs) != 0 {
		t.Fatalf("kubebuilder CRD rejected: %v", errs.ToAggregate())
	}
}

func schemaFromYAML(t *testing.T, y string) *JSONSchemaProps {
	t.Helper()
	var p JSONSchemaProps
	if err := yaml.Unmarshal([]byte(y), &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

func TestValidateCRD(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(t *testing.T, c *CustomResourceDefinition)
		want   []string // substrings, each must appear in some error
	}{
		{"name must be plural.group", func(t *testing.T, c *CustomResourceDefinition) { c.Name = "cronjobs.other.io" },
			[]string{`metadata.name: Invalid value: "cronjobs.other.io": must be spec.names.plural+"."+spec.group`}},
		{"name required", func(t *testing.T, c *CustomResourceDefinition) { c.Name = "" },
			[]string{"metadata.name: Required value: name or generateName is required"}},
		{"group needs a dot", func(t *testing.T, c *CustomResourceDefinition) {
			c.Spec.Group, c.Name = "batch", "cronjobs.batch"
		}, []string{`spec.group: Invalid value: "batch": should be a domain with at least one dot`}},
		{"scope", func(t *testing.T, c *CustomResourceDefinition) { c.Spec.Scope = "Global" },
			[]string{`spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced"`}},
		{"scope required", func(t *testing.T, c *CustomResourceDefinition) { c.Spec.Scope = "" },
			[]string{`spec.scope: Required value`}},
		{"two storage versions", func(t *testing.T, c *CustomResourceDefinition) { c.Spec.Versions[1].Storage = true },
			[]string{`spec.versions: Invalid value: `, `must have exactly one version marked as storage version`}},
		{"no versions", func(t *testing.T, c *CustomResourceDefinition) { c.Spec.Versions = nil },
			[]string{`must have exactly one version marked as storage version`, `status.storedVersions[0]: Invalid value: "v1": missing from spec.versions`}},
		{"duplicate versions", func(t *testing.T, c *CustomResourceDefinition) { c.Spec.Versions[1].Name = "v1" },
			[]string{`must contain unique version names`}},
		{"version name", func(t *testing.T, c *CustomResourceDefinition) { c.Spec.Versions[1].Name = "V1.0" },
			[]string{`spec.versions[1].name: Invalid value: "V1.0": a DNS-1035 label must consist of lower case alphanumeric characters or '-'`}},
		{"schema required", func(t *testing.T, c *CustomResourceDefinition) { c.Spec.Versions[1].Schema = nil },
			[]string{`spec.versions[1].schema.openAPIV3Schema: Required value`}},
		{"kind", func(t *testing.T, c *CustomResourceDefinition) { c.Spec.Names.Kind = "Cron_Job" },
			[]string{`spec.names.kind: Invalid value: "Cron_Job": may have mixed case, but should otherwise match: a DNS-1035 label`}},
		{"kind equals listKind", func(t *testing.T, c *CustomResourceDefinition) { c.Spec.Names.ListKind = "CronJob" },
			[]string{`spec.names.listKind: Invalid value: "CronJob": kind and listKind may not be the same`}},
		{"plural required", func(t *testing.T, c *CustomResourceDefinition) { c.Spec.Names.Plural = "" },
			[]string{`spec.names.plural: Required value`}},
		{"webhook conversion without a webhook", func(t *testing.T, c *CustomResourceDefinition) { c.Spec.Conversion.Strategy = WebhookConverter },
			[]string{`spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook`,
				`spec.conversion.conversionReviewVersions: Required value`}},
		{"webhook conversion misconfigured", func(t *testing.T, c *CustomResourceDefinition) {
			u := "http://u:p@host/x?a=b#f"
			c.Spec.Conversion = &CustomResourceConversion{Strategy: WebhookConverter, Webhook: &WebhookConversion{
				ClientConfig: &WebhookClientConfig{URL: &u, CABundle: []byte("not PEM")}, ConversionReviewVersions: []string{"v2", "v2"}}}
		}, []string{
			`spec.conversion.webhookClientConfig.url: Invalid value: "http": 'https' is the only allowed URL scheme; desired format: https://host[/path]`,
			`spec.conversion.webhookClientConfig.url: Invalid value: "u:p": user information is not permitted in the URL`,
			`spec.conversion.webhookClientConfig.url: Invalid value: "f": fragments are not permitted in the URL`,
			`spec.conversion.webhookClientConfig.url: Invalid value: "a=b": query parameters are not permitted in the URL`,
			`spec.conversion.webhookClientConfig.caBundle: Invalid value:`,
			`spec.conversion.conversionReviewVersions[1]: Invalid value: "v2": duplicate version`,
			`spec.conversion.conversionReviewVersions: Invalid value: ["v2","v2"]: must include at least one of v1, v1beta1`,
		}},
		{"webhook conversion service", func(t *testing.T, c *CustomResourceDefinition) {
			path, port := "/a//b", int32(0)
			c.Spec.Conversion = &CustomResourceConversion{Strategy: WebhookConverter, Webhook: &WebhookConversion{
				ClientConfig: &WebhookClientConfig{Service: &ServiceReference{Path: &path, Port: &port}}, ConversionReviewVersions: []string{"v1"}}}
		}, []string{
			`spec.conversion.webhookClientConfig.service.name: Required value`,
			`spec.conversion.webhookClientConfig.service.namespace: Required value`,
			`spec.conversion.webhookClientConfig.service.port: Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive`,
			`spec.conversion.webhookClientConfig.service.path: Invalid value: "/a//b": segment[1] may not be empty`,
		}},
		{"preserveUnknownFields", func(t *testing.T, c *CustomResourceDefinition) { c.Spec.PreserveUnknownFields = true },
			[]string{`spec.preserveUnknownFields: Invalid value: true: cannot set to true`}},
		{"deprecation warning", func(t *testing.T, c *CustomResourceDefinition) {
			c.Spec.Versions[0].DeprecationWarning = c.Spec.Versions[1].DeprecationWarning
		},
			[]string{`spec.versions[0].deprecationWarning: Invalid value: `, `can only be set for deprecated versions`}},
		{"scale paths", func(t *testing.T, c *CustomResourceDefinition) {
			c.Spec.Versions[0].Subresources.Scale.SpecReplicasPath = ".status.replicas"
			c.Spec.Versions[0].Subresources.Scale.StatusReplicasPath = "status.replicas"
		}, []string{
			`spec.versions[0].subresources.scale.specReplicasPath: Invalid value: ".status.replicas": should be a json path under .spec`,
			`spec.versions[0].subresources.scale.statusReplicasPath: Invalid value: "status.replicas": must be a simple json path starting with .`,
		}},
		{"printer column type", func(t *testing.T, c *CustomResourceDefinition) {
			c.Spec.Versions[0].AdditionalPrinterColumns[0].Type = "text"
		},
			[]string{`spec.versions[0].additionalPrinterColumns[0].type: Invalid value: "text": must be one of boolean,date,integer,number,string`}},
		{"printer column path", func(t *testing.T, c *CustomResourceDefinition) {
			c.Spec.Versions[0].AdditionalPrinterColumns[0].JSONPath = ""
		},
			[]string{`spec.versions[0].additionalPrinterColumns[0].JSONPath: Required value`}},
		{"stored versions", func(t *testing.T, c *CustomResourceDefinition) { c.Status.StoredVersions = []string{"v1beta1"} },
			[]string{`status.storedVersions: Invalid value: ["v1beta1"]: must have the storage version v1`}},
		{"protected group", func(t *testing.T, c *CustomResourceDefinition) {
			c.Spec.Group, c.Name = "x.k8s.io", "cronjobs.x.k8s.io"
		}, []string{`metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation`}},
		{"root type", func(t *testing.T, c *CustomResourceDefinition) {
			c.Spec.Versions[1].Schema.OpenAPIV3Schema = schemaFromYAML(t, `{type: string}`)
		}, []string{`spec.versions[1].schema.openAPIV3Schema.type: Invalid value: "string": must be object at the root`}},
		{"missing type", func(t *testing.T, c *CustomResourceDefinition) {
			c.Spec.Versions[1].Schema.OpenAPIV3Schema = schemaFromYAML(t, `{type: object, properties: {spec: {properties: {a: {type: string}}}}}`)
		}, []string{`spec.versions[1].schema.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields`}},
		{"array without items", func(t *testing.T, c *CustomResourceDefinition) {
			c.Spec.Versions[1].Schema.OpenAPIV3Schema = schemaFromYAML(t, `{type: object, properties: {a: {type: array}}}`)
		}, []string{`spec.versions[1].schema.openAPIV3Schema.properties[a].items: Required value: must be specified`}},
		{"metadata restricted", func(t *testing.T, c *CustomResourceDefinition) {
			c.Spec.Versions[1].Schema.OpenAPIV3Schema = schemaFromYAML(t, `{type: object, properties: {metadata: {type: object, properties: {labels: {type: object}}}}}`)
		}, []string{`spec.versions[1].schema.openAPIV3Schema.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified`}},
		{"metadata name allowed", func(t *testing.T, c *CustomResourceDefinition) {
			c.Spec.Versions[1].Schema.OpenAPIV3Schema = schemaFromYAML(t, `{type: object, properties: {metadata: {type: object, properties: {name: {type: string, maxLength: 10}}}}}`)
		}, nil},
		{"type in anyOf", func(t *testing.T, c *CustomResourceDefinition) {
			c.Spec.Versions[1].Schema.OpenAPIV3Schema = schemaFromYAML(t, `{type: object, properties: {a: {type: string, anyOf: [{type: string}, {maxLength: 2}]}}}`)
		}, []string{`spec.versions[1].schema.openAPIV3Schema.properties[a].anyOf[0].type: Forbidden: must be empty to be structural`}},
		{"incomplete junctor", func(t *testing.T, c *CustomResourceDefinition) {
			c.Spec.Versions[1].Schema.OpenAPIV3Schema = schemaFromYAML(t, `{type: object, properties: {a: {type: object, allOf: [{properties: {b: {maxLength: 1}}}]}}}`)
		}, []string{`spec.versions[1].schema.openAPIV3Schema.properties[a].properties[b]: Required value: because it is defined in spec.versions[1].schema.openAPIV3Schema.properties[a].allOf[0].properties[b]`}},
		{"int-or-string ok", func(t *testing.T, c *CustomResourceDefinition) {
			c.Spec.Versions[1].Schema.OpenAPIV3Schema = schemaFromYAML(t, `{type: object, properties: {a: {x-kubernetes-int-or-string: true, anyOf: [{type: integer}, {type: string}], pattern: "^x"}}}`)
		}, nil},
		{"default wrong type", func(t *testing.T, c *CustomResourceDefinition) {
			c.Spec.Versions[1].Schema.OpenAPIV3Schema = schemaFromYAML(t, `{type: object, properties: {a: {type: integer, default: "x"}}}`)
		}, []string{`spec.versions[1].schema.openAPIV3Schema.properties[a].default: Invalid value: "string": `, `must be of type integer: "string"`}},
		{"default with unknown fields", func(t *testing.T, c *CustomResourceDefinition) {
			c.Spec.Versions[1].Schema.OpenAPIV3Schema = schemaFromYAML(t, `{type: object, properties: {a: {type: object, properties: {b: {type: string}}, default: {b: "x", c: "y"}}}}`)
		}, []string{`spec.versions[1].schema.openAPIV3Schema.properties[a].default: Invalid value: `, `must not have unknown fields`}},
		{"default in metadata", func(t *testing.T, c *CustomResourceDefinition) {
			c.Spec.Versions[1].Schema.OpenAPIV3Schema = schemaFromYAML(t, `{type: object, properties: {metadata: {type: object, default: {name: x}}}}`)
		}, []string{`spec.versions[1].schema.openAPIV3Schema.properties[metadata].default: Forbidden: must not be set in top-level metadata`}},
		{"unsupported keywords", func(t *testing.T, c *CustomResourceDefinition) {
			c.Spec.Versions[1].Schema.OpenAPIV3Schema = schemaFromYAML(t, `{type: object, properties: {a: {type: array, uniqueItems: true, items: [{type: string}]}, b: {type: "null"}, c: {type: object, $ref: "#/x"}}}`)
		}, []string{
			`properties[a].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic`,
			`properties[a].items: Forbidden: items must be a schema object and not an array`,
			`properties[b].type: Forbidden: type cannot be set to null, use nullable as an alternative`,
			`properties[c].$ref: Forbidden: $ref is not supported`,
		}},
		{"list map keys", func(t *testing.T, c *CustomResourceDefinition) {
			c.Spec.Versions[1].Schema.OpenAPIV3Schema = schemaFromYAML(t, `{type: object, properties: {a: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [k], items: {type: object, properties: {k: {type: string}}}}}}`)
		}, []string{`properties[a].items.properties[k].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property`}},
		{"bad pattern", func(t *testing.T, c *CustomResourceDefinition) {
			c.Spec.Versions[1].Schema.OpenAPIV3Schema = schemaFromYAML(t, `{type: object, properties: {a: {type: string, pattern: "(?!x)"}}}`)
		}, []string{"spec.versions[1].schema.openAPIV3Schema.properties[a].pattern: Invalid value: \"(?!x)\": must be a valid regular expression, but isn't: error parsing regexp: invalid or unsupported Perl syntax: `(?!`"}},
		{"structural and openapi errors together", func(t *testing.T, c *CustomResourceDefinition) {
			c.Spec.Versions[1].Schema.OpenAPIV3Schema = schemaFromYAML(t, `{type: object, properties: {a: {properties: {b: {type: string}}}, u: {type: array, items: {type: string}, uniqueItems: true}}}`)
		}, []string{
			`properties[a].type: Required value: must not be empty for specified object fields`,
			`properties[u].uniqueItems: Forbidden: uniqueItems cannot be set to true`,
		}},
		{"unsupported keyword reported once", func(t *testing.T, c *CustomResourceDefinition) {
			c.Spec.Versions[1].Schema.OpenAPIV3Schema = schemaFromYAML(t, `{type: object, properties: {a: {type: object, patternProperties: {x: {type: string}}}}}`)
		}, []string{`spec.versions[1].schema.openAPIV3Schema.properties[a].patternProperties: Forbidden: patternProperties is not supported`}},
		{"status subresource root restrictions", func(t *testing.T, c *CustomResourceDefinition) {
			c.Spec.Versions[0].Schema.OpenAPIV3Schema.AnyOf = []JSONSchemaProps{{Required: []string{"spec"}}}
		}, []string{`spec.versions[0].schema.openAPIV3Schema: Invalid value: "": only [Description Type`}},
		{"nullable root", func(t *testing.T, c *CustomResourceDefinition) {
			c.Spec.Versions[1].Schema.OpenAPIV3Schema.Nullable = true
		},
			[]string{`spec.versions[1].schema.openAPIV3Schema.nullable: Forbidden: nullable cannot be true at the root`}},
		{"embedded needs object", func(t *testing.T, c *CustomResourceDefinition) {
			c.Spec.Versions[1].Schema.OpenAPIV3Schema = schemaFromYAML(t, `{type: object, properties: {t: {type: object, x-kubernetes-embedded-resource: true}}}`)
		}, []string{`properties[t].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields`}},
		{"selectable field", func(t *testing.T, c *CustomResourceDefinition) {
			c.Spec.Versions[0].SelectableFields = []SelectableField{{JSONPath: ".spec.schedule"}, {JSONPath: ".spec.jobTemplate"}, {JSONPath: ".metadata.name"}, {JSONPath: ".spec.schedule"}}
		}, []string{
			`spec.versions[0].selectableFields[1].jsonPath: Invalid value: ".spec.jobTemplate": must point to a field of type string, boolean or integer`,
			`spec.versions[0].selectableFields[2].jsonPath: Invalid value: ".metadata.name": must not point to fields in metadata`,
			`spec.versions[0].selectableFields[3].jsonPath: Duplicate value: ".spec.schedule"`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			crd := validCRD(t)
			tt.mutate(t, crd)
			errs := ValidateCRD(crd)
			all := errs.ToAggregate()
			if len(tt.want) == 0 {
				if all != nil {
					t.Fatalf("unexpected errors: %v", all)
				}
				return
			}
			if all == nil {
				t.Fatalf("no errors, want %q", tt.want)
			}

			for _, w := range tt.want {
				found := false
				for _, e := range errs {
					if strings.Contains(e.Error(), w) {
						found = true
					}
				}
				if !found {
					t.Errorf("missing %q in:\n%v", w, all)
				}
			}
		})
	}
	if errs := ValidateCRD(nil); len(errs) == 0 {
		t.Fatal("nil CRD accepted")
	}
}

func TestValidateCRDUpdate(t *testing.T) {
	tests := []struct {
		name        string
		established bool
		mutate      func(c *CustomResourceDefinition)
		want        string
	}{
		{"group immutable", false, func(c *CustomResourceDefinition) { c.Spec.Group, c.Name = "other.io", "cronjobs.other.io" }, `spec.group: Invalid value: "other.io": field is immutable`},
		{"scope mutable before established", false, func(c *CustomResourceDefinition) { c.Spec.Scope = ClusterScoped }, ""},
		{"scope immutable once established", true, func(c *CustomResourceDefinition) { c.Spec.Scope = ClusterScoped }, `spec.scope: Invalid value: "Cluster": field is immutable`},
		{"add a version", true, func(c *CustomResourceDefinition) {
			v := c.Spec.Versions[1].DeepCopy()
			v.Name = "v2"
			c.Spec.Versions = append(c.Spec.Versions, *v)
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := validCRD(t)
			old.ResourceVersion = "1"
			if tt.established {
				old.Status.Conditions = []CustomResourceDefinitionCondition{{Type: Established, Status: ConditionTrue, LastTransitionTime: metav1.Now()}}
			}
			nw := old.DeepCopy()
			tt.mutate(nw)
			errs := ValidateCRDUpdate(nw, old)
			if tt.want == "" {
				if len(errs) > 0 {
					t.Fatalf("unexpected: %v", errs.ToAggregate())
				}
				return
			}
			if agg := errs.ToAggregate(); agg == nil || !strings.Contains(agg.Error(), tt.want) {
				t.Fatalf("got %v, want %q", agg, tt.want)
			}
		})
	}
}

// An unsupported keyword is reported once (by the OpenAPI checks), not again
// as a schema compilation error, as in kube-apiserver.
func TestValidateCRDNoDuplicateErrors(t *testing.T) {
	crd := validCRD(t)
	crd.Spec.Versions[1].Schema.OpenAPIV3Schema = schemaFromYAML(t, `{type: object, properties: {a: {type: object, $ref: "#/x"}}}`)
	errs := ValidateCRD(crd)
	if len(errs) != 1 || errs[0].Error() != `spec.versions[1].schema.openAPIV3Schema.properties[a].$ref: Forbidden: $ref is not supported` {
		t.Fatalf("errors: %v", errs.ToAggregate())
	}
}

func TestWarnings(t *testing.T) {
	crd := validCRD(t)
	got := Warnings(crd)
	want := []string{"spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations: CEL validation rules are stored but not enforced by kloop"}
	if len(got) != 1 || got[0] != want[0] {
		t.Fatalf("warnings %q, want %q", got, want)
	}
	crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = JSONSchemaProps{Type: "object"}
	if got := Warnings(crd); len(got) != 0 {
		t.Fatalf("warnings %q", got)
	}
	if Warnings(nil) != nil {
		t.Fatal("nil CRD")
	}
}
