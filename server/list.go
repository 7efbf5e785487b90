package server

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"

	"github.com/tabula-dev/tabula/codecs"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// list handles GET of a collection.
func (r *request) list() error {
	p, err := r.parseListParams()
	if err != nil {
		return err
	}
	out, err := r.negotiate(true)
	if err != nil {
		return err
	}
	var encode func(kv.Record) ([]byte, error)
	var cached func(kv.Record) ([]byte, bool)
	keptRows, fromProtobuf := false, map[int64]bool(nil)
	// A list audited with its response body records the objects decoded
	// from storage (writeList): it keeps the plain path.
	// A kind whose printer orders its rows has its Table made from the
	// page's decoded objects, put in that order (writeList).
	ordered := out.View == codecs.ViewTable && r.t.TableOrder != nil
	if !ordered && !r.s.auditAt(r.c, auditinternal.LevelRequestResponse) {
		switch {
		case protobufObjects(out):
			// Items are turned into Protobuf as they are read, so the
			// stored JSON of a large list is not held beside its
			// encoding; an item whose encoding is cached is not read.
			encode, cached = r.protobufItem, r.cachedProtobuf
		case plainJSON(r.c, out):
			// The same for JSON: reading a cached item's value from
			// the database was most of a warm JSON list's time.
			encode, cached = r.jsonListItem, r.cachedJSONItem
		case tableJSON(r.c, out):
			// Each item is turned into its row as it is read, so a large
			// Table is held as its rows, not as decoded objects; an item
			// whose Protobuf encoding is cached comes with that instead
			// of its stored value and is made into its row after. An item
			// decoded from storage keeps its Protobuf encoding for the
			// next Table: decoding the stored JSON was most of a Table's
			// time, every time, where no Protobuf list had run.
			includeObject := r.c.QueryParam("includeObject")
			if err := codecs.CheckIncludeObject(includeObject); err != nil {
				return err
			}
			typed := r.t.New != nil && !r.t.Unstructured
			if r.t.Cells != nil && (includeObject == "" || includeObject == "Metadata") {
				// A row that depends on the clock only through its ages
				// is kept whole, by revision, instead (keptRow); an item
				// without one comes with its Protobuf encoding if that is
				// cached, and is made into its row after (fromProtobuf
				// holds those items' revisions; the store asks one item
				// at a time).
				keptRows = true
				encode = func(rec kv.Record) ([]byte, error) { return r.keptRow(out, rec, nil) }
				cached = func(rec kv.Record) ([]byte, bool) {
					if b, ok := r.s.encoded.peek(encodedKey{rec.Rev, r.t, keptRowForm(out)}); ok {
						// A store that reads the list again (a standby
						// failing halfway) asks again: an item seen with
						// its Protobuf before may have its row now.
						delete(fromProtobuf, rec.Rev)
						return b, true
					}
					if !typed {
						return nil, false
					}
					b, ok := r.cachedProtobuf(rec)
					if ok {
						if fromProtobuf == nil {
							fromProtobuf = map[int64]bool{}
						}
						fromProtobuf[rec.Rev] = true
					}
					return b, ok
				}
				break
			}
			encode = func(rec kv.Record) ([]byte, error) {
				obj, err := r.decodeStored(rec)
				if err != nil {
					return nil, err
				}
				if typed {
					r.keepProtobuf(rec, obj)
				}
				return r.tableRowJSON(out, rec, obj, includeObject)
			}
			if typed {
				cached = r.cachedProtobuf
			}
		case metadataList(r.c, out):
			// Each item is made into its metadata as it is read, kept by
			// revision (the JSON form shared with Table rows), so a large
			// list is held as that, not as decoded objects; an item whose
			// metadata is kept is not read at all.
			form := metadataForm(out)
			encode = func(rec kv.Record) ([]byte, error) { return r.metadataOf(rec, form, nil) }
			cached = func(rec kv.Record) ([]byte, bool) { return r.s.encoded.peek(encodedKey{rec.Rev, r.t, form}) }
		case out.View != codecs.ViewObject && r.t.New != nil && !r.t.Unstructured:
			// A Table or metadata is made from each object; one whose
			// Protobuf encoding is cached comes with that instead of its
			// stored value and is decoded from it (decodeAll).
			cached = r.cachedProtobuf
		}
	}
	res, err := r.listPage(p, encode, cached)
	if err != nil {
		return err
	}
	switch {
	case encode == nil:
		return r.writeList(out, res, p)
	case keptRows:
		return r.writeKeptRows(out, r.listMeta(res, p), res.Items, fromProtobuf)
	case tableJSON(r.c, out):
		return r.streamTableJSON(out, r.listMeta(res, p), res.Items)
	case metadataList(r.c, out):
		return r.writeMetadataList(out, r.listMeta(res, p), res.Items)
	case protobufObjects(out):
		return r.writeProtobufList(r.c.Response(), r.listMeta(res, p), res.Items, true)
	}
	return r.streamJSONList(r.c.Response(), r.listMeta(res, p), res.Items, true)
}

