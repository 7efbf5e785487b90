package server

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tabula-dev/tabula/codecs"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// bookmarkInterval is how often a watch that allows bookmarks gets one.
const bookmarkInterval = time.Minute

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
		// A watch on a named path watches that one object.
		p.pred.Field = andName(p.pred.Field, r.ri.Name)
	}
	ctx := r.ctx
	timeout := time.Duration(p.timeoutSeconds) * time.Second
	if timeout <= 0 {
		min := r.s.cfg.MinRequestTimeout
		timeout = min + time.Duration(rand.Int64N(int64(min)))
	}

	// Decide where the stream starts and whether it opens with the state.
	var start int64
	initial := false
	switch {
	case p.sendInitial != nil:
		initial = *p.sendInitial
		if p.rv != "" && p.rv != "0" {
			n, _ := strconv.ParseInt(p.rv, 10, 64)
			if _, err := r.waitForRev(n); err != nil {
				return err
			}
			if !initial {
				start = n
			}
		}
	case p.rv == "" || p.rv == "0":
		initial = true
	default:
		start, _ = strconv.ParseInt(p.rv, 10, 64)
	}

	var state kv.ListResult
	if initial {
		state, err = r.res.List(ctx, kv.ListOptions{Namespace: r.ri.Namespace, Pred: p.pred})
		if err != nil {
			return err
		}
		start = state.Rev
	} else if start == 0 {
		if start, err = r.s.store.CurrentRev(ctx); err != nil {
			return err
		}
	}
	w, err := r.res.Watch(ctx, kv.WatchOptions{Namespace: r.ri.Namespace, After: start, Pred: p.pred})
	enc := &watchEncoder{r: r, out: out}
	resp := r.c.Response()
	var ce *kv.CompactedError
	if errors.As(err, &ce) {
		// kube-apiserver opens the stream and sends the 410 as an event.
		enc.start(resp)
		st := apierrors.NewResourceExpired("too old resource version: " + strconv.FormatInt(start, 10) + " (" + strconv.FormatInt(ce.Compacted, 10) + ")").Status()
		st.Kind, st.APIVersion = "Status", "v1"
		return enc.writeStatus(&st)
	}
	if err != nil {
		return err
	}
	defer w.Stop()
	r.s.watches.Add(1)
	defer r.s.watches.Done()

	enc.start(resp)
	for _, rec := range state.Items {
		if err := enc.write(kv.Event{Type: kv.Added, Record: rec}); err != nil {
			return nil
		}
	}
	// kube-apiserver accepts sendInitialEvents without allowWatchBookmarks
	// and then sends no end-of-initial-events bookmark.
	if initial && p.sendInitial != nil && *p.sendInitial && p.bookmarks {
		if err := enc.bookmark(state.Rev, true); err != nil {
			return nil
		}
	}
	enc.flush()
	lastRev := start
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var tick <-chan time.Time
	if p.bookmarks {
		t := time.NewTicker(bookmarkInterval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.s.shutdown:
			return nil
		case <-timer.C:
			// Like kube-apiserver, a watch that allows bookmarks gets one
			// as it closes, so the client resumes from the newest revision.
			if p.bookmarks {
				if err := enc.bookmark(lastRev, false); err == nil {
					enc.flush()
				}
			}
			return nil
		case <-tick:
			if err := enc.bookmark(lastRev, false); err != nil {
				return nil
			}
			enc.flush()
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
			if err := enc.write(ev); err != nil {
				return nil
			}
			lastRev = ev.Rev
			// Drain what is already queued before flushing: one syscall
			// for a burst of events.
			if len(w.Events()) == 0 {
				enc.flush()
			}
		}
	}
}

// watchEncoder writes watch events in the negotiated representation:
// newline-separated JSON objects, or length-prefixed Protobuf frames.
type watchEncoder struct {
	r           *request
	out         codecs.Output
	resp        *echo.Response
	sentColumns bool
	buf         bytes.Buffer
}

