package apiext

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func mustSchema(t testing.TB, y string) *Structural {
	t.Helper()
	var p JSONSchemaProps
	if err := yaml.Unmarshal([]byte(y), &p); err != nil {
		t.Fatalf("schema yaml: %v", err)
	}
	s, err := NewStructural(&p)
	if err != nil {
		t.Fatalf("NewStructural: %v", err)
	}
	return s
}

func mustObj(t testing.TB, js string) map[string]any {
	t.Helper()
	v, err := decodeJSON([]byte(js))
	if err != nil {
		t.Fatalf("object json: %v", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("not an object: %s", js)
	}
	return m
}

const widgetSchema = `
type: object
properties:
  apiVersion: {type: string}
  kind: {type: string}
  metadata: {type: object}
  spec:
    type: object
    required: [name]
    properties:
      name: {type: string, minLength: 2, maxLength: 5, pattern: '^[a-z]+$'}
      replicas: {type: integer, minimum: 1, maximum: 10}
      ratio: {type: number, minimum: 0, exclusiveMinimum: true, maximum: 1, exclusiveMaximum: true, multipleOf: 0.25}
      color: {type: string, enum: [red, green]}
      level: {type: integer, enum: [1, 2]}
      port: {x-kubernetes-int-or-string: true, anyOf: [{type: integer}, {type: string}]}
      nick: {type: string, nullable: true}
      when: {type: string, format: date-time}
      tags: {type: array, minItems: 1, maxItems: 2, items: {type: string}}
      set: {type: array, x-kubernetes-list-type: set, items: {type: string}}
      ports:
        type: array
        x-kubernetes-list-type: map
        x-kubernetes-list-map-keys: [port]
        items: {type: object, required: [port], properties: {port: {type: integer}, name: {type: string}}}
      labels: {type: object, maxProperties: 2, minProperties: 1, additionalProperties: {type: string}}
      closed: {type: object, additionalProperties: false}
      either: {type: string, oneOf: [{pattern: '^a'}, {pattern: 'b$'}]}
      notab: {type: string, not: {enum: [ab]}}
      all: {type: string, allOf: [{minLength: 2}, {maxLength: 3}]}
      flag: {type: boolean}
      template: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}
      id: {type: string, format: uuid}
      blob: {type: string, format: byte}
      mail: {type: string, format: email}
      custom: {type: string, format: my-own-format}
      matrix: {type: array, items: {type: array, items: {type: integer, maximum: 5}}}
      groups: {type: object, additionalProperties: {type: array, items: {type: string, pattern: '^g'}}}
`

func TestValidate(t *testing.T) {
	s := mustSchema(t, widgetSchema)
	tests := []struct {
		name string
		obj  string
		want []string // exact error strings, in order
	}{
		{"valid", `{"spec":{"name":"ab","replicas":3,"ratio":0.5,"color":"red","level":2,"port":"http","when":"2026-01-02T03:04:05Z","tags":["x"],"labels":{"a":"b"},"either":"ax","notab":"x","all":"abc","flag":true,"nick":null}}`, nil},
		{"integer as float64 integral", `{"spec":{"name":"ab","replicas":3.0}}`, nil},
		{"int-or-string integer", `{"spec":{"name":"ab","port":8080}}`, nil},
		{"wrong type", `{"spec":{"name":"ab","replicas":"string"}}`,
			[]string{`spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"`}},
		{"number for integer", `{"spec":{"name":"ab","replicas":1.5}}`,
			[]string{`spec.replicas: Invalid value: "number": spec.replicas in body must be of type integer: "number"`}},
		{"null not nullable", `{"spec":{"name":"ab","replicas":null}}`,
			[]string{`spec.replicas: Invalid value: "null": spec.replicas in body must be of type integer: "null"`}},
		{"required", `{"spec":{}}`, []string{`spec.name: Required value`}},
		{"enum", `{"spec":{"name":"ab","color":"blue"}}`,
			[]string{`spec.color: Unsupported value: "blue": supported values: "red", "green"`}},
		{"enum numbers", `{"spec":{"name":"ab","level":3}}`,
			[]string{`spec.level: Unsupported value: 3: supported values: "1", "2"`}},
		{"maximum", `{"spec":{"name":"ab","replicas":11}}`,
			[]string{`spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10`}},
		{"minimum", `{"spec":{"name":"ab","replicas":0}}`,
			[]string{`spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1`}},
		{"exclusive bounds", `{"spec":{"name":"ab","ratio":0}}`,
			[]string{`spec.ratio: Invalid value: 0: spec.ratio in body should be greater than 0`}},
		{"exclusive max", `{"spec":{"name":"ab","ratio":1}}`,
			[]string{`spec.ratio: Invalid value: 1: spec.ratio in body should be less than 1`}},
		{"multipleOf", `{"spec":{"name":"ab","ratio":0.3}}`,
			[]string{`spec.ratio: Invalid value: 0.3: spec.ratio in body should be a multiple of 0.25`}},
		{"maxLength", `{"spec":{"name":"abcdef"}}`,
			[]string{`spec.name: Too long: may not be more than 5 bytes`}},
		{"minLength and pattern", `{"spec":{"name":"A"}}`,
			[]string{`spec.name: Invalid value: "A": spec.name in body should be at least 2 chars long`, `spec.name: Invalid value: "A": spec.name in body should match '^[a-z]+$'`}},
		{"format", `{"spec":{"name":"ab","when":"yesterday"}}`,
			[]string{`spec.when: Invalid value: "yesterday": spec.when in body must be of type date-time: "yesterday"`}},
		{"int-or-string wrong", `{"spec":{"name":"ab","port":true}}`,
			[]string{
				`spec.port: Invalid value: "": "spec.port" must validate at least one schema (anyOf)`,
				`spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"`,
				`spec.port: Invalid value: "boolean": spec.port in body must be of type integer: "boolean"`,
			}},
		{"items", `{"spec":{"name":"ab","tags":[1]}}`,
			[]string{`spec.tags[0]: Invalid value: "integer": spec.tags[0] in body must be of type string: "integer"`}},
		{"minItems", `{"spec":{"name":"ab","tags":[]}}`,
			[]string{`spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items`}},
		{"maxItems", `{"spec":{"name":"ab","tags":["a","b","c"]}}`,
			[]string{`spec.tags: Too many: 3: must have at most 2 items`}},
		{"set duplicate", `{"spec":{"name":"ab","set":["a","b","a"]}}`,
			[]string{`spec.set[2]: Duplicate value: "a"`}},
		{"map duplicate", `{"spec":{"name":"ab","ports":[{"port":80},{"port":80,"name":"x"}]}}`,
			[]string{`spec.ports[1]: Duplicate value: {"port":80}`}},
		{"additionalProperties schema", `{"spec":{"name":"ab","labels":{"a":1}}}`,
			[]string{`spec.labels.a: Invalid value: "integer": spec.labels.a in body must be of type string: "integer"`}},
		{"maxProperties", `{"spec":{"name":"ab","labels":{"a":"1","b":"2","c":"3"}}}`,
			[]string{`spec.labels: Too many: 3: must have at most 2 items`}},
		{"minProperties", `{"spec":{"name":"ab","labels":{}}}`,
			[]string{`spec.labels: Invalid value: 0: spec.labels in body should have at least 1 properties`}},
		{"additionalProperties false", `{"spec":{"name":"ab","closed":{"x":1}}}`,
			[]string{`spec.closed: Invalid value: "x": spec.closed.x in body is a forbidden property`}},
		{"oneOf none", `{"spec":{"name":"ab","either":"xx"}}`,
			[]string{`spec.either: Invalid value: "": "spec.either" must validate one and only one schema (oneOf). Found none valid`, `spec.either: Invalid value: "xx": spec.either in body should match '^a'`}},
		{"oneOf both", `{"spec":{"name":"ab","either":"ab"}}`,
			[]string{`spec.either: Invalid value: "": "spec.either" must validate one and only one schema (oneOf). Found 2 valid alternatives`}},
		{"not", `{"spec":{"name":"ab","notab":"ab"}}`,
			[]string{`spec.notab: Invalid value: "": "spec.notab" must not validate the schema (not)`}},
		{"allOf", `{"spec":{"name":"ab","all":"abcd"}}`,
			[]string{`spec.all: Invalid value: "": "spec.all" must validate all the schemas (allOf)`, `spec.all: Too long: may not be more than 3 bytes`}},
		{"boolean", `{"spec":{"name":"ab","flag":"yes"}}`,
			[]string{`spec.flag: Invalid value: "string": spec.flag in body must be of type boolean: "string"`}},
		{"embedded resource", `{"spec":{"name":"ab","template":{"kind":"Pod","metadata":{"name":"Bad_Name","labels":{"a b":"c"}}}}}`,
			[]string{
				`spec.template.apiVersion: Required value`,
				`spec.template.metadata.labels: Invalid value: "a b": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
			}},
		{"embedded resource valid", `{"spec":{"name":"ab","template":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{}}}}`, nil},
		{"format uuid", `{"spec":{"name":"ab","id":"not-a-uuid"}}`,
			[]string{`spec.id: Invalid value: "not-a-uuid": spec.id in body must be of type uuid: "not-a-uuid"`}},
		{"format byte", `{"spec":{"name":"ab","blob":"!!"}}`,
			[]string{`spec.blob: Invalid value: "!!": spec.blob in body must be of type byte: "!!"`}},
		{"formats valid", `{"spec":{"name":"ab","id":"9b2e1b2c-1f0d-4a1e-8c7e-2f1d4b6a9e10","blob":"aGk=","mail":"a@b.c","custom":"anything"}}`, nil},
		{"required in array items", `{"spec":{"name":"ab","ports":[{"port":1},{"name":"x"}]}}`,
			[]string{`spec.ports[1].port: Required value`}},
		{"nested arrays", `{"spec":{"name":"ab","matrix":[[1,2],[3,9]]}}`,
			[]string{`spec.matrix[1][1]: Invalid value: 9: spec.matrix[1][1] in body should be less than or equal to 5`}},
		{"additionalProperties arrays", `{"spec":{"name":"ab","groups":{"a":["gx","hy"]}}}`,
			[]string{`spec.groups.a[1]: Invalid value: "hy": spec.groups.a[1] in body should match '^g'`}},
		{"several errors sorted by field", `{"spec":{"replicas":"x","color":"blue"}}`,
			[]string{`spec.color: Unsupported value: "blue": supported values: "red", "green"`, `spec.name: Required value`, `spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"`}},
		{"object type", `{"spec":"x"}`,
			[]string{`spec: Invalid value: "string": spec in body must be of type object: "string"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := s.Validate(mustObj(t, tt.obj))
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("errors:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestNewStructuralErrors(t *testing.T) {
	tests := []struct {
		name, schema, want string
	}{
		{"ref", `{"$ref":"#/x"}`, "'$ref' is not supported"},
		{"items array", `{"type":"array","items":[{"type":"string"}]}`, "'items' must be a schema, but is an array"},
		{"bad regexp", `{"type":"object","properties":{"a":{"type":"string","pattern":"(?=x)"}}}`, "openAPIV3Schema.properties[a].pattern: must be a valid regular expression"},
		{"definitions", `{"definitions":{"a":{}}}`, "'definitions' is not supported"},
		{"bad default", `{"type":"string","default":{"x":}}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p JSONSchemaProps
			if err := json.Unmarshal([]byte(tt.schema), &p); err != nil {
				if tt.want == "" {
					return // rejected while decoding, equally fine
				}
				t.Fatal(err)
			}
			_, err := NewStructural(&p)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want containing %q", err, tt.want)
			}
		})
	}
	if _, err := NewStructural(nil); err == nil {
		t.Fatal("nil schema accepted")
	}
}

const defaultSchema = `
type: object
properties:
  metadata: {type: object}
  spec:
    type: object
    default: {}
    properties:
      replicas: {type: integer, default: 1}
      mode: {type: string, default: fast}
      opt: {type: string, nullable: true, default: "x"}
      nodefault: {type: string}
      template:
        type: object
        default: {image: nginx}
        properties:
          image: {type: string}
          pull: {type: string, default: Always}
      ports:
        type: array
        items:
          type: object
          properties:
            port: {type: integer}
            protocol: {type: string, default: TCP}
      byName:
        type: object
        additionalProperties:
          type: object
          properties:
            weight: {type: integer, default: 10}
      list:
        type: array
        items: {type: string, default: "item"}
`

func TestDefault(t *testing.T) {
	s := mustSchema(t, defaultSchema)
	tests := []struct {
		name, in, want string
	}{
		{"all missing", `{"metadata":{"name":"a"}}`,
			`{"metadata":{"name":"a"},"spec":{"replicas":1,"mode":"fast","opt":"x","template":{"image":"nginx","pull":"Always"}}}`},
		{"keeps set values", `{"spec":{"replicas":5,"mode":"slow","template":{"image":"x","pull":"Never"}}}`,
			`{"spec":{"replicas":5,"mode":"slow","opt":"x","template":{"image":"x","pull":"Never"}}}`},
		{"null non-nullable with default gets default", `{"spec":{"replicas":null}}`,
			`{"spec":{"replicas":1,"mode":"fast","opt":"x","template":{"image":"nginx","pull":"Always"}}}`},
		{"null nullable kept", `{"spec":{"opt":null}}`,
			`{"spec":{"replicas":1,"mode":"fast","opt":null,"template":{"image":"nginx","pull":"Always"}}}`},
		{"null without default pruned", `{"spec":{"nodefault":null}}`,
			`{"spec":{"replicas":1,"mode":"fast","opt":"x","template":{"image":"nginx","pull":"Always"}}}`},
		{"items", `{"spec":{"ports":[{"port":80},{"port":53,"protocol":"UDP"}]}}`,
			`{"spec":{"replicas":1,"mode":"fast","opt":"x","template":{"image":"nginx","pull":"Always"},"ports":[{"port":80,"protocol":"TCP"},{"port":53,"protocol":"UDP"}]}}`},
		{"additionalProperties", `{"spec":{"byName":{"a":{},"b":{"weight":3}}}}`,
			`{"spec":{"replicas":1,"mode":"fast","opt":"x","template":{"image":"nginx","pull":"Always"},"byName":{"a":{"weight":10},"b":{"weight":3}}}}`},
		{"null array item defaulted", `{"spec":{"list":["a",null]}}`,
			`{"spec":{"replicas":1,"mode":"fast","opt":"x","template":{"image":"nginx","pull":"Always"},"list":["a","item"]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := mustObj(t, tt.in)
			s.Default(obj)
			if want := mustObj(t, tt.want); !schemaEqual(obj, want) {
				got, _ := json.Marshal(obj)
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
	// Defaults are copied: mutating one defaulted object leaves the next intact.
	a := mustObj(t, `{}`)
	s.Default(a)
	a["spec"].(map[string]any)["template"].(map[string]any)["image"] = "changed"
	b := mustObj(t, `{}`)
	s.Default(b)
	if img := b["spec"].(map[string]any)["template"].(map[string]any)["image"]; img != "nginx" {
		t.Fatalf("default shared between objects: %v", img)
	}
}

func TestDefaultLeavesRootMetadata(t *testing.T) {
	s := mustSchema(t, `{"type":"object","properties":{"metadata":{"type":"object","properties":{"name":{"type":"string","default":"x"}}},"kind":{"type":"string","default":"K"}}}`)
	obj := mustObj(t, `{"metadata":{"namespace":"n","labels":null}}`)
	s.Default(obj)
	if want := mustObj(t, `{"metadata":{"namespace":"n","labels":null}}`); !schemaEqual(obj, want) {
		t.Fatalf("root metadata/kind touched: %v", obj)
	}
}

const pruneSchema = `
type: object
properties:
  spec:
    type: object
    properties:
      a: {type: string}
      obj:
        type: object
        properties:
          keep: {type: string}
      free:
        type: object
        x-kubernetes-preserve-unknown-fields: true
        properties:
          inner:
            type: object
            properties:
              x: {type: string}
      items:
        type: array
        items:
          type: object
          properties:
            num: {type: integer}
      m:
        type: object
        additionalProperties:
          type: object
          properties:
            v: {type: string}
      embedded:
        type: object
        x-kubernetes-embedded-resource: true
        x-kubernetes-preserve-unknown-fields: true
      embeddedStrict:
        type: object
        x-kubernetes-embedded-resource: true
        properties:
          spec: {type: object, properties: {s: {type: string}}}
  status:
    type: object
    properties:
      ready: {type: boolean}
`

func TestPrune(t *testing.T) {
	s := mustSchema(t, pruneSchema)
	tests := []struct {
		name, in, want string
		pruned         []string
	}{
		{"nothing unknown", `{"apiVersion":"v","kind":"K","metadata":{"name":"a","whatever":1},"spec":{"a":"x"}}`,
			`{"apiVersion":"v","kind":"K","metadata":{"name":"a","whatever":1},"spec":{"a":"x"}}`, nil},
		{"unknown at root and nested", `{"extra":1,"spec":{"a":"x","b":2,"obj":{"keep":"k","drop":true}},"status":{"ready":true,"phase":"x"}}`,
			`{"spec":{"a":"x","obj":{"keep":"k"}},"status":{"ready":true}}`, []string{"extra", "spec.b", "spec.obj.drop", "status.phase"}},
		{"preserve unknown fields keeps but prunes known subtrees", `{"spec":{"free":{"anything":{"deep":1},"inner":{"x":"1","y":"2"}}}}`,
			`{"spec":{"free":{"anything":{"deep":1},"inner":{"x":"1"}}}}`, []string{"spec.free.inner.y"}},
		{"items", `{"spec":{"items":[{"num":1,"z":2},{"q":3}]}}`,
			`{"spec":{"items":[{"num":1},{}]}}`, []string{"spec.items[0].z", "spec.items[1].q"}},
		{"additionalProperties", `{"spec":{"m":{"k1":{"v":"a","w":"b"}}}}`,
			`{"spec":{"m":{"k1":{"v":"a"}}}}`, []string{"spec.m.k1.w"}},
		{"embedded keeps apiVersion kind metadata", `{"spec":{"embeddedStrict":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","x":1},"spec":{"s":"a","t":"b"},"other":1}}}`,
			`{"spec":{"embeddedStrict":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","x":1},"spec":{"s":"a"}}}}`, []string{"spec.embeddedStrict.other", "spec.embeddedStrict.spec.t"}},
		{"embedded preserve", `{"spec":{"embedded":{"apiVersion":"v1","anything":{"a":1}}}}`,
			`{"spec":{"embedded":{"apiVersion":"v1","anything":{"a":1}}}}`, nil},
		{"scalar where object expected is left for validation", `{"spec":{"obj":"str"}}`,
			`{"spec":{"obj":"str"}}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := mustObj(t, tt.in)
			pruned := s.Prune(obj)
			if want := mustObj(t, tt.want); !schemaEqual(obj, want) {
				got, _ := json.Marshal(obj)
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
			if !reflect.DeepEqual(pruned, tt.pruned) {
				t.Fatalf("pruned %q, want %q", pruned, tt.pruned)
			}
		})
	}
}

func TestPreserveUnknownAtRoot(t *testing.T) {
	s := mustSchema(t, `{"type":"object","x-kubernetes-preserve-unknown-fields":true}`)
	obj := mustObj(t, `{"spec":{"a":1},"x":[1,2]}`)
	if p := s.Prune(obj); len(p) != 0 {
		t.Fatalf("pruned %v", p)
	}
	if errs := s.Validate(obj); len(errs) != 0 {
		t.Fatalf("errors %v", errs)
	}
}

func FuzzStructural(f *testing.F) {
	f.Add([]byte(widgetSchema), []byte(`{"spec":{"name":"ab","replicas":3}}`))
	f.Add([]byte(defaultSchema), []byte(`{"spec":{"ports":[null,{"port":1}]}}`))
	f.Add([]byte(pruneSchema), []byte(`{"spec":{"items":[1,"a",{"n":"x"}],"m":{"a":null}}}`))
	f.Add([]byte(`{"type":"object","properties":{"a":{"type":"array","items":{"type":"object","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["k"],"default":{"k":1}}}}}`), []byte(`{"a":[{},{"k":1},null,3]}`))
	f.Add([]byte(`{"anyOf":[{"not":{"multipleOf":0}},{"allOf":[{"minimum":1e308}]}],"oneOf":[{}]}`), []byte(`{"a":1e308}`))
	f.Fuzz(func(t *testing.T, schema, obj []byte) {
		js, err := yaml.YAMLToJSON(schema)
		if err != nil {
			return
		}
		var p JSONSchemaProps
		if err := json.Unmarshal(js, &p); err != nil {
			return
		}
		s, err := NewStructural(&p)
		if err != nil {
			return
		}
		v, err := decodeJSON(obj)
		if err != nil {
			return
		}
		m, ok := v.(map[string]any)
		if !ok {
			m = map[string]any{"value": v}
		}
		s.Validate(m)
		s.Default(m)
		s.Prune(m)
		s.Validate(m)
		// Pruning is idempotent.
		if again := s.Prune(m); len(again) != 0 {
			t.Fatalf("second prune removed %v", again)
		}
	})
}