// plainJSON says whether out is a compact JSON list of the objects
// themselves.
func plainJSON(c echo.Context, out codecs.Output) bool {
	return out.View == codecs.ViewObject && out.MediaType == codecs.JSON && !wantsPretty(c)
}

// tableJSON says whether out is a compact JSON Table.
func tableJSON(c echo.Context, out codecs.Output) bool {
	return out.View == codecs.ViewTable && out.MediaType == codecs.JSON && !wantsPretty(c)
}

// metadataList says whether out is a PartialObjectMetadataList in compact
// JSON or in Protobuf.
func metadataList(c echo.Context, out codecs.Output) bool {
	return out.View == codecs.ViewPartialObjectMetadataList &&
		(out.MediaType == codecs.Protobuf || out.MediaType == codecs.JSON && !wantsPretty(c))
}

// metadataForm is the kept form of an item of a metadata list for out.
func metadataForm(out codecs.Output) encodedForm {
	switch {
	case out.MediaType == codecs.Protobuf:
		return formMetadataProtobuf
	case out.ViewVersion == "v1beta1":
		return formRowMetadataV1beta1
	}
	return formRowMetadata
}

// protobufObjects says whether out is a Protobuf list of the objects
// themselves (not a Table or metadata view).
func protobufObjects(out codecs.Output) bool {
	return out.View == codecs.ViewObject && out.MediaType == codecs.Protobuf
}

// listPage reads the page a list request names, honouring resourceVersion,
// resourceVersionMatch, limit and continue.
func (r *request) listPage(p *listParams, encode func(kv.Record) ([]byte, error), cached func(kv.Record) ([]byte, bool)) (kv.ListResult, error) {
	ctx := r.ctx
	opts := kv.ListOptions{Namespace: r.ri.Namespace, Limit: int(p.limit), Pred: p.pred, Encode: encode, Cached: cached}
	allNS := r.t.Namespaced && r.ri.Namespace == ""
	switch {
	case p.cont != nil && p.rv != "0":
		if p.cont.RV > 0 {
			opts.Rev = p.cont.RV
		} // else -1: at the latest revision (an expired token's successor)
		opts.AfterNamespace, opts.AfterName = p.cont.position(allNS)
		if !r.t.Namespaced {
			opts.AfterNamespace = ""
		} else if !allNS {
			opts.AfterNamespace = r.ri.Namespace
		}
	case p.rv == "0":
		// "Any revision": kube-apiserver serves it from its cache,
		// ignoring limit (and the token's revision); the latest state is
		// one such revision (a read replica's included).
		opts.Limit = 0
		opts.MinRev = 1
		if p.cont != nil {
			opts.AfterNamespace, opts.AfterName = p.cont.position(allNS)
			if !r.t.Namespaced {
				opts.AfterNamespace = ""
			} else if !allNS {
				opts.AfterNamespace = r.ri.Namespace
			}
		}
	case p.rv == "":
	default:
		rv, _ := strconv.ParseInt(p.rv, 10, 64)
		exact := p.rvMatch == metav1.ResourceVersionMatchExact ||
			(p.rvMatch == "" && p.limit > 0)
		if _, err := r.waitForRev(rv); err != nil {
			return kv.ListResult{}, err
		}
		if exact {
			opts.Rev = rv
		} else {
			opts.MinRev = rv
		}
	}
	res, err := r.res.List(ctx, opts)
	var ce *kv.CompactedError
	if errors.As(err, &ce) {
		if p.cont != nil {
			expired := apierrors.NewResourceExpired("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.")
			// The Status carries a token that goes on from the same key
			// at the latest revision whenever it is used (revision -1,
			// so it never expires), for clients that accept an
			// inconsistent list, as kube-apiserver's does.
			expired.ErrStatus.ListMeta.Continue = (&continueToken{APIVersion: continueVersion, RV: -1, Start: p.cont.Start}).encode()
			return res, expired
		}
		return res, apierrors.NewResourceExpired("The resourceVersion for the provided list is too old.")
	}
	var fe *kv.FutureRevError
	if errors.As(err, &fe) {
		return res, tooLargeRV(fe.Requested, fe.Current)
	}
	return res, err
}

