package server

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
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
		{"exactly the threshold stays plain, as kube's (more than 128 KiB)", func(w http.ResponseWriter) {
			w.Write(big[:gzipMinLength])
		}, "gzip", http.StatusOK, false, big[:gzipMinLength]},
		{"exactly the threshold declared stays plain", func(w http.ResponseWriter) {
			w.Header().Set("Content-Length", strconv.Itoa(gzipMinLength))
			w.Write(big[:gzipMinLength])
		}, "gzip", http.StatusOK, false, big[:gzipMinLength]},
		{"one byte more is gzipped", func(w http.ResponseWriter) {
			w.Write(big[:gzipMinLength+1])
		}, "gzip", http.StatusOK, true, big[:gzipMinLength+1]},
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
			e.Use(compressLarge(newSegmentCache(segmentCacheBytes)))
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

// TestCompressDeclaredLength: a handler that declares its answer's length
// (single objects do) is decided at the first byte: a small answer goes
// out as written, not held back and copied, and keeps its Content-Length;
// a large one is gzipped from the start, its Content-Length dropped.
func TestCompressDeclaredLength(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), gzipMinLength/16+1)
	for _, tc := range []struct {
		name    string
		body    []byte
		gzipped bool
	}{
		{"small", []byte("0123456789"), false},
		{"large", big, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			e := echo.New()
			e.Use(compressLarge(newSegmentCache(segmentCacheBytes)))
			e.GET("/", func(c echo.Context) error {
				w := c.Response()
				w.Header().Set(echo.HeaderContentLength, strconv.Itoa(len(tc.body)))
				w.WriteHeader(http.StatusOK)
				half := len(tc.body) / 2
				w.Write(tc.body[:half])
				// Already decided before the rest is written.
				if rec.Header().Get("Content-Encoding") == "" && rec.Body.Len() == 0 {
					t.Errorf("the first %d bytes were held back", half)
				}
				if got := rec.Header().Get("Content-Encoding") == "gzip"; got != tc.gzipped {
					t.Errorf("after the first write, gzipped %v; want %v", got, tc.gzipped)
				}
				w.Write(tc.body[half:])
				return nil
			})
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			req.Header.Set("Accept-Encoding", "gzip")
			e.ServeHTTP(rec, req)
			body := rec.Body.Bytes()
			cl := rec.Header().Get(echo.HeaderContentLength)
			if tc.gzipped {
				if cl != "" {
					t.Fatalf("gzipped answer kept Content-Length %s", cl)
				}
				zr, err := gzip.NewReader(bytes.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				if body, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
			} else if cl != strconv.Itoa(len(tc.body)) {
				t.Fatalf("Content-Length %q; want %d", cl, len(tc.body))
			}
			if !bytes.Equal(body, tc.body) {
				t.Fatalf("body of %d bytes differs from the %d written", len(body), len(tc.body))
			}
		})
	}
}
