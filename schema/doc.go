// Package schema is Tabula's type registry: for every served resource it
// holds the data the generic request path needs — group, version, kind,
// names, scope, the Go type used for Protobuf and strict decoding,
// defaulting and validation hooks, selectable fields and printer columns.
//
// Built-in types are registered from k8s.io/api at start; custom resources
// (later) add entries at run time. The package knows nothing of HTTP or SQL.
package schema
