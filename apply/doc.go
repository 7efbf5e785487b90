// Package apply applies the patch formats of the Kubernetes API to JSON
// documents: JSON Patch (RFC 6902), JSON Merge Patch (RFC 7386) and
// Strategic Merge Patch (patch strategies and merge keys from the type);
// and keeps field ownership: managedFields on every write and
// Server-Side Apply, with kube-apiserver's own field manager on the
// structured-merge-diff types of a schema.Type. It knows no HTTP and no
// storage.
package apply
