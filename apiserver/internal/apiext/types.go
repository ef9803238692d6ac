package apiext

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of CustomResourceDefinitions.
const GroupName = "apiextensions.k8s.io"

// SchemeGroupVersion is apiextensions.k8s.io/v1, the only version kloop serves.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1"}

// AddToScheme registers CustomResourceDefinition and CustomResourceDefinitionList
// in s under apiextensions.k8s.io/v1 (and the meta/v1 option types for that
// group version).
func AddToScheme(s *runtime.Scheme) error {
	if s == nil {
		return errors.New("apiext: AddToScheme: nil scheme")
	}
	s.AddKnownTypes(SchemeGroupVersion, &CustomResourceDefinition{}, &CustomResourceDefinitionList{})
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}

// ResourceScope is the scope of a custom resource: Namespaced or Cluster.
type ResourceScope string

// Resource scopes.
const (
	ClusterScoped   ResourceScope = "Cluster"
	NamespaceScoped ResourceScope = "Namespaced"
)

// ConversionStrategyType is how objects are converted between versions.
type ConversionStrategyType string

// Conversion strategies: NoneConverter rewrites the apiVersion, nothing
// else; WebhookConverter calls the CRD's conversion webhook.
const (
	NoneConverter    ConversionStrategyType = "None"
	WebhookConverter ConversionStrategyType = "Webhook"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// CustomResourceDefinition is apiextensions.k8s.io/v1 CustomResourceDefinition:
// the same JSON field names and omitempty behaviour.
type CustomResourceDefinition struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   CustomResourceDefinitionSpec   `json:"spec"`
	Status CustomResourceDefinitionStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// CustomResourceDefinitionList is a list of CustomResourceDefinitions.
type CustomResourceDefinitionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []CustomResourceDefinition `json:"items"`
}

// CustomResourceDefinitionSpec describes how a custom resource is served.
type CustomResourceDefinitionSpec struct {
	Group                 string                            `json:"group"`
	Names                 CustomResourceDefinitionNames     `json:"names"`
	Scope                 ResourceScope                     `json:"scope"`
	Versions              []CustomResourceDefinitionVersion `json:"versions"`
	Conversion            *CustomResourceConversion         `json:"conversion,omitempty"`
	PreserveUnknownFields bool                              `json:"preserveUnknownFields,omitempty"`
}

// CustomResourceConversion says how to convert between versions.
type CustomResourceConversion struct {
	Strategy ConversionStrategyType `json:"strategy"`
	Webhook  *WebhookConversion     `json:"webhook,omitempty"`
}

// WebhookConversion configures a conversion webhook.
type WebhookConversion struct {
	ClientConfig             *WebhookClientConfig `json:"clientConfig,omitempty"`
	ConversionReviewVersions []string             `json:"conversionReviewVersions"`
}

// WebhookClientConfig says how to reach a webhook.
type WebhookClientConfig struct {
	URL      *string           `json:"url,omitempty"`
	Service  *ServiceReference `json:"service,omitempty"`
	CABundle []byte            `json:"caBundle,omitempty"`
}

// ServiceReference names a Service in the cluster.
type ServiceReference struct {
	Namespace string  `json:"namespace"`
	Name      string  `json:"name"`
	Path      *string `json:"path,omitempty"`
	Port      *int32  `json:"port,omitempty"`
}

// CustomResourceDefinitionVersion is one version of a custom resource.
type CustomResourceDefinitionVersion struct {
	Name                     string                           `json:"name"`
	Served                   bool                             `json:"served"`
	Storage                  bool                             `json:"storage"`
	Deprecated               bool                             `json:"deprecated,omitempty"`
	DeprecationWarning       *string                          `json:"deprecationWarning,omitempty"`
	Schema                   *CustomResourceValidation        `json:"schema,omitempty"`
	Subresources             *CustomResourceSubresources      `json:"subresources,omitempty"`
	AdditionalPrinterColumns []CustomResourceColumnDefinition `json:"additionalPrinterColumns,omitempty"`
	SelectableFields         []SelectableField                `json:"selectableFields,omitempty"`
}

// SelectableField is a field usable as a field selector.
type SelectableField struct {
	JSONPath string `json:"jsonPath"`
}

// CustomResourceColumnDefinition is an additional printer column.
type CustomResourceColumnDefinition struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Format      string `json:"format,omitempty"`
	Description string `json:"description,omitempty"`
	Priority    int32  `json:"priority,omitempty"`
	JSONPath    string `json:"jsonPath"`
}

