package apiext_test

import (
	"encoding/json"
	"fmt"

	"kloop.dev/kloop/apiserver/internal/apiext"
)

// A custom object goes through Prune, Default and Validate, in that order, as
// kube-apiserver processes a create or update.
func ExampleStructural() {
	var schema apiext.JSONSchemaProps
	_ = json.Unmarshal([]byte(`{
		"type": "object",
		"properties": {
			"spec": {
				"type": "object",
				"required": ["size"],
				"properties": {
					"size": {"type": "integer", "maximum": 10},
					"color": {"type": "string", "enum": ["red", "green"], "default": "red"}
				}
			}
		}
	}`), &schema)
	s, err := apiext.NewStructural(&schema)
	if err != nil {
		fmt.Println(err)
		return
	}
	var obj map[string]any
	_ = json.Unmarshal([]byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"size":11,"shape":"round"}}`), &obj)

	for _, p := range s.Prune(obj) {
		fmt.Printf("unknown field %q\n", p)
	}
	s.Default(obj)
	fmt.Println("color:", obj["spec"].(map[string]any)["color"])
	for _, e := range s.Validate(obj) {
		fmt.Println(e)
	}
	// Output:
	// unknown field "spec.shape"
	// color: red
	// spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10
}
