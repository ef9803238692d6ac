// Package openapi builds the OpenAPI documents kube-apiserver publishes, for
// kloop's embedded API server: /openapi/v2 (Swagger 2.0, JSON and gnostic
// protobuf), the /openapi/v3 discovery document and one OpenAPI 3.0 document
// per group version, from a description of the served resources: custom
// resources by their openAPIV3Schema (apiextensionsv1.JSONSchemaProps), built-in kinds
// by their Go type (reflection over json tags and SwaggerDoc()).
//
// What the documents are for, as kubectl 1.32 and client-go read them:
//
//   - kubectl apply/create/replace/patch decide between server-side and
//     client-side field validation by looking, in the group version's v3
//     document, for a PATCH operation carrying the kind's
//     x-kubernetes-group-version-kind and a query parameter named
//     fieldValidation. Every PATCH here has it, so kubectl sends
//     fieldValidation=Strict and lets the server validate.
//   - kubectl explain finds the GVK on an operation of
//     /apis/<g>/<v>[/namespaces/{namespace}]/<plural>[/{name}], then the
//     components.schemas entry whose x-kubernetes-group-version-kind list
//     contains it, and follows $ref/allOf through the fields.
//   - kubectl apply (client-side) computes strategic merge patches for kinds
//     whose v3 PATCH accepts application/strategic-merge-patch+json
//     (Resource.StrategicMergePatch), reading x-kubernetes-patch-strategy and
//     x-kubernetes-patch-merge-key from the v3 schemas (taken from the Go
//     struct tags); for other kinds it asks /openapi/v2 for the PATCH
//     consumes list and sends a JSON merge patch.
//   - client-go's discovery client fetches /openapi/v2 as protobuf
//     (kubectl's client-side validation fallback and strategic-merge
//     patch metadata); kube-openapi's util/proto parses it and
//     LookupResource finds a model by x-kubernetes-group-version-kind.
//
// Definitions are named like kube-apiserver's (io.k8s.api.core.v1.Pod,
// io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta; a custom resource is
// <reversed group>.<version>.<Kind>, e.g. com.example.v1.Widget). Custom
// resource schemas are published as kube-apiserver publishes them
// (int-or-string unfolded, ObjectMeta and TypeMeta filled in; for v2 without
// junctors, nullable or defaults). A Builder caches the documents and
// rebuilds them only when the set of resources changes; hashes are
// kube-apiserver's (upper-case hex SHA-512) and serve as ETags and v3 ?hash=.
package openapi
