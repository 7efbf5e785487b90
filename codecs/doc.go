// Package codecs turns objects into bytes and back for every representation
// Tabula speaks: JSON, YAML, Kubernetes Protobuf (the "k8s\x00"
// envelope) for built-in kinds and kube's CBOR, Table and
// PartialObjectMetadata views, and watch-event and list framing. It also
// negotiates media types (Accept and Content-Type). It knows no HTTP
// beyond header values.
package codecs
