package server

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/net/websocket"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream/wsstream"

	"github.com/tabula-dev/tabula/codecs"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// bookmarkInterval is how often a watch that allows bookmarks gets one,
// and bookmarkBeforeTimeout how long before its timeout it gets one more
// (kube's cacher: cacheWatcher.nextBookmarkTime).
const (
	bookmarkInterval      = time.Minute
	bookmarkBeforeTimeout = 2 * time.Second
)

// watch handles ?watch=true and the legacy /watch/ paths: a chunked stream
// of watch events until the timeout, the client leaving, or shutdown.
func (r *request) watch() error {
	p, err := r.parseListParams()
	if err != nil {
		return err
	}
	// Events carry single objects: a watch negotiates the single-object
	// form, which is what client-go's metadata client asks for
	// (as=PartialObjectMetadata, protobuf first).
	out, err := r.negotiate(false)
	if err != nil {
		return err
	}
	if r.ri.Name != "" {
		// A watch on a named path watches that one object; a field
		// selector there must name it (kube's handlers/get.go).
		if p.pred.Field != nil && !p.pred.Field.Empty() {
			if selected, ok := p.pred.Field.RequiresExactMatch("metadata.name"); !ok || selected != r.ri.Name {
				return apierrors.NewBadRequest("fieldSelector metadata.name doesn't match requested name")
			}
		}
		p.pred.Field = andName(p.pred.Field, r.ri.Name)
	}
	if out.View == codecs.ViewTable {
		// Refused before the stream, as a list's or a get's Table.
		if err := codecs.CheckIncludeObject(r.c.QueryParam("includeObject")); err != nil {
			return err
		}
	}
	ctx := r.ctx
	// As kube's: a negative timeoutSeconds ends the watch at once.
	timeout := time.Duration(p.timeoutSeconds) * time.Second
	if timeout == 0 {
		min := r.s.cfg.MinRequestTimeout
		timeout = min + time.Duration(rand.Int64N(int64(min)))
	}

	// Decide where the stream starts and whether it opens with the state.
	var start int64
	initial := false
	// notYet is kube's answer to initial events at a revision not reached
	// in time: sent in the stream, as an ERROR event.
	var notYet *apierrors.StatusError
	switch {
	case p.sendInitial != nil && *p.sendInitial:
		// The state at least as new as rv (kube's cacher waits for it).
		initial = true
		if p.rv != "" && p.rv != "0" {
			n, _ := strconv.ParseInt(p.rv, 10, 64)
			if _, err := r.waitForRev(n); err != nil && (!errors.As(err, &notYet) || !tooLargeRVStatus(notYet.ErrStatus)) {
				return err
			}
		}
	case p.sendInitial == nil && (p.rv == "" || p.rv == "0"):
		initial = true
	default:
		start, _ = strconv.ParseInt(p.rv, 10, 64)
	}

	// The state is streamed by the store from one snapshot, page by page
	// with values shared among the watches that read it, never held
	// whole per watcher.
	if initial {
		start = 0
	} else if start == 0 {
		if start, err = r.s.store.CurrentRev(ctx); err != nil {
			return err
		}
	}
	release, ok := r.s.admitWatch(r.c.Request())
	if !ok {
		refuse(r.c.Response())
		return nil
	}
	defer release()
	enc := &watchEncoder{r: r, out: out, frameTimeout: r.s.cfg.WatchWriteTimeout}
	defer enc.finish()
	resp := r.c.Response()
	// As kube-apiserver's: a WebSocket upgrade gets the same events, one
	// message each (text for JSON), until the client closes it.
	if req := r.c.Request(); wsstream.IsWebSocketRequest(req) {
		resp.Header().Set(echo.HeaderContentType, enc.contentType())
		var err error
		websocket.Handler(func(ws *websocket.Conn) {
			ctx, cancel := context.WithCancel(r.ctx)
			defer cancel()
			go func() {
				wsstream.IgnoreReceives(ws, 0) // until the client closes
				cancel()
			}()
			enc.ws = ws
			err = r.streamWatch(ctx, enc, w0{p: p, start: start, initial: initial, notYet: notYet, timeout: timeout})
		}).ServeHTTP(resp, req)
		if err != nil {
			r.s.log.Debug("websocket watch ended", "err", err)
		}
		return nil
	}
	return r.streamWatch(r.ctx, enc, w0{p: p, start: start, initial: initial, notYet: notYet, timeout: timeout})
}

