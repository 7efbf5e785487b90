package server

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
)

// TestCompressLarge drives the middleware with handlers that write the way
// Tabula's do: one small answer, a large one in pieces, a flush before the
// threshold, a body the handler encoded itself, and a status without body.
func TestCompressLarge(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), gzipMinLength/16+1)
	cases := []struct {
		name     string
		handler  func(w http.ResponseWriter)
		accept   string
		code     int
		gzipped  bool
		wantBody []byte
	}{
		{"small stays plain", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusCreated)
			w.Write([]byte("small"))
		}, "gzip", http.StatusCreated, false, []byte("small")},
		{"large in pieces is gzipped", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusOK)
			for i := 0; i < len(big); i += 1000 {
				w.Write(big[i:min(i+1000, len(big))])
			}
		}, "deflate, gzip", http.StatusOK, true, big},
		{"gzip with parameters is not taken, as on kube-apiserver", func(w http.ResponseWriter) {
			w.Write(big)
		}, "gzip;q=1.0", http.StatusOK, false, big},
		{"no gzip without Accept-Encoding", func(w http.ResponseWriter) {
			w.Write(big)
		}, "", http.StatusOK, false, big},
		{"flush before the threshold sends plain", func(w http.ResponseWriter) {
			w.Write([]byte("head"))
			w.(http.Flusher).Flush()
			w.Write(big)
		}, "gzip", http.StatusOK, false, append([]byte("head"), big...)},
		{"already encoded passes through", func(w http.ResponseWriter) {
			w.Header().Set("Content-Encoding", "br")
			w.Write(big)
		}, "gzip", http.StatusOK, false, big},
		{"status without body", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusNoContent)
		}, "gzip", http.StatusNoContent, false, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := echo.New()
			e.Use(compressLarge)
			e.GET("/", func(c echo.Context) error {
				tc.handler(c.Response())
				return nil
			})
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			if tc.accept != "" {
				req.Header.Set("Accept-Encoding", tc.accept)
			}
			rec := httptest.NewRecorder()
			e.ServeHTTP(rec, req)
			if rec.Code != tc.code {
				t.Fatalf("status %d, want %d", rec.Code, tc.code)
			}
			body := rec.Body.Bytes()
			if enc := rec.Header().Get("Content-Encoding"); (enc == "gzip") != tc.gzipped {
				t.Fatalf("Content-Encoding %q, want gzip: %v", enc, tc.gzipped)
			}
			// kube-apiserver sends Vary only with a compressed body.
			if vary := rec.Header().Get("Vary"); (vary == "Accept-Encoding") != tc.gzipped {
				t.Fatalf("Vary %q, want Accept-Encoding: %v", vary, tc.gzipped)
			}
			if tc.gzipped {
				zr, err := gzip.NewReader(bytes.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				if body, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(body, tc.wantBody) {
				t.Fatalf("body of %d bytes differs from the %d written", len(body), len(tc.wantBody))
			}
		})
	}
}
