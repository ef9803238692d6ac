package openapi

// Query parameters per action, named and described as kube-apiserver does.
// kubectl looks for fieldValidation among the PATCH operation's parameters
// to decide that the server validates fields itself (server-side field
// validation) instead of validating client-side.
var paramDocs = map[string]struct{ typ, doc string }{
	"pretty":               {"string", "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent indicates a browser or command-line HTTP tool (curl and wget)."},
	"dryRun":               {"string", "When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed"},
	"fieldManager":         {"string", "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint."},
	"fieldValidation":      {"string", "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: This will ignore any unknown fields that are silently dropped from the object, and will ignore all but the last duplicate field that the decoder encounters. This is the default behavior prior to v1.23. - Warn: This will send a warning via the standard warning response header for each unknown field that is dropped from the object, and for each duplicate field that is encountered. The request will still succeed if there are no other errors, and will only persist the last of any duplicate fields. This is the default in v1.23+ - Strict: This will fail the request with a BadRequest error if any unknown fields would be dropped from the object, or if any duplicate fields are present. The error returned from the server will contain all unknown and duplicate fields encountered."},
	"force":                {"boolean", "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people. Force flag must be unset for non-apply patch requests."},
	"allowWatchBookmarks":  {"boolean", "allowWatchBookmarks requests watch events with type \"BOOKMARK\". Servers that do not implement bookmarks may ignore this flag and bookmarks are sent at the server's discretion. Clients should not assume bookmarks are returned at any specific interval, nor may they assume the server will send any BOOKMARK event during a session. If this is not a watch, this field is ignored."},
	"continue":             {"string", "The continue option should be set when retrieving more results from the server."},
	"fieldSelector":        {"string", "A selector to restrict the list of returned objects by their fields. Defaults to everything."},
	"labelSelector":        {"string", "A selector to restrict the list of returned objects by their labels. Defaults to everything."},
	"limit":                {"integer", "limit is a maximum number of responses to return for a list call."},
	"resourceVersion":      {"string", "resourceVersion sets a constraint on what resource versions a request may be served from. See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset"},
	"resourceVersionMatch": {"string", "resourceVersionMatch determines how resourceVersion is applied to list calls. It is highly recommended that resourceVersionMatch be set for list calls where resourceVersion is set See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset"},
	"sendInitialEvents":    {"boolean", "`sendInitialEvents=true` may be set together with `watch=true`. In that case, the watch stream will begin with synthetic events to produce the current state of objects in the collection."},
	"timeoutSeconds":       {"integer", "Timeout for the list/watch call. This limits the duration of the call, regardless of any activity or inactivity."},
	"watch":                {"boolean", "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications. Specify resourceVersion."},
	"gracePeriodSeconds":   {"integer", "The duration in seconds before the object should be deleted. Value must be non-negative integer. The value zero indicates delete immediately."},
	"orphanDependents":     {"boolean", "Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7. Should the dependent objects be orphaned."},
	"propagationPolicy":    {"string", "Whether and how garbage collection will be performed. Either this field or OrphanDependents may be set, but not both. Acceptable values are: 'Orphan', 'Background', 'Foreground'."},
}

var (
	listParams   = []string{"allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit", "resourceVersion", "resourceVersionMatch", "sendInitialEvents", "timeoutSeconds", "watch"}
	writeParams  = []string{"dryRun", "fieldManager", "fieldValidation"}
	patchParams  = []string{"dryRun", "fieldManager", "fieldValidation", "force"}
	deleteParams = []string{"dryRun", "gracePeriodSeconds", "orphanDependents", "propagationPolicy"}
)

func paramsFor(action string) []string {
	switch action {
	case "list":
		return listParams
	case "post", "put":
		return writeParams
	case "patch":
		return patchParams
	case "delete":
		return deleteParams
	case "deletecollection":
		return append(append([]string{}, listParams...), deleteParams...)
	}
	return nil
}

type opBuilder struct {
	g       *gen
	r       *Resource
	tag     string
	gvCamel string
}

func (o opBuilder) queryParam(name string) map[string]any {
	d := paramDocs[name]
	if o.g.v3 {
		return map[string]any{"name": name, "in": "query", "description": d.doc, "schema": map[string]any{"type": d.typ, "uniqueItems": true}}
	}
	return map[string]any{"name": name, "in": "query", "description": d.doc, "type": d.typ, "uniqueItems": true}
}

func (o opBuilder) pathParam(name, doc string) map[string]any {
	if o.g.v3 {
		return map[string]any{"name": name, "in": "path", "required": true, "description": doc, "schema": map[string]any{"type": "string", "uniqueItems": true}}
	}
	return map[string]any{"name": name, "in": "path", "required": true, "description": doc, "type": "string", "uniqueItems": true}
}

// pathParams are the path-level parameters: name, namespace, pretty.
func (o opBuilder) pathParams(namespaced, named bool) []any {
	var ps []any
	if named {
		ps = append(ps, o.pathParam("name", "name of the "+o.r.GVK.Kind))
	}
	if namespaced {
		ps = append(ps, o.pathParam("namespace", "object name and auth scope, such as for teams and projects"))
	}
	return append(ps, o.queryParam("pretty"))
}

var (
	patchTypesCR      = []string{"application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml"}
	patchTypesBuiltin = []string{"application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json", "application/apply-patch+yaml"}
	produces          = []string{"application/json", "application/yaml"}
)

// build returns one operation. response and body are definition names
// ("" for none).
func (o opBuilder) build(method, action, operationID, description, response, body string) map[string]any {
	gvk := o.r.GVK
	op := map[string]any{
		"description":                     description,
		"operationId":                     operationID,
		"tags":                            []any{o.tag},
		"x-kubernetes-action":             action,
		"x-kubernetes-group-version-kind": map[string]any{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind},
	}
	var params []any
	for _, p := range paramsFor(action) {
		params = append(params, o.queryParam(p))
	}
	consumes := []string{"application/json", "application/yaml"}
	if method == "patch" {
		consumes = patchTypesCR
		if o.r.StrategicMergePatch {
			consumes = patchTypesBuiltin
		}
	}
	codes := []string{"200"}
	switch action {
	case "post":
		codes = []string{"200", "201", "202"}
	case "put":
		codes = []string{"200", "201"}
	case "delete":
		codes = []string{"200", "202"}
	case "patch":
		codes = []string{"200", "201"}
	}
	descs := map[string]string{"200": "OK", "201": "Created", "202": "Accepted"}
	responses := map[string]any{"401": map[string]any{"description": "Unauthorized"}}
	if o.g.v3 {
		for _, c := range codes {
			content := map[string]any{}
			for _, mt := range produces {
				content[mt] = map[string]any{"schema": o.g.ref(response, "")}
			}
			responses[c] = map[string]any{"description": descs[c], "content": content}
		}
		if body != "" {
			content := map[string]any{}
			for _, mt := range consumes {
				content[mt] = map[string]any{"schema": o.g.ref(body, "")}
			}
			op["requestBody"] = map[string]any{"content": content, "required": method != "delete"}
		}
	} else {
		for _, c := range codes {
			responses[c] = map[string]any{"description": descs[c], "schema": o.g.ref(response, "")}
		}
		if body != "" {
			params = append([]any{map[string]any{"name": "body", "in": "body", "required": method != "delete", "schema": o.g.ref(body, "")}}, params...)
		}
		op["consumes"] = consumes
		op["produces"] = produces
		op["schemes"] = []any{"https"}
	}
	op["responses"] = responses
	if len(params) > 0 {
		op["parameters"] = params
	}
	return op
}
