package server

import (
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/klauspost/compress/flate"
	"github.com/labstack/echo/v4"

	"github.com/tabula-dev/tabula/codecs"
)

// gzipMinLength is kube-apiserver's threshold: responses of more than
// 128 KiB are compressed for clients that accept gzip; smaller ones are
// not worth the CPU.
const gzipMinLength = 128 * 1024

// klauspost/compress's gzip is compress/gzip's interface and format, 1.6-1.7
// times as fast at this level, its output within a tenth of the standard
// library's size (the module was required already, by the Prometheus
// client; its gzip adds ~0.2 MB to the binary).
//
// gzipLevel is kube-apiserver's (defaultGzipContentEncodingLevel in its
// response writers, kubernetes#112296): the fastest, for answers at most
// about a third larger than the default level's on API objects.
const gzipLevel = flate.BestSpeed

// gzipStreams are segmented writers, kept with their run buffers.
var gzipStreams sync.Pool

// compressLarge gzips large responses. A compressor is taken only once a
// response crosses the threshold: resetting one costs more than serving a
// small request, and nearly every response is small. Watch streams, logs
// and proxied or upgraded connections are never compressed: each event or
// line must reach the client when it is written, and a proxy passes the
// backend's bytes as they are. A compressed answer is made of runs kept
// in segments (see segmentedGzip).
func compressLarge(segments *segmentCache) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			if longRunning(req) {
				return next(c)
			}
			res := c.Response()
			if !acceptsGzip(req.Header.Get(echo.HeaderAcceptEncoding)) {
				return next(c)
			}
			w := &gzipWriter{ResponseWriter: res.Writer, segments: segments}
			res.Writer = w
			defer func() {
				w.finish()
				res.Writer = w.ResponseWriter
			}()
			return next(c)
		}
	}
}

// acceptsGzip reads Accept-Encoding as kube-apiserver does: a list token
// that is exactly "gzip". A token with parameters ("gzip;q=0.5") does not
// count there, so it does not count here either.
func acceptsGzip(h string) bool {
	for token := range strings.SplitSeq(h, ",") {
		if strings.TrimSpace(token) == "gzip" {
			return true
		}
	}
	return false
}

// gzipWriter holds back the status and the first bytes of a response until
// it knows whether the body reaches gzipMinLength.
type gzipWriter struct {
	http.ResponseWriter
	code     int
	buf      []byte
	segments *segmentCache
	gz       *segmentedGzip
	// plain is set once the response went out uncompressed (a flush came
	// before the threshold): the rest follows it as is.
	plain bool
}

func (w *gzipWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *gzipWriter) Write(b []byte) (int, error) {
	if w.gz == nil && !w.plain && len(w.buf) == 0 {
		// A response whose length the handler declared (a single
		// object) is decided at its first byte: holding a small one
		// back would only copy it.
		if n, ok := w.declaredLength(); ok {
			if err := w.decide(n > gzipMinLength); err != nil {
				return 0, err
			}
		}
	}
	switch {
	case w.gz != nil:
		return w.gz.Write(b)
	case w.plain:
		return w.ResponseWriter.Write(b)
	case len(w.buf)+len(b) <= gzipMinLength:
		w.buf = append(w.buf, b...)
		return len(b), nil
	}
	if err := w.decide(true); err != nil {
		return 0, err
	}
	return w.Write(b)
}

// declaredLength is the response's Content-Length, if the handler set one.
func (w *gzipWriter) declaredLength() (int64, bool) {
	cl := w.Header().Get(echo.HeaderContentLength)
	if cl == "" {
		return 0, false
	}
	n, err := strconv.ParseInt(cl, 10, 64)
	return n, err == nil
}

// decide commits to a compressed response (large: it passes
// gzipMinLength) or a plain one, and sends what was held.
func (w *gzipWriter) decide(large bool) error {
	h := w.Header()
	if !large || h.Get(echo.HeaderContentEncoding) != "" {
		// Small, or already encoded by the handler: passed through
		// untouched.
		return w.sendPlain()
	}
	// Vary only on compressed answers, as kube-apiserver sends it.
	h.Set(echo.HeaderContentEncoding, "gzip")
	h.Add(echo.HeaderVary, echo.HeaderAcceptEncoding)
	h.Del(echo.HeaderContentLength)
	w.ResponseWriter.WriteHeader(w.status())
	w.gz, _ = gzipStreams.Get().(*segmentedGzip)
	if w.gz == nil || w.gz.cache != w.segments {
		w.gz = newSegmentedGzip(w.ResponseWriter, w.segments)
	} else {
		w.gz.reset(w.ResponseWriter)
	}
	_, err := w.gz.Write(w.buf)
	w.buf = nil
	return err
}

func (w *gzipWriter) status() int {
	if w.code == 0 {
		return http.StatusOK
	}
	return w.code
}

// sendPlain commits to an uncompressed response and sends what was held.
func (w *gzipWriter) sendPlain() error {
	w.plain = true
	w.ResponseWriter.WriteHeader(w.status())
	if len(w.buf) == 0 {
		return nil
	}
	_, err := w.ResponseWriter.Write(w.buf)
	w.buf = nil
	return err
}

// Flush sends what is held: a handler that flushes wants the bytes now.
func (w *gzipWriter) Flush() {
	switch {
	case w.gz != nil:
		w.gz.Flush()
	case !w.plain:
		if w.sendPlain() != nil {
			return
		}
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// finish ends the response: closes the gzip stream, or sends a small
// response as it was written.
func (w *gzipWriter) finish() {
	switch {
	case w.gz != nil:
		w.gz.Close()
		w.gz.out = nil
		gzipStreams.Put(w.gz)
		w.gz = nil
	case !w.plain && (w.code != 0 || len(w.buf) > 0):
		w.sendPlain()
	}
}

func (w *gzipWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// WriteKept is Write for bytes that never change, named by id (see
// segmentedGzip.WriteKept); it is codecs.KeptWriter's.
func (w *gzipWriter) WriteKept(p []byte, id uint64) (int, error) {
	if w.gz != nil {
		return w.gz.WriteKept(p, id)
	}
	return w.Write(p)
}

// keptOut is echo's Response passing a list writer's kept writes
// (codecs.KeptWriter) to the compressor under it, counted as Write
// counts them.
type keptOut struct{ *echo.Response }

func (o keptOut) WriteKept(p []byte, id uint64) (int, error) {
	kw, ok := o.Writer.(codecs.KeptWriter)
	if !ok || !o.Committed {
		return o.Write(p)
	}
	n, err := kw.WriteKept(p, id)
	o.Size += int64(n)
	return n, err
}
