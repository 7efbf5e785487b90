package server

import (
	"strings"

	"github.com/tabula-dev/tabula/schema"
)

// requestInfo is what a resource path names, parsed the way
// kube-apiserver's request-info factory does.
type requestInfo struct {
	Group, Version string
	// Resource is the plural; Subresource e.g. "status".
	Resource, Subresource string
	Namespace, Name       string
	// WatchPath is true for the legacy /watch/ prefix.
	WatchPath bool
	// Subpath is what follows a proxy subresource ("a/b" in
	// …/pods/p/proxy/a/b).
	Subpath string
	Type    *schema.Type
}

// namespaceSubresources are the words after /namespaces/{name}/ that name a
// subresource of the namespace rather than a resource inside it.
var namespaceSubresources = map[string]bool{"status": true, "finalize": true}

// parseResourcePath splits the part of a path after /api/v1 or
// /apis/{group}/{version}. It returns false when the path has too many
// segments to be a resource path, or an empty one ("//") where kube's
// router matches nothing: kube's authorizer reads such a path differently
// (its request info shifts by a segment), so serving it would serve what
// was not authorized. Trailing slashes are let go, as kube's router lets
// them go.
func parseResourcePath(rest string) (requestInfo, bool) {
	rest = strings.TrimRight(rest, "/")
	ri, ok := splitResourcePath(rest)
	if !ok {
		return ri, false
	}
	structural := rest
	if ri.Subpath != "" {
		structural = strings.TrimSuffix(rest, "/"+ri.Subpath)
	}
	if strings.HasPrefix(structural, "/") || strings.Contains(structural, "//") {
		return requestInfo{}, false
	}
	return ri, true
}

func splitResourcePath(rest string) (requestInfo, bool) {
	var ri requestInfo
	if rest == "" {
		return ri, false
	}
	parts := strings.Split(rest, "/")
	if parts[0] == "watch" {
		ri.WatchPath = true
		parts = parts[1:]
	}
	if len(parts) == 0 {
		return ri, false
	}
	if parts[0] == "namespaces" && len(parts) > 1 {
		ri.Namespace = parts[1]
		if len(parts) > 2 && !namespaceSubresources[parts[2]] {
			parts = parts[2:]
		} else {
			// The namespace object itself: its name is the namespace.
			ri.Namespace = ""
			ri.Resource, ri.Name = "namespaces", parts[1]
			if len(parts) > 2 {
				ri.Subresource = parts[2]
			}
			return ri, len(parts) <= 3
		}
	}
	ri.Resource = parts[0]
	if len(parts) > 1 {
		ri.Name = parts[1]
	}
	if len(parts) > 2 {
		ri.Subresource = parts[2]
	}
	if len(parts) > 3 && ri.Subresource == "proxy" {
		ri.Subpath = strings.Join(parts[3:], "/")
		return ri, true
	}
	return ri, len(parts) <= 3
}

// resourceRequest parses a resource URL path (/api/v1/…,
// /apis/{group}/{version}/…); ok is false for any other path.
func resourceRequest(path string) (requestInfo, bool) {
	if rest, ok := strings.CutPrefix(path, "/api/v1/"); ok {
		return parseResourcePath(rest)
	}
	if rest, ok := strings.CutPrefix(path, "/apis/"); ok {
		if parts := strings.SplitN(rest, "/", 3); len(parts) == 3 && parts[0] != "" && parts[1] != "" {
			ri, ok := parseResourcePath(parts[2])
			ri.Group, ri.Version = parts[0], parts[1]
			return ri, ok
		}
	}
	return requestInfo{}, false
}
