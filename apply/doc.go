// Package apply applies the patch formats of the Kubernetes API to JSON
// documents: JSON Patch (RFC 6902), JSON Merge Patch (RFC 7386) and
// Strategic Merge Patch (patch strategies and merge keys from the type).
// Server-Side Apply will live here too. It knows no HTTP and no storage.
package apply
