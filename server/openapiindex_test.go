package server_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

// TestOpenAPIV3IndexAsKubeAggregator: /openapi/v3 is answered as
// kube-aggregator's OpenAPI v3 proxy answers it in front of
// kube-apiserver: JSON labelled text/plain, Last-Modified the time of the
// request and no ETag, so a conditional request by date gets 304, and
// HEAD the headers alone.
func TestOpenAPIV3IndexAsKubeAggregator(t *testing.T) {
	h := refNewHarness(t)
	before := time.Now().Add(-time.Second)
	r := h.do("GET", "/openapi/v3", nil, nil)
	if r.Code != http.StatusOK || r.Header().Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Fatalf("GET /openapi/v3: %d %q; want 200 text/plain; charset=utf-8", r.Code, r.Header().Get("Content-Type"))
	}
	var index struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(r.Body.Bytes(), &index); err != nil || index.Paths["api/v1"].ServerRelativeURL == "" || index.Paths["apis/apps/v1"].ServerRelativeURL == "" {
		t.Errorf("index %.300s (%v); want api/v1 and apis/apps/v1", r.Body, err)
	}
	if et := r.Header().Get("ETag"); et != "" {
		t.Errorf("ETag %q; kube's index has none", et)
	}
	lm, err := http.ParseTime(r.Header().Get("Last-Modified"))
	if err != nil || lm.Before(before.Truncate(time.Second)) || lm.After(time.Now()) {
		t.Errorf("Last-Modified %q (%v); want the time of the request", r.Header().Get("Last-Modified"), err)
	}
	later := time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)
	if r := h.do("GET", "/openapi/v3", map[string]string{"If-Modified-Since": later}, nil); r.Code != http.StatusNotModified || r.Body.Len() != 0 {
		t.Errorf("If-Modified-Since an hour ahead: %d %.100s; want 304", r.Code, r.Body)
	}
	if r := h.do("HEAD", "/openapi/v3", nil, nil); r.Code != http.StatusOK || r.Body.Len() != 0 || r.Header().Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Errorf("HEAD /openapi/v3: %d, %d bytes, %q; want 200 with headers alone", r.Code, r.Body.Len(), r.Header().Get("Content-Type"))
	}
}
