package server_test

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestGzipLargeChunkedResponse: a document of more than 128 KiB written
// in chunks (the OpenAPI handler uses http.ServeContent) arrives whole and
// compressed; a small response is not compressed.
func TestGzipLargeChunkedResponse(t *testing.T) {
	h := refNewHarness(t)
	plain := h.do("GET", "/openapi/v3/api/v1", nil, nil)
	if plain.Code != http.StatusOK || plain.Body.Len() < 128*1024 {
		t.Fatalf("uncompressed document: %d, %d bytes; want 200 and more than 128 KiB", plain.Code, plain.Body.Len())
	}
	zipped := h.do("GET", "/openapi/v3/api/v1", map[string]string{"Accept-Encoding": "gzip"}, nil)
	if got := zipped.Header().Get("Content-Encoding"); got != "gzip" {
		t.Fatalf("Content-Encoding = %q; want gzip", got)
	}
	zr, err := gzip.NewReader(zipped.Body)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("decompress: %v", err)
	}
	if len(body) != plain.Body.Len() || !json.Valid(body) {
		t.Fatalf("gzipped document decompresses to %d bytes (valid JSON: %v); want the same %d bytes", len(body), json.Valid(body), plain.Body.Len())
	}
	small := h.do("GET", "/api/v1/namespaces/default/configmaps", map[string]string{"Accept-Encoding": "gzip"}, nil)
	if small.Header().Get("Content-Encoding") != "" || !strings.Contains(small.Body.String(), "ConfigMapList") {
		t.Fatalf("small list: Content-Encoding %q; want none", small.Header().Get("Content-Encoding"))
	}
}