// w0 is where a watch starts: its parameters, revision, whether it opens
// with the state (or with notYet's ERROR event), and its timeout.
type w0 struct {
	p       *listParams
	start   int64
	initial bool
	notYet  *apierrors.StatusError
	timeout time.Duration
}

// streamWatch sends the watch's events through enc until ctx ends, the
// timeout, shutdown, or the store ends the watch.
func (r *request) streamWatch(ctx context.Context, enc *watchEncoder, at w0) error {
	p, start, initial, notYet, timeout := at.p, at.start, at.initial, at.notYet, at.timeout
	resp := r.c.Response()
	if notYet != nil {
		return enc.failAtStart(resp, notYet.Status())
	}
	w, err := r.res.Watch(ctx, kv.WatchOptions{Namespace: r.ri.Namespace, After: start, Pred: p.pred, Initial: initial})
	var ce *kv.CompactedError
	if errors.As(err, &ce) {
		return enc.failAtStart(resp, apierrors.NewResourceExpired("too old resource version: "+strconv.FormatInt(start, 10)+" ("+strconv.FormatInt(ce.Compacted, 10)+")").Status())
	}
	if err != nil {
		return err
	}
	defer w.Stop()
	r.s.watches.Add(1)
	defer r.s.watches.Done()
	open := r.s.metrics.longRunningWatch(r.c.Request(), r.ri)
	open.Inc()
	defer open.Dec()

	enc.start(resp)
	if !initial {
		// Nothing to send first: the seats priority and fairness charged
		// the watch's start go back now.
		watchInitialized(ctx)
	}
	// lastRev is the newest revision the client has been sent; while the
	// initial events stream (initial), no bookmark is due.
	lastRev := start
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	// As kube-apiserver's cacher: a watch that allows bookmarks gets one
	// every minute and one 2 s before its timeout (none when the timeout
	// is shorter), each only when the store has moved past what the
	// client was sent, so a client resumes from near the newest revision
	// even when nothing it watches changed (a selector on a quiet kind).
	var tick, preTimeout <-chan time.Time
	if p.bookmarks {
		t := time.NewTicker(bookmarkInterval)
		defer t.Stop()
		tick = t.C
		if timeout > bookmarkBeforeTimeout {
			pre := time.NewTimer(timeout - bookmarkBeforeTimeout)
			defer pre.Stop()
			preTimeout = pre.C
		}
	}
	// progress sends a bookmark at the newest revision below which the
	// client has every event of its watch, if that is past lastRev. The
	// store's progress is read before the events are seen drained: what
	// it covers was on Events by then.
	progress := func() error {
		if initial {
			return nil
		}
		rev := w.Progress()
		if rev <= lastRev || len(w.Events()) > 0 {
			return nil
		}
		if err := enc.bookmark(rev, false); err != nil {
			return err
		}
		lastRev = rev
		enc.flush()
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.s.shutdown:
			return nil
		case <-r.t.Retired():
			// The CRD went (or was rebuilt): kube-apiserver ends the
			// watches of its storage; clients watch anew.
			return nil
		case <-timer.C:
			return nil
		case <-enc.idleC():
			enc.quiet()
		case <-tick:
			if progress() != nil {
				return nil
			}
		case <-preTimeout:
			if progress() != nil {
				return nil
			}
		case ev, ok := <-w.Events():
			if !ok {
				switch werr := w.Err(); {
				case errors.Is(werr, kv.ErrCompacted):
					// The watcher fell behind compaction: 410 makes
					// clients re-list.
					st := apierrors.NewResourceExpired("too old resource version: " + strconv.FormatInt(lastRev, 10)).Status()
					st.Kind, st.APIVersion = "Status", "v1"
					_ = enc.writeStatus(&st)
				case werr != nil && !errors.Is(werr, kv.ErrWatchClosed):
					st := apierrors.NewInternalError(werr).Status()
					st.Kind, st.APIVersion = "Status", "v1"
					_ = enc.writeStatus(&st)
				}
				return nil
			}
			if ev.Type == kv.InitialEnd {
				initial = false
				lastRev = ev.Rev
				watchInitialized(ctx)
				// kube-apiserver accepts sendInitialEvents without
				// allowWatchBookmarks and then sends no
				// end-of-initial-events bookmark.
				if p.sendInitial != nil && *p.sendInitial && p.bookmarks {
					if err := enc.bookmark(ev.Rev, true); err != nil {
						return nil
					}
				}
			} else {
				if err := enc.write(ev); err != nil {
					return nil
				}
				if !initial {
					lastRev = ev.Rev
				}
			}
			// Drain what is already queued before flushing: one syscall
			// for a burst of events.
			if len(w.Events()) == 0 {
				enc.flush()
			}
		}
	}
}