func (r *request) continueFor(res kv.ListResult) string {
	if !res.More || len(res.Items) == 0 {
		return ""
	}
	last := res.Items[len(res.Items)-1]
	return encodeContinue(res.Rev, last.Namespace, last.Name, r.t.Namespaced && r.ri.Namespace == "")
}

// writeList answers with a list in the negotiated representation. Plain
// JSON lists are written from the stored bytes without decoding them.
func (r *request) writeList(out codecs.Output, res kv.ListResult, p *listParams) error {
	lm := r.listMeta(res, p)
	resp := r.c.Response()
	if err := r.auditList(out, res.Items, lm); err != nil {
		return err
	}
	if plainJSON(r.c, out) {
		return r.streamJSONList(resp, lm, res.Items, false)
	}
	if protobufObjects(out) {
		return r.writeProtobufList(resp, lm, res.Items, false)
	}
	if out.View == codecs.ViewObject && out.MediaType == codecs.CBOR {
		return r.writeCBORList(resp, lm, res.Items)
	}
	objs, err := r.decodeAll(res.Items, out.View != codecs.ViewObject)
	if err != nil {
		return err
	}
	items := res.Items
	if out.View == codecs.ViewTable && r.t.TableOrder != nil {
		order := make([]int, len(objs))
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(i, j int) int { return r.t.TableOrder(objs[i], objs[j]) })
		sortedObjs, sortedItems := make([]runtime.Object, len(objs)), make([]kv.Record, len(objs))
		for k, i := range order {
			sortedObjs[k], sortedItems[k] = objs[i], items[i]
		}
		objs, items = sortedObjs, sortedItems
	}
	rowMeta := func(i int) ([]byte, error) { return r.rowMetadata(out, items[i], objs[i]) }
	body, err := codecs.ListView(out, r.t, objs, lm, r.c.QueryParam("includeObject"), rowMeta)
	if err != nil {
		return err
	}
	if tbl, ok := body.(*metav1.Table); ok && tableJSON(r.c, out) {
		// Streamed a row at a time, each row's object written as made.
		resp.Header().Set(echo.HeaderContentType, out.ContentType())
		resp.WriteHeader(http.StatusOK)
		abortIfCut(codecs.WriteTableJSON(resp, tbl))
		return nil
	}
	return r.writeBody(http.StatusOK, out, body)
}

// rowMetadata is the object of rec's Table row with
// includeObject=Metadata, kept like the items' encodings: making its JSON
// was a quarter of a large Table's time.
func (r *request) rowMetadata(out codecs.Output, rec kv.Record, obj runtime.Object) ([]byte, error) {
	return r.metadataOf(rec, metadataForm(out), obj)
}

