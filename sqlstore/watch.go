package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// pollBatch bounds the rows the poller reads per query.
const pollBatch = 500

// logRow is one event-log row as the poller and history replays read it,
// with the labels and fields of the key's previous row (for selector
// transitions).
type logRow struct {
	rev                int64
	key                kv.Key
	op                 int
	created            int64
	value              []byte
	labels, fields     map[string]string
	prevLabels, prevFs map[string]string
	hasPrev            bool
	// prevRev is the key's previous row, when hasPrev.
	prevRev int64
}

// hub is the one poller of a Store: it tails the log and fans rows out to
// watchers.
//
// Invariant: hub.last is the newest revision delivered to every registered
// watcher; a watcher registered while last = H receives exactly the rows
// with rev > H from the hub and reads (after, H] from history itself, so it
// sees every revision once, with no gap and no duplicate.
type hub struct {
	s    *Store
	wake chan struct{}
	// changed says a database file changed (a changeWatcher's news: any
	// process's commit, this one's too); run says when the log is read
	// for it.
	changed chan struct{}
	// told counts the sources running that tell the poller of other
	// processes' commits (a LISTEN connection, a file watch): while one
	// does, the poller's own ticks are only a safety net.
	told atomic.Int32
	// localAt is when this process last committed (unix nanoseconds).
	localAt atomic.Int64

	mu   sync.Mutex
	last int64
	// want is the newest revision known committed (notified, or
	// committed here out of order); a poller reading a standby that has
	// not replayed it yet polls again shortly.
	want int64
	// watchers are indexed by resource: a row is offered only to the
	// watchers of its own resource.
	watchers map[string]map[*watcher]struct{}
	// recent holds the rows delivered last, for watches from a recent
	// revision.
	recent recentLog
}

func newHub(s *Store, last int64) *hub {
	h := &hub{s: s, wake: make(chan struct{}, 1), changed: make(chan struct{}, 1), last: last, watchers: map[string]map[*watcher]struct{}{}}
	h.recent.reset(last)
	return h
}

// add registers w; h.mu is held.
func (h *hub) add(w *watcher) {
	set := h.watchers[w.opts.Resource]
	if set == nil {
		set = map[*watcher]struct{}{}
		h.watchers[w.opts.Resource] = set
	}
	set[w] = struct{}{}
}

// remove unregisters w; h.mu is held.
func (h *hub) remove(w *watcher) {
	set := h.watchers[w.opts.Resource]
	delete(set, w)
	if len(set) == 0 {
		delete(h.watchers, w.opts.Resource)
	}
}

// stopAll ends every watcher with err; h.mu is held.
func (h *hub) stopAll(err error) {
	for _, set := range h.watchers {
		for w := range set {
			w.stop(err)
			h.remove(w)
		}
	}
}

// committed hands the hub the rows of a batch this process just
// committed, revisions first..last. When first directly follows the
// newest delivered revision, no other commit can lie between them
// (revisions are dense), so the rows are delivered as they are and the
// poller need not read them back; otherwise (another replica wrote in
// between) the poller is woken to read the log in order.
func (h *hub) committed(first, last int64, rows func() []logRow) {
	h.localAt.Store(time.Now().UnixNano())
	h.mu.Lock()
	if first != h.last+1 {
		h.want = max(h.want, last)
		h.mu.Unlock()
		h.notify()
		return
	}
	for _, r := range rows() {
		h.offer(r)
		h.recent.add(r)
	}
	h.last = last
	h.mu.Unlock()
}

// forgetRecent drops the rows the hub holds for watches from a recent
// revision: rows of the log were changed in place (RefreshFields), and
// watches must read them as they are now.
func (h *hub) forgetRecent() {
	h.mu.Lock()
	h.recent.reset(h.last)
	h.mu.Unlock()
}

