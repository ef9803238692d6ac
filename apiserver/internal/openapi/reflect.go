package openapi

import (
	"encoding/json"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// schemaProvider is implemented by apimachinery types with a hand-written
// OpenAPI shape (metav1.Time, MicroTime, Duration, resource.Quantity,
// intstr.IntOrString).
type schemaProvider interface {
	OpenAPISchemaType() []string
	OpenAPISchemaFormat() string
}

type oneOfProvider interface {
	OpenAPIV3OneOfTypes() []string
}

type modelNamer interface {
	OpenAPIModelName() string
}

type swaggerDoc interface {
	SwaggerDoc() map[string]string
}

// restFriendlyName turns "k8s.io/api/core/v1.Pod" into
// "io.k8s.api.core.v1.Pod" (kube-openapi's ToRESTFriendlyName).
func restFriendlyName(name string) string {
	parts := strings.Split(name, "/")
	if len(parts) > 0 && strings.Contains(parts[0], ".") {
		d := strings.Split(parts[0], ".")
		for i, j := 0, len(d)-1; i < j; i, j = i+1, j-1 {
			d[i], d[j] = d[j], d[i]
		}
		parts[0] = strings.Join(d, ".")
	}
	return strings.Join(parts, ".")
}

// modelName is the definition name of a named Go type, as kube-apiserver
// names it.
func modelName(t reflect.Type) string {
	if n, ok := reflect.Zero(t).Interface().(modelNamer); ok {
		return n.OpenAPIModelName()
	}
	pkg := t.PkgPath()
	name := t.Name()
	// Generic instantiations carry brackets and package paths.
	name = strings.NewReplacer("[", "_", "]", "_", "/", ".", "*", "", ",", "_", " ", "").Replace(name)
	return restFriendlyName(pkg + "." + name)
}

// gen derives JSON schemas from Go types by reflection over json tags, the
// way kube-openapi's generator does from the same types: named structs and
// apimachinery's special types become definitions referenced by $ref,
// inline/embedded structs are flattened, SwaggerDoc() supplies descriptions,
// patchStrategy/patchMergeKey tags become x-kubernetes-patch-* extensions, and
// fields without omitempty/omitzero are required.
type gen struct {
	v3   bool
	defs map[string]map[string]any
	// done records which Go type produced each definition name.
	done map[string]reflect.Type
	// warnings are schemas that could not be published as given.
	warnings []string
}

func newGen(v3 bool) *gen {
	return &gen{v3: v3, defs: map[string]map[string]any{}, done: map[string]reflect.Type{}}
}

func (g *gen) refPrefix() string {
	if g.v3 {
		return "#/components/schemas/"
	}
	return "#/definitions/"
}

// ref returns a schema referring to definition name, with an optional
// description: {"$ref"} in v2, {"allOf":[{"$ref"}]} in v3 when a sibling is
// needed (OpenAPI 3.0 ignores siblings of $ref).
func (g *gen) ref(name, desc string) map[string]any {
	r := map[string]any{"$ref": g.refPrefix() + name}
	if desc == "" {
		return r
	}
	if g.v3 {
		return map[string]any{"allOf": []any{r}, "description": desc}
	}
	r["description"] = desc
	return r
}

// define makes sure t has a definition and returns its name.
func (g *gen) define(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	name := modelName(t)
	if _, ok := g.done[name]; ok {
		return name
	}
	g.done[name] = t
	g.defs[name] = map[string]any{} // placeholder for recursion
	g.defs[name] = g.namedSchema(t)
	return name
}

func (g *gen) namedSchema(t reflect.Type) map[string]any {
	zero := reflect.Zero(t).Interface()
	desc := ""
	if d, ok := zero.(swaggerDoc); ok {
		desc = d.SwaggerDoc()[""]
	}
	if p, ok := zero.(schemaProvider); ok {
		s := map[string]any{}
		types := p.OpenAPISchemaType()
		if o, ok := zero.(oneOfProvider); ok && g.v3 {
			var alts []any
			for _, tt := range o.OpenAPIV3OneOfTypes() {
				alts = append(alts, map[string]any{"type": tt})
			}
			s["oneOf"] = alts
		} else if len(types) == 1 {
			s["type"] = types[0]
		}
		if f := p.OpenAPISchemaFormat(); f != "" {
			s["format"] = f
		}
		if _, ok := zero.(oneOfProvider); ok {
			// Quantity and IntOrString accept numbers and strings.
			s["x-kubernetes-int-or-string"] = true
		}
		if desc != "" {
			s["description"] = desc
		}
		return s
	}
	if isMarshaler(t) {
		// Custom JSON (apiextensions JSON, JSONSchemaPropsOrArray, ...):
		// the Go fields say nothing about the wire form. kube-apiserver
		// publishes RawExtension and FieldsV1 as objects and the others
		// untyped (any JSON value).
		s := map[string]any{}
		if t == reflect.TypeFor[runtime.RawExtension]() || t == reflect.TypeFor[metav1.FieldsV1]() {
			s["type"] = "object"
		}
		if desc != "" {
			s["description"] = desc
		}
		return s
	}
	if t.Kind() != reflect.Struct {
		s := g.inline(t)
		if desc != "" {
			s["description"] = desc
		}
		return s
	}
	return g.structSchema(t, desc)
}

func (g *gen) structSchema(t reflect.Type, desc string) map[string]any {
	props := map[string]any{}
	var required []string
	g.fields(t, props, &required)
	s := map[string]any{"type": "object"}
	if len(props) > 0 {
		s["properties"] = props
	}
	if len(required) > 0 {
		s["required"] = required
	}
	if desc != "" {
		s["description"] = desc
	}
	return s
}

func (g *gen) fields(t reflect.Type, props map[string]any, required *[]string) {
	var docs map[string]string
	if d, ok := reflect.Zero(t).Interface().(swaggerDoc); ok {
		docs = d.SwaggerDoc()
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, hasTag := f.Tag.Lookup("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" && opts == "" {
			continue
		}
		inline := strings.Contains(","+opts+",", ",inline,") || (f.Anonymous && name == "")
		if inline {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				g.fields(ft, props, required)
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if !hasTag || name == "" {
			name = f.Name
		}
		var s map[string]any
		desc := docs[name]
		if named := g.isNamed(f.Type); named {
			s = g.ref(g.define(f.Type), desc)
			if g.v3 && f.Type.Kind() == reflect.Struct && !strings.Contains(opts, "omitempty") {
				s["default"] = map[string]any{}
			}
		} else {
			s = g.inline(f.Type)
			if desc != "" {
				s["description"] = desc
			}
		}
		if ps := f.Tag.Get("patchStrategy"); ps != "" {
			s["x-kubernetes-patch-strategy"] = ps
		}
		if pk := f.Tag.Get("patchMergeKey"); pk != "" {
			s["x-kubernetes-patch-merge-key"] = pk
		}
		props[name] = s
		if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") {
			*required = append(*required, name)
		}
	}
}

// isNamed reports whether t (through pointers) gets its own definition:
// named structs and types with a hand-written OpenAPI shape.
func (g *gen) isNamed(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Name() == "" || t.PkgPath() == "" {
		return false
	}
	if _, ok := reflect.Zero(t).Interface().(schemaProvider); ok {
		return true
	}
	return t.Kind() == reflect.Struct
}

// inline returns the schema of an unnamed (or primitive-named) type.
func (g *gen) inline(t reflect.Type) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if g.isNamed(t) {
		return g.ref(g.define(t), "")
	}
	switch t.Kind() {
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Uint8, reflect.Uint16, reflect.Int, reflect.Uint:
		return map[string]any{"type": "integer", "format": "int32"}
	case reflect.Int64, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer", "format": "int64"}
	case reflect.Float32:
		return map[string]any{"type": "number", "format": "float"}
	case reflect.Float64:
		return map[string]any{"type": "number", "format": "double"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "format": "byte"}
		}
		return map[string]any{"type": "array", "items": g.inline(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.inline(t.Elem())}
	case reflect.Struct:
		return g.structSchema(t, "")
	}
	// interface{} and anything else: any JSON value.
	if g.v3 {
		return map[string]any{"x-kubernetes-preserve-unknown-fields": true}
	}
	return map[string]any{}
}

var marshalerType = reflect.TypeFor[json.Marshaler]()

// isMarshaler reports whether t or *t has its own MarshalJSON.
func isMarshaler(t reflect.Type) bool {
	return t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType)
}
