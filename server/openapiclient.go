package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"k8s.io/client-go/openapi"
)

// localOpenAPI reads this server's own OpenAPI v3 documents from their
// handler, in process, as client-go's OpenAPI client reads them over the
// network: the index at /openapi/v3, then each document at its
// serverRelativeURL. kube's MutatingAdmissionPolicy builds its type
// converters from them, as it does from kube-apiserver's loopback client.
type localOpenAPI struct{ h http.Handler }

func (c localOpenAPI) Paths() (map[string]openapi.GroupVersion, error) {
	body, err := c.get("/openapi/v3", "application/json")
	if err != nil {
		return nil, err
	}
	var index struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(body, &index); err != nil {
		return nil, err
	}
	out := make(map[string]openapi.GroupVersion, len(index.Paths))
	for path, p := range index.Paths {
		out[path] = localOpenAPIDocument{c: c, url: p.ServerRelativeURL}
	}
	return out, nil
}

func (c localOpenAPI) get(url, accept string) ([]byte, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", accept)
	w := httptest.NewRecorder()
	c.h.ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %d %s", url, w.Code, w.Body.Bytes())
	}
	return w.Body.Bytes(), nil
}

type localOpenAPIDocument struct {
	c   localOpenAPI
	url string
}

func (d localOpenAPIDocument) Schema(contentType string) ([]byte, error) {
	return d.c.get(d.url, contentType)
}
func (d localOpenAPIDocument) ServerRelativeURL() string { return d.url }