// CustomResourceDefinitionNames are the names of a custom resource.
type CustomResourceDefinitionNames struct {
	Plural     string   `json:"plural"`
	Singular   string   `json:"singular,omitempty"`
	ShortNames []string `json:"shortNames,omitempty"`
	Kind       string   `json:"kind"`
	ListKind   string   `json:"listKind,omitempty"`
	Categories []string `json:"categories,omitempty"`
}

// CustomResourceValidation holds the schema of one version.
type CustomResourceValidation struct {
	OpenAPIV3Schema *JSONSchemaProps `json:"openAPIV3Schema,omitempty"`
}

// CustomResourceSubresources lists the subresources of one version.
type CustomResourceSubresources struct {
	Status *CustomResourceSubresourceStatus `json:"status,omitempty"`
	Scale  *CustomResourceSubresourceScale  `json:"scale,omitempty"`
}

// CustomResourceSubresourceStatus enables the /status subresource. It has no fields.
type CustomResourceSubresourceStatus struct{}

// CustomResourceSubresourceScale enables the /scale subresource.
type CustomResourceSubresourceScale struct {
	SpecReplicasPath   string  `json:"specReplicasPath"`
	StatusReplicasPath string  `json:"statusReplicasPath"`
	LabelSelectorPath  *string `json:"labelSelectorPath,omitempty"`
}

// CustomResourceDefinitionConditionType is the type of a CRD condition.
type CustomResourceDefinitionConditionType string

// CRD condition types.
const (
	Established         CustomResourceDefinitionConditionType = "Established"
	NamesAccepted       CustomResourceDefinitionConditionType = "NamesAccepted"
	NonStructuralSchema CustomResourceDefinitionConditionType = "NonStructuralSchema"
	Terminating         CustomResourceDefinitionConditionType = "Terminating"
)

// ConditionStatus is True, False or Unknown.
type ConditionStatus string

// Condition statuses.
const (
	ConditionTrue    ConditionStatus = "True"
	ConditionFalse   ConditionStatus = "False"
	ConditionUnknown ConditionStatus = "Unknown"
)