// metadataOf is rec's PartialObjectMetadata in form (formRowMetadata,
// formRowMetadataV1beta1 or formMetadataProtobuf), made once per revision
// and served type; obj is rec decoded, or nil to decode it if need be.
func (r *request) metadataOf(rec kv.Record, form encodedForm, obj runtime.Object) ([]byte, error) {
	return r.s.encoded.get(encodedKey{rec.Rev, r.t, form}, func() (b []byte, err error) {
		if obj == nil {
			if obj, err = r.decodeStored(rec); err != nil {
				return nil, err
			}
		}
		switch form {
		case formMetadataProtobuf:
			return codecs.MetadataProtobuf(obj)
		case formRowMetadataV1beta1:
			return codecs.MetadataJSON(codecs.Output{ViewVersion: "v1beta1"}, obj), nil
		}
		return codecs.MetadataJSON(codecs.Output{ViewVersion: "v1"}, obj), nil
	})
}

// writeMetadataList writes a PartialObjectMetadataList of items whose
// values are their metadata already (see list).
func (r *request) writeMetadataList(out codecs.Output, lm metav1.ListMeta, items []kv.Record) error {
	resp := r.c.Response()
	resp.Header().Set(echo.HeaderContentType, out.ContentType())
	resp.WriteHeader(http.StatusOK)
	id := r.s.encoded.keptIDs(r.t, metadataForm(out))
	if out.MediaType == codecs.Protobuf {
		var lw codecs.ProtobufListWriter
		for _, it := range items {
			lw.AddKept(it.Value, id(it.Rev))
		}
		if out.ViewVersion == "v1beta1" {
			abortIfCut(lw.WriteMetadataListV1beta1To(keptOut{resp}, &lm))
		} else {
			abortIfCut(lw.WriteTo(keptOut{resp}, "meta.k8s.io/v1", "PartialObjectMetadataList", &lm))
		}
		return nil
	}
	abortIfCut(codecs.WriteMetadataListJSON(keptOut{resp}, out, &lm, len(items), func(i int) ([]byte, uint64, error) {
		b := items[i].Value
		items[i].Value = nil
		return b, id(items[i].Rev), nil
	}))
	return nil
}

// tableRowJSON is the JSON of rec's Table row, obj being rec decoded.
func (r *request) tableRowJSON(out codecs.Output, rec kv.Record, obj runtime.Object, includeObject string) ([]byte, error) {
	return codecs.TableRowJSON(r.t, obj, includeObject, func() ([]byte, error) { return r.rowMetadata(out, rec, obj) })
}

// streamTableJSON writes a Table of items whose values are their rows'
// JSON already (see list), but for those listed with their cached
// Protobuf encodings, which are made into rows here, on every core.
// Every row is made before the 200 is sent (see streamJSONList).
func (r *request) streamTableJSON(out codecs.Output, lm metav1.ListMeta, items []kv.Record) error {
	includeObject := r.c.QueryParam("includeObject")
	err := r.rowsFromProtobuf(items, func(kv.Record) bool { return true }, func(rec kv.Record, obj runtime.Object) ([]byte, error) {
		return r.tableRowJSON(out, rec, obj, includeObject)
	})
	if err != nil {
		return err
	}
	resp := r.c.Response()
	resp.Header().Set(echo.HeaderContentType, out.ContentType())
	resp.WriteHeader(http.StatusOK)
	abortIfCut(codecs.WriteTableRowsJSON(resp, out, r.t, lm, len(items), func(b []byte, i int) ([]byte, error) {
		b = append(b, items[i].Value...)
		items[i].Value = nil
		return b, nil
	}))
	return nil
}

// rowsFromProtobuf replaces, on every core, the value of each item listed
// with its cached Protobuf encoding (Cached, and protobuf says so) with
// row's for the object it decodes to.
func (r *request) rowsFromProtobuf(items []kv.Record, protobuf func(kv.Record) bool, row func(kv.Record, runtime.Object) ([]byte, error)) error {
	return codecs.Each(len(items), func(i int) error {
		if !items[i].Cached || !protobuf(items[i]) {
			return nil
		}
		obj, err := r.fromProtobuf(items[i].Value)
		if err != nil {
			return fmt.Errorf("server: cached encoding of %s/%s: %w", items[i].Namespace, items[i].Name, err)
		}
		items[i].Value, err = row(items[i], obj)
		return err
	})
}

