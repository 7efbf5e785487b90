// Package registry is the layer between HTTP and storage: it creates,
// updates (read-modify-write with compare-and-swap), deletes (finalizers,
// propagation), reads, lists and watches the objects of a schema.Type.
// The HTTP handlers and the in-process controllers call it alike, so every
// write runs the same defaulting, validation, admission and bookkeeping.
//
// Errors it returns are Kubernetes Status errors (apierrors); store errors
// are translated here, once.
package registry