// offer gives one row to every watcher of its resource; h.mu is held.
func (h *hub) offer(r logRow) {
	for w := range h.watchers[r.key.Resource] {
		if !w.offer(r) {
			h.remove(w)
		}
	}
}

// notifiedUpTo wakes the poller for another process's commit of revision
// rev (0: unknown), unless this process has already delivered it.
func (h *hub) notifiedUpTo(rev int64) {
	if rev > 0 {
		h.mu.Lock()
		seen := rev <= h.last
		h.want = max(h.want, rev)
		h.mu.Unlock()
		if seen {
			return
		}
	}
	h.notify()
}

// notify wakes the poller.
func (h *hub) notify() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// fileChanged tells the poller a database file changed and returns how
// long more news of changes can wait. While this process commits, the
// changes are mostly its own, already delivered, and the poller holds
// such news until it has not committed for holdGap (run): more of it
// before then would only wake the poller to hold it again.
func (h *hub) fileChanged() time.Duration {
	select {
	case h.changed <- struct{}{}:
	default:
	}
	return h.holdGap() - time.Since(time.Unix(0, h.localAt.Load()))
}

// holdGap is how long after this process's last commit (or its last read
// of the log) the poller reads the log for a changed file (run).
func (h *hub) holdGap() time.Duration {
	return min(h.s.opts.PollInterval, defaultPollInterval)
}

