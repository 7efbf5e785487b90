// Package openapi holds the OpenAPI definitions of every Go type Tabula
// serves, generated from the k8s.io/api and k8s.io/apimachinery sources with
// k8s.io/kube-openapi's openapi-gen. GetOpenAPIDefinitions (in
// zz_generated.openapi.go) maps Go type names such as
// "k8s.io/api/core/v1.ConfigMap" to their schemas; server/openapi turns them
// into the /openapi/v2 and /openapi/v3 documents.
//
// Regenerate with `go generate ./schema/openapi/` after changing the list of
// packages below or the k8s.io/api version. API rule violations of the
// upstream types are known and not reported (--report-filename=/dev/null).
package openapi

//go:generate go tool openapi-gen --output-dir . --output-pkg github.com/tabula-dev/tabula/schema/openapi --output-file zz_generated.openapi.go --report-filename /dev/null k8s.io/api/core/v1 k8s.io/api/authentication/v1 k8s.io/api/authorization/v1 k8s.io/api/coordination/v1 k8s.io/api/events/v1 k8s.io/api/apps/v1 k8s.io/api/autoscaling/v1 k8s.io/api/autoscaling/v2 k8s.io/api/batch/v1 k8s.io/api/certificates/v1 k8s.io/api/flowcontrol/v1 k8s.io/api/discovery/v1 k8s.io/api/networking/v1 k8s.io/api/node/v1 k8s.io/api/policy/v1 k8s.io/api/rbac/v1 k8s.io/api/scheduling/v1 k8s.io/api/storage/v1 k8s.io/api/admissionregistration/v1 k8s.io/api/admissionregistration/v1beta1 k8s.io/api/resource/v1 k8s.io/kube-aggregator/pkg/apis/apiregistration/v1 k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1 k8s.io/apimachinery/pkg/apis/meta/v1 k8s.io/apimachinery/pkg/runtime k8s.io/apimachinery/pkg/util/intstr k8s.io/apimachinery/pkg/api/resource k8s.io/apimachinery/pkg/version