func (e *watchEncoder) start(resp *echo.Response) {
	e.resp = resp
	ct := e.out.ContentType()
	if e.out.MediaType == codecs.Protobuf {
		ct = codecs.Protobuf + ";stream=watch"
	}
	resp.Header().Set(echo.HeaderContentType, ct)
	resp.Header().Set("Transfer-Encoding", "chunked")
	resp.WriteHeader(http.StatusOK)
	resp.Flush()
}

func (e *watchEncoder) flush() { e.resp.Flush() }

func (e *watchEncoder) write(ev kv.Event) error {
	r := e.r
	if e.out.View == codecs.ViewObject && e.out.MediaType == codecs.JSON {
		j, err := r.objectJSON(ev.Record)
		if err != nil {
			return err
		}
		return e.emitJSON(string(ev.Type), j)
	}
	obj, err := r.decodeStored(ev.Record)
	if err != nil {
		return err
	}
	return e.emitObject(string(ev.Type), obj)
}

func (e *watchEncoder) emitObject(typ string, obj runtime.Object) error {
	r := e.r
	var body runtime.Object = obj
	switch e.out.View {
	case codecs.ViewTable:
		tbl, err := r.table([]runtime.Object{obj}, r.c.QueryParam("includeObject"))
		if err != nil {
			return err
		}
		if e.out.ViewVersion == "v1beta1" {
			tbl.APIVersion = "meta.k8s.io/v1beta1"
		}
		if e.sentColumns {
			// Column definitions travel only with the first event.
			tbl.ColumnDefinitions = nil
		}
		e.sentColumns = true
		body = tbl
	case codecs.ViewPartialObjectMetadata:
		body = partialMetadata(obj, e.out.ViewVersion)
	}
	if e.out.MediaType == codecs.Protobuf {
		raw, err := r.s.codec.ProtobufBytes(body)
		if err != nil {
			return err
		}
		return e.emitProtobuf(typ, raw)
	}
	j, err := json.Marshal(body)
	if err != nil {
		return err
	}
	return e.emitJSON(typ, j)
}

func (e *watchEncoder) emitJSON(typ string, obj []byte) error {
	e.buf.Reset()
	e.buf.WriteString(`{"type":"` + typ + `","object":`)
	e.buf.Write(obj)
	e.buf.WriteString("}\n")
	_, err := e.resp.Write(e.buf.Bytes())
	return err
}

func (e *watchEncoder) emitProtobuf(typ string, obj []byte) error {
	ev := &metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: obj}}
	frame, err := e.r.s.codec.ProtobufRaw(ev)
	if err != nil {
		return err
	}
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(frame)))
	if _, err := e.resp.Write(n[:]); err != nil {
		return err
	}
	_, err = e.resp.Write(frame)
	return err
}

// bookmark sends a BOOKMARK event: an object of the watched kind that
// carries only its resourceVersion (and the initial-events-end marker).
func (e *watchEncoder) bookmark(rev int64, initialEnd bool) error {
	r := e.r
	obj := r.t.New()
	obj.GetObjectKind().SetGroupVersionKind(r.t.GroupVersionKind())
	if acc, ok := obj.(metav1.Object); ok {
		acc.SetResourceVersion(strconv.FormatInt(rev, 10))
		if initialEnd {
			acc.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
		}
	}
	if e.out.MediaType == codecs.Protobuf {
		raw, err := r.s.codec.ProtobufBytes(obj)
		if err != nil {
			return err
		}
		return e.emitProtobuf("BOOKMARK", raw)
	}
	j, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	return e.emitJSON("BOOKMARK", j)
}

func (e *watchEncoder) writeStatus(st *metav1.Status) error {
	if e.out.MediaType == codecs.Protobuf {
		raw, err := e.r.s.codec.ProtobufBytes(st)
		if err != nil {
			return err
		}
		err = e.emitProtobuf("ERROR", raw)
		e.flush()
		return err
	}
	j, err := json.Marshal(st)
	if err != nil {
		return err
	}
	err = e.emitJSON("ERROR", j)
	e.flush()
	return err
}
