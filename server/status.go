package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tabula-dev/tabula/codecs"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// errorHandler is the one place where any error becomes a Status body.
func (s *Server) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	st := s.toStatus(err, c)
	switch {
	case clientGone(err, c):
		// Nobody reads this answer; it is for the metrics and the audit
		// log, and the server did nothing wrong.
		s.log.Debug("client went away", "method", c.Request().Method, "path", c.Request().URL.Path)
	case tooLargeRVStatus(st):
		// An answer to the client's question (a revision not reached yet,
		// retry later), not a failure of the server.
		s.log.Debug("resource version not reached", "method", c.Request().Method, "path", c.Request().URL.Path)
	case st.Code >= 500:
		s.log.Error("request failed", "method", c.Request().Method, "path", c.Request().URL.Path, "err", err)
	}
	s.writeStatus(c, st)
}

// tooLargeRVStatus says whether st is tooLargeRV's answer.
func tooLargeRVStatus(st metav1.Status) bool {
	if st.Details == nil {
		return false
	}
	for _, c := range st.Details.Causes {
		if c.Type == metav1.CauseTypeResourceVersionTooLarge {
			return true
		}
	}
	return false
}

// writeStatus writes a Status in the representation the client accepts
// (JSON when it accepts nothing we can write).
func (s *Server) writeStatus(c echo.Context, st metav1.Status) {
	st.Kind, st.APIVersion = "Status", "v1"
	if st.Status == "" {
		st.Status = metav1.StatusFailure
	}
	if c.Request().Method == http.MethodHead {
		_ = c.NoContent(int(st.Code))
		return
	}
	mt := codecs.JSON
	out, negotiated := codecs.Negotiate(c.Request().Header.Get("Accept"), codecs.Offer{Protobuf: true, CBOR: s.codec.CBOR() && cborPath(c.Request().URL.Path)})
	if negotiated {
		mt = out.MediaType
	}
	s.auditStatus(c, st)
	c.Response().Header().Set(echo.HeaderContentType, mt)
	// As kube-apiserver: a Status that says when to retry (a too-large
	// resourceVersion) says it in the header clients read too.
	if st.Details != nil && st.Details.RetryAfterSeconds > 0 {
		c.Response().Header().Set("Retry-After", strconv.Itoa(int(st.Details.RetryAfterSeconds)))
	}
	c.Response().WriteHeader(int(st.Code))
	if !negotiated {
		// kube's fallback when the error's form cannot be negotiated
		// either (responsewriters.WriteRawJSON): indented JSON, no newline.
		_ = writeIndented(c.Response(), &st)
		return
	}
	_ = s.codec.Encode(c.Response(), mt, &st, wantsPretty(c))
}

// cborPath says whether errors on path may be written in CBOR: where
// kube-apiserver serves CBOR, its resources and named groups' resource
// lists, not the discovery documents above them.
func cborPath(path string) bool {
	if path == "/api/v1" || strings.HasPrefix(path, "/api/v1/") {
		return true
	}
	rest, ok := strings.CutPrefix(path, "/apis/")
	return ok && strings.Count(strings.Trim(rest, "/"), "/") >= 1
}

func (s *Server) toStatus(err error, c echo.Context) metav1.Status {
	var api apierrors.APIStatus
	if errors.As(err, &api) {
		return api.Status()
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		switch he.Code {
		case http.StatusNotFound:
			return notFoundPath().Status()
		case http.StatusMethodNotAllowed:
			return apierrors.NewMethodNotSupported(runtimeschema.GroupResource{}, c.Request().Method).Status()
		case http.StatusRequestEntityTooLarge:
			return apierrors.NewRequestEntityTooLargeError("limit is 3145728").Status()
		case http.StatusUnauthorized:
			return apierrors.NewUnauthorized("Unauthorized").Status()
		}
		return apierrors.NewGenericServerResponse(he.Code, c.Request().Method, runtimeschema.GroupResource{}, "", fmt.Sprint(he.Message), 0, false).Status()
	}
	var de *codecs.DecodeError
	if errors.As(err, &de) {
		return apierrors.NewBadRequest(de.Message).Status()
	}
	switch {
	case errors.Is(err, kv.ErrInvalidKey):
		// A continue token naming what this database cannot hold.
		return apierrors.NewBadRequest(err.Error()).Status()
	case errors.Is(err, kv.ErrUnavailable):
		return apierrors.NewServiceUnavailable("the database is unavailable; try again later").Status()
	case errors.Is(err, context.DeadlineExceeded):
		return apierrors.NewTimeoutError("the request did not complete in time", 0).Status()
	case clientGone(err, c):
		// kube-apiserver's request finisher answers a write whose context
		// ended with this 504. Its reads mostly finish from the watch
		// cache, unaware; a read that stops here gets the same answer.
		return apierrors.NewTimeoutError("request did not complete within requested timeout - context canceled", 0).Status()
	}
	// As kube's ErrorToAPIStatus answers an error that is not a Status:
	// a 500 with its text and no reason (kubectl prints "Error from
	// server: <text>").
	return metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Reason: metav1.StatusReasonUnknown, Message: err.Error()}
}

// clientGone says whether err is the request's own context ending: its
// client reset the stream or closed the connection. A cancellation of
// some other context is the server's own failure.
func clientGone(err error, c echo.Context) bool {
	return errors.Is(err, context.Canceled) && errors.Is(c.Request().Context().Err(), context.Canceled)
}

// notFoundPath is kube-apiserver's answer for a path it does not serve.
func notFoundPath() *apierrors.StatusError {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Message: "the server could not find the requested resource",
		Reason:  metav1.StatusReasonNotFound,
		Details: &metav1.StatusDetails{},
		Code:    http.StatusNotFound,
	}}
}

// wantsPretty reads ?pretty as kube's isPrettyPrint does (strconv's
// booleans: 1, t, T, TRUE, true, True), else the User-Agent.
func wantsPretty(c echo.Context) bool {
	// kube's negotiation also takes pretty=1 on the Accept entry it chose
	// (here: on any entry).
	for part := range strings.SplitSeq(c.Request().Header.Get("Accept"), ",") {
		_, params, _ := strings.Cut(part, ";")
		for kv := range strings.SplitSeq(params, ";") {
			if k, v, _ := strings.Cut(kv, "="); strings.TrimSpace(k) == "pretty" && strings.TrimSpace(v) == "1" {
				return true
			}
		}
	}
	p := c.QueryParam("pretty")
	if p == "" {
		return prettyUserAgent(c.Request().UserAgent())
	}
	pretty, _ := strconv.ParseBool(p)
	return pretty
}

func writeIndented(w io.Writer, v any) error {
	return codecs.EncodeJSON(w, v, true)
}

// plainText answers in text/plain with kube-apiserver's lower-case charset.
func plainText(c echo.Context, code int, body string) error {
	return c.Blob(code, "text/plain; charset=utf-8", []byte(body))
}