// runTeller keeps a source of news of other processes' commits running
// (what: a LISTEN connection, a file watch), starting it again after
// failures. run calls ready once it is in place; the poller then polls,
// for commits made before it, and from then on ticks slowly while the
// source lasts.
func (h *hub) runTeller(what string, run func(ctx context.Context, ready func()) error) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-h.s.closed
		cancel()
	}()
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		told := false
		err := run(ctx, func() {
			told = true
			h.told.Add(1)
			h.catchUp(ctx)
		})
		if told {
			h.told.Add(-1)
			h.notify() // to tick at PollInterval again
		}
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, errCannotTell) {
			h.s.log.Info(what+" is not available; polling for other processes' commits", "err", err, "every", h.s.opts.PollInterval)
			return
		}
		h.s.log.Warn(what+" failed; polling until it is back", "err", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// catchUp wakes the poller for the commits made before a source of news
// was in place. Nothing will tell of them again, and a standby the poller
// reads may not have replayed them yet: with standbys, the primary's
// revision is what the poller must reach (it reads the primary once a
// standby has been behind for StandbyWait), as if it had been told.
func (h *hub) catchUp(ctx context.Context) {
	if len(h.s.standbys) > 0 {
		if rev, err := h.s.CurrentRev(ctx); err == nil {
			h.notifiedUpTo(rev)
			return
		}
	}
	h.notify()
}

// errCannotTell marks a source's failure that trying again would not
// mend (no inotify instance to spare, no file to watch): the poller polls
// every PollInterval from then on.
var errCannotTell = errors.New("cannot be set up")

// quietPoll is how often the poller looks for other processes' commits
// while a source tells it of them: a safety net, not their way in. (An
// idle server's ticks were most of its idle CPU at 100 ms.)
const quietPoll = 5 * time.Second

// pollEvery is the time between the poller's ticks.
func (h *hub) pollEvery() time.Duration {
	if h.told.Load() > 0 {
		return max(h.s.opts.PollInterval, quietPoll)
	}
	return h.s.opts.PollInterval
}

// changeProber is a dialect that can tell cheaply whether anything was
// committed since it last asked (SQLite's data_version).
type changeProber interface {
	changeProbe(db *sql.DB) (probe func(context.Context) (bool, error), release func())
}

func (h *hub) run() {
	tick := time.NewTimer(h.pollEvery())
	defer tick.Stop()
	defer h.closeAll()
	var probe func(context.Context) (bool, error)
	// An in-memory database has one connection, shared by reads and
	// writes: it cannot be kept for probing (nor written by another
	// process).
	if p, ok := h.s.d.(changeProber); ok && h.s.read != h.s.write {
		var release func()
		probe, release = p.changeProbe(h.s.read)
		defer release()
	}
	// retry re-polls a standby that had not replayed a notified commit;
	// behindSince is when it first had not: past StandbyWait the
	// primary is read instead.
	var retry <-chan time.Time
	var behindSince time.Time
	// A changed file is read once neither the poller read the log nor
	// this process committed for gap (held until then). Under writes here
	// the change is mostly this process's own commits, already delivered;
	// another process's commit in between shows as a hole before this
	// process's next commit, which wakes the poller at once (committed).
	gap := h.holdGap()
	var lastPoll time.Time
	var held <-chan time.Time
	wait := func() time.Duration {
		since := min(time.Since(lastPoll), time.Since(time.Unix(0, h.localAt.Load())))
		return gap - since
	}
	for {
		select {
		case <-h.s.closed:
			return
		case <-h.wake:
		case <-retry:
			retry = nil
		case <-h.changed:
			if w := wait(); w > 0 {
				if held == nil {
					held = time.After(w)
				}
				continue
			}
		case <-held:
			held = nil
			if w := wait(); w > 0 {
				held = time.After(w)
				continue
			}
		case <-tick.C:
			if probe != nil {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				changed, err := probe(ctx)
				cancel()
				if err == nil && !changed {
					tick.Reset(h.pollEvery())
					continue
				}
			}
		}
		lastPoll = time.Now()
		held = nil // this read covers the changes it waited for
		tick.Reset(h.pollEvery())
		db, st := h.s.pollDB()
		if st != nil && !behindSince.IsZero() && time.Since(behindSince) > h.s.opts.StandbyWait {
			db, st = h.s.read, nil
		}
		for {
			n, err := h.poll(db)
			if err != nil && st != nil {
				// The primary has every row a standby has.
				h.s.log.Debug("watch poll on a standby failed; polling the primary", "standby", st.name, "err", err)
				if !isRecoveryConflict(err) && !notReplayedYet(err) {
					st.markDown()
				}
				db, st = h.s.read, nil
				continue
			}
			if err != nil {
				h.s.log.Warn("watch poll failed", "err", err)
				break
			}
			if n < pollBatch {
				break
			}
		}
		h.mu.Lock()
		behind := h.last < h.want
		h.mu.Unlock()
		switch {
		case !behind:
			behindSince = time.Time{}
		case st != nil:
			if behindSince.IsZero() {
				behindSince = time.Now()
			}
			if retry == nil {
				retry = time.After(time.Millisecond)
			}
		}
	}
}

func (h *hub) poll(db *sql.DB) (int, error) {
	h.mu.Lock()
	last := h.last
	h.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rows, err := h.s.readLogOn(ctx, db, kv.Key{}, last, 0, pollBatch, logAll)
	if err != nil {
		return 0, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range rows {
		if r.rev <= h.last {
			continue // delivered by committed while this poll read
		}
		if r.rev != h.last+1 {
			// Revisions are dense, so a hole is either compacted history
			// (rows this poller had not delivered yet were deleted) or a
			// row that is not visible yet, which would break the commit
			// order invariant: re-read rather than skip it.
			_, compacted, err := h.s.revs(ctx)
			if err != nil {
				return 0, err
			}
			if r.rev-1 > compacted {
				h.s.log.Warn("watch poller saw a revision gap; re-reading", "want", h.last+1, "got", r.rev)
				return 0, nil
			}
			// Watchers missed compacted events: end them with the
			// error that makes clients re-list.
			h.stopAll(kv.ErrCompacted)
			h.recent.reset(r.rev - 1)
		}
		h.offer(r)
		h.recent.add(r)
		h.last = r.rev
	}
	return len(rows), nil
}

// waitFor wakes the poller and waits up to max for it to deliver rev; it
// returns the newest delivered revision.
func (h *hub) waitFor(ctx context.Context, rev int64, max time.Duration) int64 {
	deadline := time.Now().Add(max)
	for {
		h.mu.Lock()
		last := h.last
		h.mu.Unlock()
		if last >= rev || time.Now().After(deadline) {
			return last
		}
		h.notify()
		select {
		case <-ctx.Done():
			return last
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (h *hub) closeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopAll(kv.ErrWatchClosed)
}

// readLog reads up to limit log rows with after < rev (<= upTo when upTo >
// 0), optionally only those of one resource, namespace or name, in
// revision order. Rows carry the labels and fields (and their previous
// row's) that want asks for: a watch reads only what its selector looks
// at. Joining and decoding them all was 40% of what a watch without a
// selector took to deliver its first hundred events from a recent
// revision, and a fifth with one (BenchmarkWatchFromRevision: all 545 →
// 318 µs, label selector ~550 → 430).
func (s *Store) readLog(ctx context.Context, key kv.Key, after, upTo int64, limit int, want logWants) ([]logRow, error) {
	return s.readLogOn(ctx, s.read, key, after, upTo, limit, want)
}

// logWants says which selector inputs a log read decodes.
type logWants struct{ labels, fields bool }

// logAll is what the hub reads: its rows go to every watcher.
var logAll = logWants{labels: true, fields: true}

// wantsOf is what p looks at.
func wantsOf(p kv.Predicate) logWants {
	return logWants{labels: p.Label != nil && !p.Label.Empty(), fields: p.Field != nil && !p.Field.Empty()}
}

// readLogOn is readLog from db (the primary or a standby).
func (s *Store) readLogOn(ctx context.Context, db *sql.DB, key kv.Key, after, upTo int64, limit int, want logWants) ([]logRow, error) {
	defer s.observe("read_log", time.Now())
	ctx, cancel := s.bound(ctx)
	defer cancel()
	// Columns not wanted are constants, scanned without allocating.
	col := func(wanted bool, c, otherwise string) string {
		if wanted {
			return c
		}
		return otherwise
	}
	q := `SELECT l.rev, l.resource, l.namespace, l.name, l.op, l.created_rev, '', '', l.value, NULL, NULL, NULL
		FROM tabula_log l WHERE l.rev > ?`
	if want.labels || want.fields {
		q = `SELECT l.rev, l.resource, l.namespace, l.name, l.op, l.created_rev, ` +
			col(want.labels, "l.labels", "''") + `, ` + col(want.fields, "l.fields", "''") + `, l.value, ` +
			col(want.labels, "p.labels", "NULL") + `, ` + col(want.fields, "p.fields", "NULL") + `, p.rev
		FROM tabula_log l LEFT JOIN tabula_log p ON p.rev = l.prev_rev WHERE l.rev > ?`
	}
	args := []any{after}
	if upTo > 0 {
		q += " AND l.rev <= ?"
		args = append(args, upTo)
	}
	// The revision range drives the query; the key only filters it.
	if s.unstorable(key.Namespace, key.Name) {
		q += " AND 1 = 0" // nothing is stored under it
		key.Namespace, key.Name = "", ""
	}
	if key.Resource != "" {
		q += " AND " + s.d.unindexed("l.resource") + " = ?"
		args = append(args, key.Resource)
	}
	if key.Namespace != "" {
		q += " AND " + s.d.unindexed("l.namespace") + " = ?"
		args = append(args, key.Namespace)
	}
	if key.Name != "" {
		q += " AND " + s.d.unindexed("l.name") + " = ?"
		args = append(args, key.Name)
	}
	q += " ORDER BY l.rev LIMIT ?"
	args = append(args, limit)
	var rows *sql.Rows
	var err error
	if st := s.prepared(ctx, db, s.q(q), false); st != nil {
		rows, err = st.QueryContext(ctx, args...)
	} else {
		rows, err = db.QueryContext(ctx, s.q(q), args...)
	}
	if err != nil {
		return nil, unavailable(err)
	}
	defer rows.Close()
	var out []logRow
	for rows.Next() {
		var r logRow
		var labels, fields string
		var pl, pf *string // NULL without a previous row
		var prev *int64
		if err := rows.Scan(&r.rev, &r.key.Resource, &r.key.Namespace, &r.key.Name, &r.op, &r.created,
			&labels, &fields, &r.value, &pl, &pf, &prev); err != nil {
			return nil, err
		}
		if s.opts.Values != nil {
			v, err := s.open(r.key, r.value)
			if err != nil {
				return nil, err
			}
			r.value = v
		}
		if r.hasPrev = prev != nil; r.hasPrev {
			r.prevRev = *prev
		}
		if want.labels {
			_ = json.Unmarshal([]byte(labels), &r.labels)
			if pl != nil {
				_ = json.Unmarshal([]byte(*pl), &r.prevLabels)
			}
		}
		if want.fields {
			_ = json.Unmarshal([]byte(fields), &r.fields)
			if pf != nil {
				_ = json.Unmarshal([]byte(*pf), &r.prevFs)
			}
		}
		out = append(out, r)
	}
	return out, unavailable(rows.Err())
}

// newWatch makes a watcher for opts and the Watch its reader holds.
func (s *Store) newWatch(opts kv.WatchOptions) (*watcher, *Watch) {
	w := &watcher{
		opts:      opts,
		maxEvents: s.opts.WatchBuffer,
		maxBytes:  s.opts.WatchBufferBytes,
		ready:     make(chan struct{}, 1),
		done:      make(chan struct{}),
	}
	// A few events in hand let the reader see a burst coming and write
	// it out in one go.
	out := &Watch{events: make(chan kv.Event, watchHandoff), w: w, hub: s.hub}
	w.out = out.events
	return w, out
}

// Watch streams changes after opts.After (with opts.Initial, the state at
// After first). The channel closes when ctx ends, the store closes, or the
// watcher falls too far behind; Err tells why.
func (s *Store) Watch(ctx context.Context, opts kv.WatchOptions) (kv.Watcher, error) {
	h := s.hub
	key := kv.Key{Resource: opts.Resource, Namespace: opts.Namespace, Name: opts.Name}
	// A watch from a revision whose history the hub still holds (every
	// informer's watch after its list, and again after each timeout)
	// starts without a query: the newest revision is not needed, and
	// the history is in memory. A revision this process compacted, or
	// one the hub has not delivered yet (written through another
	// replica, or never), is checked against the database as before;
	// one only another replica compacted is served from memory, as each
	// kube-apiserver serves its own watch cache's window whatever etcd
	// compacted.
	ask := opts.Initial || opts.After < s.Compaction().Revision
	var w *watcher
	var out *Watch
	var upTo int64
	var held []logRow
	var fromMemory bool
	for {
		if ask {
			cur, compacted, err := s.revs(ctx)
			if err != nil {
				return nil, err
			}
			if opts.Initial && opts.After == 0 {
				opts.After = cur
			}
			if opts.After < compacted {
				return nil, &kv.CompactedError{Requested: opts.After, Compacted: compacted}
			}
		}
		if w == nil { // opts changes only where ask starts true
			w, out = s.newWatch(opts)
		}
		h.mu.Lock()
		upTo = h.last
		held, fromMemory = h.recent.since(opts.After, key)
		if ask || fromMemory && opts.After <= upTo {
			break
		}
		h.mu.Unlock()
		ask = true
	}
	s.closing.RLock()
	defer s.closing.RUnlock()
	select {
	case <-s.closed:
		h.mu.Unlock()
		return nil, fmt.Errorf("sqlstore: watch on a closed store: %w", kv.ErrUnavailable)
	default:
	}
	h.add(w)
	h.mu.Unlock()
	if opts.After < upTo {
		from := "log"
		if fromMemory {
			from = "memory"
		}
		watchHistory.WithLabelValues(from).Inc()
	}
	ctx, cancel := context.WithCancel(ctx)
	out.cancel = cancel
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(out.events)
		defer func() {
			h.mu.Lock()
			h.remove(w)
			h.mu.Unlock()
			w.drop()
		}()
		send := func(ev kv.Event) bool {
			select {
			case out.events <- ev:
				return true
			case <-ctx.Done():
				return false
			}
		}
		if opts.Initial {
			if err := s.sendState(ctx, opts, send); err != nil {
				if ctx.Err() == nil {
					out.setErr(err)
				}
				return
			}
		}
		// deliver sends a history row's event, if the watch has one.
		deliver := func(r logRow) bool {
			ev, ok := w.event(r)
			if !ok {
				return true
			}
			if err := s.resolveLeft(ctx, &ev); err != nil {
				out.setErr(err)
				return false
			}
			return send(ev)
		}
		sent := opts.After
		// History next: (After, upTo].
		if fromMemory {
			for _, r := range held {
				if !deliver(r) {
					return
				}
			}
			held = nil
			sent = max(sent, upTo)
		}
		for sent < upTo {
			// Only this watch's rows: a busy neighbour namespace
			// must not make every watch start read its writes.
			rows, err := s.readLog(ctx, key, sent, upTo, pollBatch, wantsOf(opts.Pred))
			if err != nil {
				out.setErr(err)
				return
			}
			if len(rows) == 0 {
				break
			}
			for _, r := range rows {
				if !deliver(r) {
					return
				}
				sent = r.rev
			}
		}
		for {
			// What was queued meanwhile goes out first; events at or
			// below sent were in the history or state already. Then the
			// hub hands events out until out is full.
			for {
				ev, newest, ok := w.take(sent)
				if !ok {
					break
				}
				if err := s.resolveLeft(ctx, &ev); err != nil {
					out.setErr(err)
					return
				}
				if !send(ev) {
					return
				}
				sent = max(newest, ev.Rev)
			}
			select {
			case <-ctx.Done():
				return
			case <-s.closed:
				out.setErr(kv.ErrWatchClosed)
				return
			case <-w.done:
				out.setErr(w.err)
				return
			case <-w.ready:
			}
		}
	}()
	return out, nil
}

// watchHandoff is how many events a watch hands its reader ahead.
const watchHandoff = 8

// statePage bounds the items, and statePageBytes (roughly) the bytes,
// of one page of a watch's initial state: a watch holds one page at a
// time, and its values are shared with every watch reading the same
// revisions.
const (
	statePage      = 100
	statePageBytes = 1 << 20
)

// sendState sends the objects as they are at opts.After as Added events,
// then InitialEnd, reading page by page in key order.
func (s *Store) sendState(ctx context.Context, opts kv.WatchOptions, send func(kv.Event) bool) error {
	lo := kv.ListOptions{Resource: opts.Resource, Namespace: opts.Namespace, Rev: opts.After, Pred: opts.Pred, Limit: statePage, Shared: true}
	for {
		page, err := s.List(ctx, lo)
		if err != nil {
			return err
		}
		if len(page.Items) > 0 {
			last := page.Items[len(page.Items)-1]
			lo.AfterNamespace, lo.AfterName = last.Namespace, last.Name
		}
		size := 0
		for i, rec := range page.Items {
			size += len(rec.Value)
			if opts.Name != "" && rec.Name != opts.Name {
				continue
			}
			if !send(kv.Event{Type: kv.Added, Record: rec}) {
				return ctx.Err()
			}
			page.Items[i] = kv.Record{} // let go of the value once sent
		}
		if !page.More || len(page.Items) == 0 {
			break
		}
		if size > 0 {
			lo.Limit = max(1, min(statePage, lo.Limit*statePageBytes/size))
		}
	}
	if !send(kv.Event{Type: kv.InitialEnd, Record: kv.Record{Rev: opts.After}}) {
		return ctx.Err()
	}
	return nil
}

// Watch is one open watch.
type Watch struct {
	events chan kv.Event
	cancel context.CancelFunc
	w      *watcher
	hub    *hub
	mu     sync.Mutex
	err    error
}

// Events delivers the changes in revision order.
func (w *Watch) Events() <-chan kv.Event { return w.events }

// Stop ends the watch.
func (w *Watch) Stop() { w.cancel() }

// Progress is the hub's newest delivered revision once the watch's
// goroutine has handed out its state, history and queue (direct): from
// then on the hub puts each event of the watch on Events as it delivers
// the event's revision, both under h.mu, so every event at or below
// h.last is on Events already. Before that, 0.
//
// A watcher the hub stopped (too slow, or behind compaction) lost events
// the hub dropped, and a stopped one may still go direct as its goroutine
// finds the emptied queue: it has no progress. Every stop happens under
// h.mu, as this read does.
func (w *Watch) Progress() int64 {
	h := w.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, registered := h.watchers[w.w.opts.Resource][w.w]; !registered {
		return 0
	}
	select {
	case <-w.w.done:
		return 0
	default:
	}
	w.w.mu.Lock()
	defer w.w.mu.Unlock()
	if !w.w.direct {
		return 0
	}
	return h.last
}

// Err says why the event channel closed (nil when the caller stopped it).
func (w *Watch) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *Watch) setErr(err error) {
	w.mu.Lock()
	w.err = err
	w.mu.Unlock()
}

// watcher is one watch's place in the hub: the events offered to it and
// not yet taken, bounded in number and bytes.
type watcher struct {
	opts                kv.WatchOptions
	maxEvents, maxBytes int
	// ready holds a token when events were queued since the last take.
	ready    chan struct{}
	done     chan struct{}
	err      error
	stopOnce sync.Once

	mu sync.Mutex
	// queue[head:] are the pending events, oldest first; bytes their
	// values' size. Values are the rows' own bytes, shared by every
	// watcher they were offered to.
	queue []kv.Event
	head  int
	bytes int
	// direct: the watch's goroutine has handed out everything it had, so
	// the hub gives events to out itself while out has room, and the
	// goroutine is not woken per event (one fan-out of an event to 1,000
	// watchers woke 1,000 goroutines more than it needed). sent is the
	// newest revision given to out while direct: an event at or below it
	// was part of the watch's initial state or history.
	out    chan kv.Event
	direct bool
	sent   int64
}

// eventOverhead approximates what a queued event costs besides its value.
const eventOverhead = 128

// offer queues the event r means to this watcher, without blocking; only
// events that pass the watcher's resource, namespace and selector filters
// take buffer space. false means the watcher is too slow (its buffer of
// events or bytes is full) and was stopped: it will re-list, its pending
// events are let go, and one slow client never holds up others.
func (w *watcher) offer(r logRow) bool {
	ev, ok := w.event(r)
	if !ok {
		return true
	}
	size := len(ev.Value) + eventOverhead
	w.mu.Lock()
	if w.direct && ev.ValueRev != 0 {
		// Its value is still to read: the watch's goroutine hands it out.
		if ev.Rev <= w.sent {
			w.mu.Unlock()
			return true
		}
		w.direct = false
	}
	if w.direct {
		if ev.Rev <= w.sent {
			w.mu.Unlock()
			return true
		}
		select {
		case w.out <- ev:
			w.sent = ev.Rev
			w.mu.Unlock()
			return true
		default:
			// The reader is a handoff behind: events queue from here
			// on, in order, until the goroutine has handed them out.
			w.direct = false
		}
	}
	n := len(w.queue) - w.head
	if n >= w.maxEvents || (n > 0 && w.bytes+size > w.maxBytes) {
		w.mu.Unlock()
		w.stop(kv.ErrWatchClosed)
		w.drop()
		return false
	}
	if w.head > 0 && len(w.queue) == cap(w.queue) {
		// Reuse the taken front instead of growing.
		k := copy(w.queue, w.queue[w.head:])
		clear(w.queue[k:])
		w.queue, w.head = w.queue[:k], 0
	}
	w.queue = append(w.queue, ev)
	w.bytes += size
	w.mu.Unlock()
	select {
	case w.ready <- struct{}{}:
	default:
	}
	return true
}

// take takes the oldest pending event after the newest revision handed
// out (sent, or what the hub handed out since); when there is none the
// hub hands events out directly from then on. It returns the newest
// revision handed out.
func (w *watcher) take(sent int64) (kv.Event, int64, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	sent = max(sent, w.sent)
	for w.head < len(w.queue) {
		ev := w.queue[w.head]
		w.queue[w.head] = kv.Event{}
		w.head++
		w.bytes -= len(ev.Value) + eventOverhead
		if ev.Rev > sent {
			return ev, sent, true
		}
	}
	w.resetLocked()
	w.direct, w.sent = true, sent
	return kv.Event{}, sent, false
}

// drop lets go of every pending event.
func (w *watcher) drop() {
	w.mu.Lock()
	w.resetLocked()
	w.mu.Unlock()
}

func (w *watcher) resetLocked() {
	if cap(w.queue) > 64 {
		w.queue = nil // a burst's array is not kept for good
	} else {
		clear(w.queue)
		w.queue = w.queue[:0]
	}
	w.head, w.bytes = 0, 0
}

func (w *watcher) stop(err error) {
	w.stopOnce.Do(func() {
		w.err = err
		close(w.done)
	})
}

// event turns a row into the event this watcher sees, if any: with a
// selector, an object that starts matching is ADDED and one that stops
// matching is DELETED, as kube-apiserver's watch does.
func (w *watcher) event(r logRow) (kv.Event, bool) {
	o := w.opts
	if r.key.Resource != o.Resource || (o.Namespace != "" && r.key.Namespace != o.Namespace) || (o.Name != "" && r.key.Name != o.Name) {
		return kv.Event{}, false
	}
	rec := kv.Record{Key: r.key, Rev: r.rev, CreatedRev: r.created, Value: r.value}
	cur := o.Pred.Matches(r.labels, r.fields)
	if r.op == opCreate {
		return kv.Event{Type: kv.Added, Record: rec}, cur
	}
	prev := cur
	if !o.Pred.Empty() && r.hasPrev {
		prev = o.Pred.Matches(r.prevLabels, r.prevFs)
	}
	switch {
	case r.op == opDelete:
		return kv.Event{Type: kv.Deleted, Record: rec}, prev || cur
	case cur && prev:
		return kv.Event{Type: kv.Modified, Record: rec}, true
	case cur:
		return kv.Event{Type: kv.Added, Record: rec}, true
	case prev:
		// Its value, the row before, is read by the watch's goroutine
		// (resolveLeft), not by the hub.
		rec.Value = nil
		return kv.Event{Type: kv.Deleted, Record: rec, ValueRev: r.prevRev}, true
	}
	return kv.Event{}, false
}

// resolveLeft reads the value of a Deleted event for an object that left
// the watch's selector: its row before the event. A lagging watch whose
// row was compacted meanwhile ends as a compacted one does, and re-lists.
func (s *Store) resolveLeft(ctx context.Context, ev *kv.Event) error {
	if ev.ValueRev == 0 || ev.Value != nil {
		return nil
	}
	rows, err := s.readLog(ctx, ev.Key, ev.ValueRev-1, ev.ValueRev, 1, logWants{})
	if err != nil {
		return err
	}
	if len(rows) == 0 || rows[0].rev != ev.ValueRev {
		_, compacted, err := s.revs(ctx)
		if err != nil {
			return err
		}
		return &kv.CompactedError{Requested: ev.ValueRev, Compacted: compacted}
	}
	ev.Value = rows[0].value
	return nil
}