// watchEncoder sends one watch's events: codecs frames them; it adds the
// HTTP stream and the choice of writing stored JSON as it is.
type watchEncoder struct {
	r    *request
	out  codecs.Output
	ww   *codecs.WatchWriter
	resp *echo.Response
	rc   *http.ResponseController
	// frameTimeout bounds the writing of each burst of frames; armed says
	// a deadline is set. An HTTP/2 stream's deadline resets the stream
	// when it passes, even with nothing to write, and an idle watch must
	// live on: a watch that goes quiet has it lifted (idle).
	frameTimeout time.Duration
	armed        bool
	// armedAt is when the deadline was last set; writes move it on once
	// half of it is used, so only a client that stops reading is cut off.
	armedAt time.Time
	// idle fires half a frameTimeout after the deadline was set, while the
	// handler waits for events: the deadline is lifted there, once the
	// stream has gone quiet, not after every burst. Setting an HTTP/2
	// deadline is a message to the connection's one serving goroutine,
	// which every stream on it shares: two per event (set, lift) cost a
	// thousand watchers of one event more than the event's own frames.
	idle *time.Timer
	// ws, for a WebSocket watch, takes each event as one message, made
	// in buf.
	ws  *websocket.Conn
	buf bytes.Buffer
}

// contentType is the stream's media type.
func (e *watchEncoder) contentType() string {
	return e.r.s.codec.NewWatchWriter(nil, e.out, e.r.t, "").ContentType()
}

// sent ends an event: on a WebSocket it goes as one message, as kube's
// watch sends it: the encoded event without the stream's length prefix,
// text for JSON, binary otherwise.
func (e *watchEncoder) sent() error {
	if e.ws == nil {
		return nil
	}
	msg := e.buf.Bytes()
	if e.out.MediaType == codecs.Protobuf && len(msg) >= 4 {
		msg = msg[4:]
	}
	_ = e.ws.SetWriteDeadline(time.Now().Add(e.frameTimeout))
	var err error
	if e.out.MediaType == codecs.JSON {
		err = websocket.Message.Send(e.ws, string(msg))
	} else {
		err = websocket.Message.Send(e.ws, msg)
	}
	e.buf.Reset()
	return err
}

// arm bounds the writes of the coming burst: a client that stops reading
// cannot hold the handler (past its timeoutSeconds too) longer than this.
// Within a burst, and while events keep coming, the deadline slides: a
// write that finds half of it used sets it again.
func (e *watchEncoder) arm() {
	if e.rc == nil || e.armed && time.Since(e.armedAt) < e.frameTimeout/2 {
		return
	}
	e.armedAt = time.Now()
	_ = e.rc.SetWriteDeadline(e.armedAt.Add(e.frameTimeout)) // not every writer has deadlines (tests' recorders)
	if !e.armed {
		if e.idle == nil {
			e.idle = time.NewTimer(e.frameTimeout / 2)
		} else {
			e.idle.Reset(e.frameTimeout / 2)
		}
	}
	e.armed = true
}

// idleC is the channel that says the stream may have gone quiet; nil
// (never ready) while no deadline is set.
func (e *watchEncoder) idleC() <-chan time.Time {
	if !e.armed || e.idle == nil {
		return nil
	}
	return e.idle.C
}

// quiet is called when idle fires between bursts: the deadline is lifted
// if it was set half a frameTimeout ago or more (nothing was written
// since that moved it), else the check comes back when that time is up.
func (e *watchEncoder) quiet() {
	if !e.armed {
		return
	}
	if left := e.frameTimeout/2 - time.Since(e.armedAt); left > 0 {
		e.idle.Reset(left)
		return
	}
	_ = e.rc.SetWriteDeadline(time.Time{})
	e.armed = false
}

// finish gives the end of the stream one allowance: net/http still
// writes the final chunk after the handler returns.
func (e *watchEncoder) finish() {
	if e.idle != nil {
		e.idle.Stop()
	}
	if e.rc != nil {
		_ = e.rc.SetWriteDeadline(time.Now().Add(e.frameTimeout))
	}
}