// keptRowForm is the kept form of a Table row of out's version.
func keptRowForm(out codecs.Output) encodedForm {
	if out.ViewVersion == "v1beta1" {
		return formKeptRowV1beta1
	}
	return formKeptRow
}

// keptRow is rec's Table row with includeObject=Metadata, kept by
// revision with its ages open (codecs.KeptRow); obj is rec decoded, or nil
// to decode its stored value. Nothing else is kept on the way, so a first
// Table of many objects holds little more than its rows: their Protobuf
// encodings and metadata would be as much again.
func (r *request) keptRow(out codecs.Output, rec kv.Record, obj runtime.Object) ([]byte, error) {
	return r.s.encoded.get(encodedKey{rec.Rev, r.t, keptRowForm(out)}, func() (_ []byte, err error) {
		if obj == nil {
			if obj, err = r.decodeStored(rec); err != nil {
				return nil, err
			}
		}
		meta, ok := r.s.encoded.peek(encodedKey{rec.Rev, r.t, metadataForm(out)})
		if !ok {
			meta = codecs.MetadataJSON(out, obj)
		}
		return codecs.KeptRow(r.t, obj, meta)
	})
}

// writeKeptRows writes a Table of items whose values are their kept rows,
// but for those listed with their Protobuf encodings (the revisions in
// fromProtobuf), which are made into their rows first, on every core (see
// list). Each row is filled in with its ages as it is written.
func (r *request) writeKeptRows(out codecs.Output, lm metav1.ListMeta, items []kv.Record, fromProtobuf map[int64]bool) error {
	if len(fromProtobuf) > 0 {
		err := r.rowsFromProtobuf(items, func(rec kv.Record) bool { return fromProtobuf[rec.Rev] }, func(rec kv.Record, obj runtime.Object) ([]byte, error) {
			return r.keptRow(out, rec, obj)
		})
		if err != nil {
			return err
		}
	}
	resp := r.c.Response()
	resp.Header().Set(echo.HeaderContentType, out.ContentType())
	resp.WriteHeader(http.StatusOK)
	at := time.Now() // one clock reading: the list's ages agree
	abortIfCut(codecs.WriteTableRowsJSON(resp, out, r.t, lm, len(items), func(b []byte, i int) ([]byte, error) {
		b, err := codecs.AppendKeptRow(b, items[i].Value, at)
		items[i].Value = nil
		return b, err
	}))
	return nil
}

// auditList adds the list to an audit event recorded with response
// bodies (RequestResponse), as kube-apiserver records a list it answers;
// it costs nothing at lower levels.
func (r *request) auditList(out codecs.Output, items []kv.Record, lm metav1.ListMeta) error {
	if !r.s.auditAt(r.c, auditinternal.LevelRequestResponse) {
		return nil
	}
	objs, err := r.decodeAll(items, false)
	if err != nil {
		return err
	}
	// In the view answered (a Table, metadata only), as kube records what
	// it sends: not the objects' whole contents.
	list, err := codecs.ListView(out, r.t, objs, lm, r.c.QueryParam("includeObject"), nil)
	if err != nil {
		return err
	}
	r.auditView(list)
	return nil
}

// decodeAll decodes a page's records, on every core when it is large.
// For a view (Table, metadata) a record whose Protobuf encoding is cached
// (informers, watches and Protobuf lists made it) is decoded from that,
// several times faster than from the stored JSON: a view reads the object,
// it is not sent as decoded.
func (r *request) decodeAll(items []kv.Record, view bool) ([]runtime.Object, error) {
	objs := make([]runtime.Object, len(items))
	err := codecs.Each(len(items), func(i int) (err error) {
		if items[i].Cached {
			// Listed without its stored value (see list).
			if objs[i], err = r.fromProtobuf(items[i].Value); err != nil {
				return fmt.Errorf("server: cached encoding of %s/%s: %w", items[i].Namespace, items[i].Name, err)
			}
			return nil
		}
		if view {
			if obj, ok := r.fromCachedProtobuf(items[i]); ok {
				objs[i] = obj
				return nil
			}
		}
		objs[i], err = r.decodeStored(items[i])
		return err
	})
	return objs, err
}

