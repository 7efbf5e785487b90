package server_test

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
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

// TestObjectAnswersDeclareLength: an answer of one object, the created
// one or a read one, in each media type, declares its length (so the
// compression middleware lets a small one through as written), and the
// length is the body's; a client that accepts gzip gets the same bytes.
func TestObjectAnswersDeclareLength(t *testing.T) {
	h := refNewHarnessCBOR(t, true)
	created := h.do("POST", "/api/v1/namespaces/default/configmaps", map[string]string{"Content-Type": "application/json", "Accept-Encoding": "gzip"},
		[]byte(`{"metadata":{"name":"sized"},"data":{"k":"v"}}`))
	if created.Code != http.StatusCreated || created.Header().Get("Content-Length") != strconv.Itoa(created.Body.Len()) {
		t.Fatalf("create: %d, Content-Length %q for %d bytes", created.Code, created.Header().Get("Content-Length"), created.Body.Len())
	}
	for _, accept := range []string{"application/json", "application/vnd.kubernetes.protobuf", "application/cbor", "application/yaml", "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"} {
		var bodies []string
		for _, enc := range []string{"", "gzip"} {
			r := h.do("GET", "/api/v1/namespaces/default/configmaps/sized", map[string]string{"Accept": accept, "Accept-Encoding": enc}, nil)
			if r.Code != http.StatusOK || r.Header().Get("Content-Encoding") != "" {
				t.Fatalf("get as %s (Accept-Encoding %q): %d, Content-Encoding %q", accept, enc, r.Code, r.Header().Get("Content-Encoding"))
			}
			if got := r.Header().Get("Content-Length"); got != strconv.Itoa(r.Body.Len()) {
				t.Fatalf("get as %s (Accept-Encoding %q): Content-Length %q for %d bytes", accept, enc, got, r.Body.Len())
			}
			bodies = append(bodies, r.Body.String())
		}
		if bodies[0] != bodies[1] || !strings.Contains(bodies[0], "sized") {
			t.Fatalf("get as %s: %q without gzip, %q with it", accept, bodies[0], bodies[1])
		}
	}
}
