package apiext

import (
	"errors"
	"fmt"
	"regexp"
	"sort"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Structural is a compiled openAPIV3Schema of one custom resource version. It
// validates, defaults and prunes decoded objects (the value shapes of
// encoding/json or apimachinery's unstructured decoder: map[string]any, []any,
// string, bool, nil, int64/float64/json.Number).
//
// A Structural is immutable after NewStructural and safe for concurrent use.
type Structural struct {
	root *node
}

// node is one compiled schema node. The same type serves the structural
// skeleton (properties, items, additionalProperties, default: used by
// Default and Prune) and the value validations under allOf/anyOf/oneOf/not
// (used only by Validate), exactly as kube-apiserver validates the complete
// schema but prunes and defaults along the skeleton.
type node struct {
	typ             string
	format          string
	nullable        bool
	intOrString     bool
	preserveUnknown bool
	embedded        bool

	properties map[string]*node
	propNames  []string // sorted keys of properties, for stable error order
	// additional is the schema of additionalProperties when it is a schema.
	additional *node
	// additionalSet is true when additionalProperties is present (true,
	// false or a schema); additionalAllows is its boolean meaning.
	additionalSet    bool
	additionalAllows bool
	items            *node

	hasDefault bool
	def        any

	required     []string
	hasEnum      bool
	enum         []any
	min, max     *float64
	exclMin      bool
	exclMax      bool
	minLen       *int64
	maxLen       *int64
	minItems     *int64
	maxItems     *int64
	minProps     *int64
	maxProps     *int64
	uniqueItems  bool
	multipleOf   *float64
	patternSrc   string
	pattern      *regexp.Regexp
	allOf, anyOf []*node
	oneOf        []*node
	not          *node
	listType     string
	listMapKeys  []string
}

// NewStructural compiles s. It fails (with a wrapped, path-carrying error) on
// what kube-apiserver cannot convert either: id, $schema, $ref,
// patternProperties, dependencies, additionalItems, definitions, items given
// as an array, and on defaults or enum values that are not JSON and patterns
// that are not valid Go (RE2) regular expressions.
//
// Whether the schema is structural (types everywhere, no metadata
// restrictions, ...) is checked by ValidateCRD, not here: NewStructural
// compiles any schema it can represent.
func NewStructural(s *JSONSchemaProps) (*Structural, error) {
	if s == nil {
		return nil, errors.New("apiext: NewStructural: nil schema")
	}
	root, err := compile(s, field.NewPath("openAPIV3Schema"))
	if err != nil {
		return nil, fmt.Errorf("apiext: compiling schema: %w", err)
	}
	return &Structural{root: root}, nil
}

func compile(s *JSONSchemaProps, p *field.Path) (*node, error) {
	switch {
	case s.ID != "":
		return nil, fmt.Errorf("%s: OpenAPIV3Schema 'id' is not supported", p)
	case s.Schema != "":
		return nil, fmt.Errorf("%s: OpenAPIV3Schema 'schema' is not supported", p)
	case s.Ref != nil:
		return nil, fmt.Errorf("%s: OpenAPIV3Schema '$ref' is not supported", p)
	case len(s.PatternProperties) > 0:
		return nil, fmt.Errorf("%s: OpenAPIV3Schema 'patternProperties' is not supported", p)
	case len(s.Dependencies) > 0:
		return nil, fmt.Errorf("%s: OpenAPIV3Schema 'dependencies' is not supported", p)
	case s.AdditionalItems != nil:
		return nil, fmt.Errorf("%s: OpenAPIV3Schema 'additionalItems' is not supported", p)
	case len(s.Definitions) > 0:
		return nil, fmt.Errorf("%s: OpenAPIV3Schema 'definitions' is not supported", p)
	case s.Items != nil && len(s.Items.JSONSchemas) > 0:
		return nil, fmt.Errorf("%s: OpenAPIV3Schema 'items' must be a schema, but is an array", p)
	}
	n := &node{
		typ:         s.Type,
		format:      s.Format,
		nullable:    s.Nullable,
		intOrString: s.XIntOrString,
		embedded:    s.XEmbeddedResource,
		required:    s.Required,
		min:         s.Minimum,
		max:         s.Maximum,
		exclMin:     s.ExclusiveMinimum,
		exclMax:     s.ExclusiveMaximum,
		minLen:      s.MinLength,
		maxLen:      s.MaxLength,
		minItems:    s.MinItems,
		maxItems:    s.MaxItems,
		minProps:    s.MinProperties,
		maxProps:    s.MaxProperties,
		uniqueItems: s.UniqueItems,
		multipleOf:  s.MultipleOf,
		patternSrc:  s.Pattern,
		listMapKeys: s.XListMapKeys,
	}
	if s.XPreserveUnknownFields != nil {
		n.preserveUnknown = *s.XPreserveUnknownFields
	}
	if s.XListType != nil {
		n.listType = *s.XListType
	}
	if s.Default != nil && len(s.Default.Raw) > 0 {
		v, err := decodeJSON(s.Default.Raw)
		if err != nil {
			return nil, fmt.Errorf("%s: invalid JSON: %w", p.Child("default"), err)
		}
		n.hasDefault, n.def = true, v
	}
	if s.Enum != nil {
		n.hasEnum = true
		for i, e := range s.Enum {
			if len(e.Raw) == 0 {
				n.enum = append(n.enum, nil)
				continue
			}
			v, err := decodeJSON(e.Raw)
			if err != nil {
				return nil, fmt.Errorf("%s: invalid JSON: %w", p.Child("enum").Index(i), err)
			}
			n.enum = append(n.enum, v)
		}
	}
	if s.Pattern != "" {
		re, err := regexp.Compile(s.Pattern)
		if err != nil {
			return nil, fmt.Errorf("%s: must be a valid regular expression, but isn't: %w", p.Child("pattern"), err)
		}
		n.pattern = re
	}
	if len(s.Properties) > 0 {
		n.properties = make(map[string]*node, len(s.Properties))
		for k, ps := range s.Properties {
			c, err := compile(&ps, p.Child("properties").Key(k))
			if err != nil {
				return nil, err
			}
			n.properties[k] = c
			n.propNames = append(n.propNames, k)
		}
		sort.Strings(n.propNames)
	}
	if ap := s.AdditionalProperties; ap != nil {
		n.additionalSet = true
		n.additionalAllows = ap.Allows || ap.Schema != nil
		if ap.Schema != nil {
			c, err := compile(ap.Schema, p.Child("additionalProperties"))
			if err != nil {
				return nil, err
			}
			n.additional = c
		}
	}
	if s.Items != nil && s.Items.Schema != nil {
		c, err := compile(s.Items.Schema, p.Child("items"))
		if err != nil {
			return nil, err
		}
		n.items = c
	}
	var err error
	if n.allOf, err = compileAll(s.AllOf, p.Child("allOf")); err != nil {
		return nil, err
	}
	if n.anyOf, err = compileAll(s.AnyOf, p.Child("anyOf")); err != nil {
		return nil, err
	}
	if n.oneOf, err = compileAll(s.OneOf, p.Child("oneOf")); err != nil {
		return nil, err
	}
	if s.Not != nil {
		if n.not, err = compile(s.Not, p.Child("not")); err != nil {
			return nil, err
		}
	}
	return n, nil
}

func compileAll(in []JSONSchemaProps, p *field.Path) ([]*node, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make([]*node, len(in))
	for i := range in {
		c, err := compile(&in[i], p.Index(i))
		if err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}