// fromCachedProtobuf decodes a record from its cached Protobuf encoding
// (the served object, converted from storage already), if there is one.
func (r *request) fromCachedProtobuf(rec kv.Record) (runtime.Object, bool) {
	if r.t.New == nil || r.t.Unstructured {
		return nil, false
	}
	b, ok := r.cachedProtobuf(rec)
	if !ok {
		return nil, false
	}
	obj, err := r.fromProtobuf(b)
	return obj, err == nil
}

// cachedProtobuf is a record's Protobuf encoding, if one is cached.
func (r *request) cachedProtobuf(rec kv.Record) ([]byte, bool) {
	return r.s.encoded.peek(encodedKey{rec.Rev, r.t, formProtobuf})
}

// fromProtobuf decodes an object of the served type from its cached
// Protobuf encoding.
func (r *request) fromProtobuf(b []byte) (runtime.Object, error) {
	obj := r.t.New()
	pu, ok := obj.(interface{ Unmarshal([]byte) error })
	if !ok {
		return nil, fmt.Errorf("server: %s has no Protobuf form", r.t.Kind)
	}
	if err := pu.Unmarshal(b); err != nil {
		return nil, err
	}
	obj.GetObjectKind().SetGroupVersionKind(r.t.GroupVersionKind())
	return obj, nil
}

func (r *request) listMeta(res kv.ListResult, p *listParams) metav1.ListMeta {
	lm := metav1.ListMeta{ResourceVersion: strconv.FormatInt(res.Rev, 10), Continue: r.continueFor(res)}
	if res.More && p.pred.Empty() {
		n := res.Remaining
		lm.RemainingItemCount = &n
	}
	return lm
}

// streamJSONList writes the list around the items, letting go of each
// item's bytes once written; encoded says their values are list items
// already (jsonListItem's), else they are stored values.
//
// Every item is converted before the 200 is sent, each replacing its
// stored bytes (the list is still held in about one form): a row that
// does not decode then fails the list with a 500 Status, as on
// kube-apiserver, which decodes every item before it encodes any, not a
// 200 whose body stops short.
func (r *request) streamJSONList(w *echo.Response, lm metav1.ListMeta, items []kv.Record, encoded bool) error {
	if !encoded {
		for i := range items {
			b, err := r.itemJSON(items[i])
			if err != nil {
				return err
			}
			items[i].Value = b
		}
	}
	w.Header().Set(echo.HeaderContentType, codecs.JSON)
	w.WriteHeader(http.StatusOK)
	// Encoded items are the cache's (jsonListItem): their bytes are
	// passed by reference to the compressor.
	id := func(int64) uint64 { return 0 }
	if encoded {
		id = r.s.encoded.keptIDs(r.t, formJSONItem)
	}
	err := codecs.WriteJSONList(keptOut{w}, r.t, &lm, len(items), func(i int) ([]byte, uint64, error) {
		b := items[i].Value
		items[i].Value = nil
		return b, id(items[i].Rev), nil
	})
	abortIfCut(err)
	return nil
}

// abortIfCut ends a response whose 200 is sent but whose body could not
// be finished (the client went away, or a write failed): a Status can no
// longer be sent, and returning would end a chunked body cleanly, so a
// client could take the part it got for the whole document. The
// http.ErrAbortHandler panic makes net/http close the connection (reset
// the HTTP/2 stream) instead, and the client sees an error.
func abortIfCut(err error) {
	if err != nil {
		panic(http.ErrAbortHandler)
	}
}

// protobufItem returns a stored object's Protobuf encoding, made once per
// revision and served type and shared by every request that sends it.
func (r *request) protobufItem(rec kv.Record) ([]byte, error) {
	return r.s.encoded.get(encodedKey{rec.Rev, r.t, formProtobuf}, func() ([]byte, error) {
		obj, err := r.decodeStored(rec)
		if err != nil {
			return nil, err
		}
		pm, ok := obj.(codecs.ProtoMarshaler)
		if !ok {
			return nil, fmt.Errorf("server: %s has no Protobuf form", r.t.Kind)
		}
		return pm.Marshal()
	})
}