// CustomResourceDefinitionCondition is one condition of a CRD.
type CustomResourceDefinitionCondition struct {
	Type               CustomResourceDefinitionConditionType `json:"type"`
	Status             ConditionStatus                       `json:"status"`
	LastTransitionTime metav1.Time                           `json:"lastTransitionTime,omitempty"`
	Reason             string                                `json:"reason,omitempty"`
	Message            string                                `json:"message,omitempty"`
	// ObservedGeneration is the CRD generation the condition was set for
	// (kube-apiserver's CRDObservedGenerationTracking; kloop leaves it 0).
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// CustomResourceDefinitionStatus is the observed state of a CRD.
type CustomResourceDefinitionStatus struct {
	Conditions     []CustomResourceDefinitionCondition `json:"conditions,omitempty"`
	AcceptedNames  CustomResourceDefinitionNames       `json:"acceptedNames"`
	StoredVersions []string                            `json:"storedVersions"`
	// ObservedGeneration is the CRD generation the status was set for
	// (kube-apiserver's CRDObservedGenerationTracking; kloop leaves it 0).
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// JSONSchemaProps is a JSON-Schema following Specification Draft 4 as
// restricted by Kubernetes (apiextensions.k8s.io/v1 JSONSchemaProps).
//
// Every field round-trips. x-kubernetes-validations (CEL rules) is accepted,
// stored and served in OpenAPI, but kloop does not evaluate it.
// x-kubernetes-list-type, x-kubernetes-list-map-keys and x-kubernetes-map-type
// are validated for shape by ValidateCRD and used for set/map uniqueness in
// Structural.Validate.
type JSONSchemaProps struct {
	ID                   string                     `json:"id,omitempty"`
	Schema               JSONSchemaURL              `json:"$schema,omitempty"`
	Ref                  *string                    `json:"$ref,omitempty"`
	Description          string                     `json:"description,omitempty"`
	Type                 string                     `json:"type,omitempty"`
	Format               string                     `json:"format,omitempty"`
	Title                string                     `json:"title,omitempty"`
	Default              *JSON                      `json:"default,omitempty"`
	Maximum              *float64                   `json:"maximum,omitempty"`
	ExclusiveMaximum     bool                       `json:"exclusiveMaximum,omitempty"`
	Minimum              *float64                   `json:"minimum,omitempty"`
	ExclusiveMinimum     bool                       `json:"exclusiveMinimum,omitempty"`
	MaxLength            *int64                     `json:"maxLength,omitempty"`
	MinLength            *int64                     `json:"minLength,omitempty"`
	Pattern              string                     `json:"pattern,omitempty"`
	MaxItems             *int64                     `json:"maxItems,omitempty"`
	MinItems             *int64                     `json:"minItems,omitempty"`
	UniqueItems          bool                       `json:"uniqueItems,omitempty"`
	MultipleOf           *float64                   `json:"multipleOf,omitempty"`
	Enum                 []JSON                     `json:"enum,omitempty"`
	MaxProperties        *int64                     `json:"maxProperties,omitempty"`
	MinProperties        *int64                     `json:"minProperties,omitempty"`
	Required             []string                   `json:"required,omitempty"`
	Items                *JSONSchemaPropsOrArray    `json:"items,omitempty"`
	AllOf                []JSONSchemaProps          `json:"allOf,omitempty"`
	OneOf                []JSONSchemaProps          `json:"oneOf,omitempty"`
	AnyOf                []JSONSchemaProps          `json:"anyOf,omitempty"`
	Not                  *JSONSchemaProps           `json:"not,omitempty"`
	Properties           map[string]JSONSchemaProps `json:"properties,omitempty"`
	AdditionalProperties *JSONSchemaPropsOrBool     `json:"additionalProperties,omitempty"`
	PatternProperties    map[string]JSONSchemaProps `json:"patternProperties,omitempty"`
	Dependencies         JSONSchemaDependencies     `json:"dependencies,omitempty"`
	AdditionalItems      *JSONSchemaPropsOrBool     `json:"additionalItems,omitempty"`
	Definitions          JSONSchemaDefinitions      `json:"definitions,omitempty"`
	ExternalDocs         *ExternalDocumentation     `json:"externalDocs,omitempty"`
	Example              *JSON                      `json:"example,omitempty"`
	Nullable             bool                       `json:"nullable,omitempty"`

	XPreserveUnknownFields *bool           `json:"x-kubernetes-preserve-unknown-fields,omitempty"`
	XEmbeddedResource      bool            `json:"x-kubernetes-embedded-resource,omitempty"`
	XIntOrString           bool            `json:"x-kubernetes-int-or-string,omitempty"`
	XListMapKeys           []string        `json:"x-kubernetes-list-map-keys,omitempty"`
	XListType              *string         `json:"x-kubernetes-list-type,omitempty"`
	XMapType               *string         `json:"x-kubernetes-map-type,omitempty"`
	XValidations           ValidationRules `json:"x-kubernetes-validations,omitempty" patchStrategy:"merge" patchMergeKey:"rule"`
}

// ValidationRules are CEL rules (x-kubernetes-validations). kloop stores and
// serves them but does not evaluate them.
type ValidationRules []ValidationRule

// ValidationRule is one CEL rule.
type ValidationRule struct {
	Rule              string  `json:"rule"`
	Message           string  `json:"message,omitempty"`
	MessageExpression string  `json:"messageExpression,omitempty"`
	Reason            *string `json:"reason,omitempty"`
	FieldPath         string  `json:"fieldPath,omitempty"`
	OptionalOldSelf   *bool   `json:"optionalOldSelf,omitempty"`
}

// JSONSchemaURL is the $schema field.
type JSONSchemaURL string

// JSONSchemaDefinitions is the definitions field.
type JSONSchemaDefinitions map[string]JSONSchemaProps

// JSONSchemaDependencies is the dependencies field.
type JSONSchemaDependencies map[string]JSONSchemaPropsOrStringArray

// ExternalDocumentation points at more documentation.
type ExternalDocumentation struct {
	Description string `json:"description,omitempty"`
	URL         string `json:"url,omitempty"`
}

// JSON is an arbitrary JSON value kept as raw bytes (default, enum, example).
// An empty Raw marshals as null.
type JSON struct {
	Raw []byte `json:"-"`
}

// MarshalJSON returns the raw bytes, or null when empty.
func (j JSON) MarshalJSON() ([]byte, error) {
	if len(j.Raw) > 0 {
		return j.Raw, nil
	}
	return []byte("null"), nil
}

// UnmarshalJSON keeps a copy of data; a literal null leaves Raw empty.
func (j *JSON) UnmarshalJSON(data []byte) error {
	if j == nil {
		return errors.New("apiext.JSON: UnmarshalJSON on nil pointer")
	}
	if !bytes.Equal(data, []byte("null")) {
		j.Raw = append(j.Raw[:0], data...)
	}
	return nil
}

// DeepCopyInto copies j into out.
func (j *JSON) DeepCopyInto(out *JSON) {
	*out = *j
	if j.Raw != nil {
		out.Raw = bytes.Clone(j.Raw)
	}
}

// DeepCopy returns a deep copy of j.
func (j *JSON) DeepCopy() *JSON {
	if j == nil {
		return nil
	}
	out := new(JSON)
	j.DeepCopyInto(out)
	return out
}

// JSONSchemaPropsOrArray is a schema or an array of schemas (items).
type JSONSchemaPropsOrArray struct {
	Schema      *JSONSchemaProps
	JSONSchemas []JSONSchemaProps
}

// MarshalJSON writes the array when set, otherwise the schema.
func (s JSONSchemaPropsOrArray) MarshalJSON() ([]byte, error) {
	if len(s.JSONSchemas) > 0 {
		return json.Marshal(s.JSONSchemas)
	}
	return json.Marshal(s.Schema)
}

// UnmarshalJSON accepts an object or an array of objects.
func (s *JSONSchemaPropsOrArray) UnmarshalJSON(data []byte) error {
	var nw JSONSchemaPropsOrArray
	if err := schemaOr(data, &nw.Schema, "[", &nw.JSONSchemas, "items must be a schema object or an array of schemas"); err != nil {
		return err
	}
	*s = nw
	return nil
}

// JSONSchemaPropsOrBool is a schema or a boolean (additionalProperties,
// additionalItems). A schema implies Allows.
type JSONSchemaPropsOrBool struct {
	Allows bool
	Schema *JSONSchemaProps
}

// MarshalJSON writes the schema when set, otherwise the boolean.
func (s JSONSchemaPropsOrBool) MarshalJSON() ([]byte, error) {
	if s.Schema != nil {
		return json.Marshal(s.Schema)
	}
	if s.Allows {
		return []byte("true"), nil
	}
	return []byte("false"), nil
}

// UnmarshalJSON accepts an object or a boolean.
func (s *JSONSchemaPropsOrBool) UnmarshalJSON(data []byte) error {
	var nw JSONSchemaPropsOrBool
	if err := schemaOr(data, &nw.Schema, "tf", &nw.Allows, "expected a schema object or a boolean"); err != nil {
		return err
	}
	if nw.Schema != nil {
		nw.Allows = true // a schema allows
	}
	*s = nw
	return nil
}

// JSONSchemaPropsOrStringArray is a schema or an array of property names
// (dependencies).
type JSONSchemaPropsOrStringArray struct {
	Schema   *JSONSchemaProps
	Property []string
}

// MarshalJSON writes the property list when set, otherwise the schema.
func (s JSONSchemaPropsOrStringArray) MarshalJSON() ([]byte, error) {
	if len(s.Property) > 0 {
		return json.Marshal(s.Property)
	}
	if s.Schema != nil {
		return json.Marshal(s.Schema)
	}
	return []byte("null"), nil
}

// UnmarshalJSON accepts an object or an array of strings.
func (s *JSONSchemaPropsOrStringArray) UnmarshalJSON(data []byte) error {
	var nw JSONSchemaPropsOrStringArray
	if err := schemaOr(data, &nw.Schema, "[", &nw.Property, "expected a schema object or an array of strings"); err != nil {
		return err
	}
	*s = nw
	return nil
}

// schemaOr decodes data, the JSON of a schema or of something else: an
// object into *schema, a value whose first byte is in alts (an array: "[",
// a boolean: "tf") into *alt, null into nothing; anything else is an error
// saying want.
func schemaOr[A any](data []byte, schema **JSONSchemaProps, alts string, alt *A, want string) error {
	switch c := firstByte(data); {
	case c == '{':
		var sch JSONSchemaProps
		if err := json.Unmarshal(data, &sch); err != nil {
			return err
		}
		*schema = &sch
	case c != 0 && strings.IndexByte(alts, c) >= 0:
		return json.Unmarshal(data, alt)
	case c == 'n':
	default:
		return fmt.Errorf("apiext: %s, got %.20q", want, data)
	}
	return nil
}

func firstByte(data []byte) byte {
	data = bytes.TrimLeft(data, " \t\r\n")
	if len(data) == 0 {
		return 0
	}
	return data[0]
}
