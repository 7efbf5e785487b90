// Package aggregator is kube-aggregator's part of kube-apiserver: a
// group-version whose APIService names a Service is served by that
// Service (an extension API server such as metrics-server). Requests for
// it are authenticated and authorized here, then proxied with the front
// proxy's client certificate and the user in X-Remote-* headers; its
// groups join discovery, legacy and aggregated.
package aggregator