// keepProtobuf keeps the Protobuf encoding of obj, rec decoded from
// storage, as protobufItem makes it, unless one is kept already.
func (r *request) keepProtobuf(rec kv.Record, obj runtime.Object) {
	if pm, ok := obj.(codecs.ProtoMarshaler); ok {
		_, _ = r.s.encoded.get(encodedKey{rec.Rev, r.t, formProtobuf}, pm.Marshal)
	}
}

// jsonListItem is a record as a JSON list item (itemJSON's bytes, which
// may be the stored value itself: the store's Encode keeps it), made once
// per revision and served type and shared like protobufItem's.
func (r *request) jsonListItem(rec kv.Record) ([]byte, error) {
	return r.s.encoded.get(encodedKey{rec.Rev, r.t, formJSONItem}, func() ([]byte, error) {
		return r.itemJSON(rec)
	})
}

// cachedJSONItem is a record's JSON list item, if one is cached.
func (r *request) cachedJSONItem(rec kv.Record) ([]byte, bool) {
	return r.s.encoded.peek(encodedKey{rec.Rev, r.t, formJSONItem})
}

// cborListItem is a record as a CBOR list item, made once per revision
// and served type and shared like protobufItem's: typed items carry no
// kind and apiVersion, unstructured ones do, as kube writes its lists.
func (r *request) cborListItem(rec kv.Record) ([]byte, error) {
	if r.t.Unstructured {
		// The object's own encoding, which watches share.
		b, err := r.cborObject(rec)
		return codecs.CBORItem(b), err
	}
	b, err := r.s.encoded.get(encodedKey{rec.Rev, r.t, formCBORItem}, func() ([]byte, error) {
		obj, err := r.decodeStored(rec)
		if err != nil {
			return nil, err
		}
		obj.GetObjectKind().SetGroupVersionKind(runtimeschema.GroupVersionKind{})
		return r.s.codec.CBORBytes(obj)
	})
	return codecs.CBORItem(b), err
}

// writeCBORList writes items as a CBOR list from their cached encodings;
// every item is encoded before the 200, so a row that does not decode
// fails the list with a 500 Status (see streamJSONList).
func (r *request) writeCBORList(w *echo.Response, lm metav1.ListMeta, items []kv.Record) error {
	encoded := make([][]byte, len(items))
	for i, rec := range items {
		b, err := r.cborListItem(rec)
		if err != nil {
			return err
		}
		encoded[i] = b
		items[i].Value = nil
	}
	w.Header().Set(echo.HeaderContentType, codecs.CBOR)
	w.WriteHeader(http.StatusOK)
	return codecs.WriteCBORList(w, r.t.APIVersion(), r.t.ListKind, &lm, r.t.Unstructured, encoded)
}

// writeProtobufList writes items as a Protobuf list; encoded says their
// values are Protobuf already (see list), else each is encoded here and
// its stored bytes let go, so a large list holds about one form of itself
// (the envelope needs every item's size before it is written).
func (r *request) writeProtobufList(w *echo.Response, lm metav1.ListMeta, items []kv.Record, encoded bool) error {
	var lw codecs.ProtobufListWriter
	// Every item's bytes are the cache's (protobufItem): they are passed
	// by reference to the compressor.
	id := r.s.encoded.keptIDs(r.t, formProtobuf)
	for i, rec := range items {
		b := rec.Value
		if !encoded {
			var err error
			if b, err = r.protobufItem(rec); err != nil {
				return err
			}
			items[i].Value = nil
		}
		lw.AddKept(b, id(rec.Rev))
	}
	w.Header().Set(echo.HeaderContentType, codecs.Protobuf)
	w.WriteHeader(http.StatusOK)
	abortIfCut(lw.WriteTo(keptOut{w}, r.t.APIVersion(), r.t.ListKind, &lm))
	return nil
}