func (e *watchEncoder) start(resp *echo.Response) {
	if e.ws != nil {
		e.ww = e.r.s.codec.NewWatchWriter(&e.buf, e.out, e.r.t, e.r.c.QueryParam("includeObject"))
		return
	}
	e.resp = resp
	e.rc = http.NewResponseController(resp)
	e.arm()
	e.ww = e.r.s.codec.NewWatchWriter(progressWriter{e}, e.out, e.r.t, e.r.c.QueryParam("includeObject"))
	resp.Header().Set(echo.HeaderContentType, e.ww.ContentType())
	resp.Header().Set("Transfer-Encoding", "chunked")
	resp.WriteHeader(http.StatusOK)
	e.flush()
}

// progressPiece is how much of a frame is written between checks of
// the deadline: a frame of megabytes to a slow but steady reader may
// take longer than the timeout, and each piece it takes is progress.
const progressPiece = 64 << 10

// progressWriter is the stream as the encoder writes it: a large write
// goes in pieces, each of which may move the deadline on (arm).
type progressWriter struct{ e *watchEncoder }

func (w progressWriter) Write(p []byte) (int, error) {
	written := 0
	for len(p) > progressPiece {
		n, err := w.e.resp.Write(p[:progressPiece])
		written += n
		if err != nil {
			return written, err
		}
		p = p[progressPiece:]
		w.e.arm()
	}
	n, err := w.e.resp.Write(p)
	return written + n, err
}

// flush sends the burst; the deadline stays until the stream is quiet.
func (e *watchEncoder) flush() {
	if e.ws != nil {
		return // each event went as its message
	}
	e.arm()
	_ = e.rc.Flush()
}

// write sends one event. The object views are written from bytes shared
// by every watcher sent the same revision: the stored JSON itself, or an
// encoding made once (see encodedCache); only Table and metadata views
// are made per watcher.
func (e *watchEncoder) write(ev kv.Event) error {
	if err := e.writeEvent(ev); err != nil {
		return err
	}
	return e.sent()
}

func (e *watchEncoder) writeEvent(ev kv.Event) error {
	e.arm()
	if ev.ValueRev != 0 {
		return e.writeLeft(ev)
	}
	switch {
	case e.ww.WantsJSON() && e.r.t.FromStorage == nil:
		return e.ww.EventStored(string(ev.Type), ev.Value)
	case e.ww.WantsJSON():
		j, err := e.r.objectJSON(ev.Record)
		if err != nil {
			return err
		}
		return e.ww.EventJSON(string(ev.Type), j)
	case e.ww.WantsProtobuf():
		raw, err := e.r.protobufItem(ev.Record)
		if err != nil {
			return err
		}
		return e.ww.EventProtobuf(string(ev.Type), raw)
	case e.ww.WantsCBOR():
		b, err := e.r.cborObject(ev.Record)
		if err != nil {
			return err
		}
		return e.ww.EventCBOR(string(ev.Type), b)
	}
	obj, err := e.r.decodeStored(ev.Record)
	if err != nil {
		return err
	}
	return e.ww.Event(string(ev.Type), obj)
}

// writeLeft sends the DELETED event of an object that stopped matching
// the watch's selector: the object as it was before, at the event's
// revision, as kube's watch shows it. Its encoding is its own: the kept
// ones of ev.Rev are of the object as it is now.
func (e *watchEncoder) writeLeft(ev kv.Event) error {
	obj, err := e.r.decodeStored(kv.Record{Key: ev.Key, Rev: ev.ValueRev, CreatedRev: ev.CreatedRev, Value: ev.Value})
	if err != nil {
		return err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	m.SetResourceVersion(strconv.FormatInt(ev.Rev, 10))
	return e.ww.Event(string(ev.Type), obj)
}

// failAtStart opens the stream with an ERROR event and ends it, as
// kube-apiserver answers a watch it cannot start (a compacted or not yet
// reached revision): 200, then the Status in the stream.
func (e *watchEncoder) failAtStart(resp *echo.Response, st metav1.Status) error {
	e.start(resp)
	st.Kind, st.APIVersion = "Status", "v1"
	return e.writeStatus(&st)
}

func (e *watchEncoder) bookmark(rev int64, initialEnd bool) error {
	e.arm()
	if err := e.ww.Bookmark(strconv.FormatInt(rev, 10), initialEnd); err != nil {
		return err
	}
	return e.sent()
}

func (e *watchEncoder) writeStatus(st *metav1.Status) error {
	e.arm()
	err := e.ww.Error(st)
	if err == nil {
		err = e.sent()
	}
	e.flush()
	return err
}
