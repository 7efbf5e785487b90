package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// Read replicas. A PostgreSQL hot standby replays the primary's WAL in
// commit order, so any snapshot taken on it is the state of some prefix
// of the primary's history, and its tabula_rev row says which. A read
// that needs revision R (an exact revision, a NotOlderThan floor, or —
// for a consistent read — the primary's revision when the read began) is
// answered by a standby whose snapshot shows rev >= R, read in the same
// statement or transaction as the data; a standby that is behind is
// waited for briefly, then the primary answers. Writes, the watch
// listener and a watch's own history stay on the primary.

// replicaOpener is a dialect that can read from hot standbys.
type replicaOpener interface {
	openReplica(ctx context.Context, u *url.URL) (*sql.DB, func(), error)
}

// standby is one read replica.
type standby struct {
	name  string // host:port/db, for logs and metrics
	db    *sql.DB
	close func()
	// downUntil (unix nanoseconds) skips a standby that just failed, so
	// an unreachable one does not cost every read a connection attempt.
	downUntil atomic.Int64
	failures  atomic.Int32
	// passed is the rewrite barrier (Store.lsnBarrier) it has replayed.
	passed atomic.Pointer[string]
}

// standbyReads counts reads per standby and outcome: served (the standby
// answered), behind (it had not replayed the revision in time; the
// primary answered), failed (an error; the primary answered).
var standbyReads = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "tabula_sql_standby_reads_total",
	Help: "Reads offered to a database hot standby, by outcome: served, behind (primary answered), failed (primary answered).",
}, []string{"standby", "result"})

// errBehind: the standby has not replayed the revision the read needs.
var errBehind = errors.New("sqlstore: standby behind")

func (s *Store) openStandbys(ctx context.Context) error {
	if len(s.opts.Standbys) == 0 {
		return nil
	}
	o, ok := s.d.(replicaOpener)
	if !ok {
		return fmt.Errorf("sqlstore: read replicas are supported on PostgreSQL, not %s", s.d.name())
	}
	for _, raw := range s.opts.Standbys {
		u, err := url.Parse(raw)
		if err != nil {
			return fmt.Errorf("sqlstore: parse standby URL: %w", err)
		}
		if u.Scheme != "postgres" && u.Scheme != "postgresql" {
			return fmt.Errorf("sqlstore: standby %s: a standby of a PostgreSQL database is a postgres:// URL", u.Redacted())
		}
		db, closeDB, err := o.openReplica(ctx, u)
		if err != nil {
			return fmt.Errorf("sqlstore: open standby %s: %w", u.Redacted(), err)
		}
		st := &standby{name: u.Host + u.Path, db: db, close: closeDB}
		s.standbys = append(s.standbys, st)
		// A server that is not a standby of this primary would serve
		// wrong answers: refuse it at start. One that is down now is
		// only logged; reads skip it until it answers. (One still
		// replaying the migrations just run reads as behind.)
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = s.checkStandby(pctx, st)
		cancel()
		var wrong *wrongStandbyError
		if errors.As(err, &wrong) {
			return err
		}
		if err != nil {
			s.log.Warn("database standby unreachable at start; reads go to the primary until it answers", "standby", st.name, "err", err)
			st.markDown()
		}
	}
	return nil
}

type wrongStandbyError struct{ msg string }

func (e *wrongStandbyError) Error() string { return e.msg }

// checkStandby makes sure st is in recovery and replays this primary: a
// physical standby shares its primary's system identifier (a role not
// allowed to read it skips that check).
func (s *Store) checkStandby(ctx context.Context, st *standby) error {
	var inRecovery bool
	if err := st.db.QueryRowContext(ctx, "SELECT pg_is_in_recovery()").Scan(&inRecovery); err != nil {
		return err
	}
	if !inRecovery {
		return &wrongStandbyError{fmt.Sprintf("sqlstore: standby %s is not in recovery: it is a primary, not a hot standby of one", st.name)}
	}
	const q = "SELECT system_identifier FROM pg_control_system()"
	var id, primaryID int64
	if err := st.db.QueryRowContext(ctx, q).Scan(&id); err != nil {
		if isPermissionDenied(err) {
			return nil
		}
		return err
	}
	if err := s.write.QueryRowContext(ctx, q).Scan(&primaryID); err != nil {
		if isPermissionDenied(err) {
			return nil
		}
		return err
	}
	if id != primaryID {
		return &wrongStandbyError{fmt.Sprintf("sqlstore: %s is a standby of another PostgreSQL cluster (system identifier %d, the primary's %d)", st.name, id, primaryID)}
	}
	return nil
}

func (st *standby) markDown() {
	n := min(st.failures.Add(1), 6)
	// 0.5 s, doubling to 16 s.
	st.downUntil.Store(time.Now().Add(time.Duration(250<<n) * time.Millisecond).UnixNano())
}

func (st *standby) up() bool { return time.Now().UnixNano() >= st.downUntil.Load() }

// rewroteInPlace marks an in-place rewrite (RefreshFields), which makes
// no revision: a standby answers again only once it has replayed the
// primary's WAL up to here.
func (s *Store) rewroteInPlace(ctx context.Context) error {
	if len(s.standbys) == 0 {
		return nil
	}
	var lsn string
	if err := s.write.QueryRowContext(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&lsn); err != nil {
		return unavailable(err)
	}
	s.lsnBarrier.Store(&lsn)
	return nil
}

// pastRewrites reports whether st has replayed the newest in-place rewrite.
func (s *Store) pastRewrites(ctx context.Context, st *standby) (bool, error) {
	b := s.lsnBarrier.Load()
	if b == nil || st.passed.Load() == b {
		return true, nil
	}
	var ok sql.NullBool
	if err := st.db.QueryRowContext(ctx, "SELECT pg_last_wal_replay_lsn() >= CAST($1 AS pg_lsn)", *b).Scan(&ok); err != nil {
		return false, err
	}
	if ok.Bool {
		st.passed.Store(b)
	}
	return ok.Bool, nil
}

// pickStandby returns the next healthy standby, round robin; nil if none.
func (s *Store) pickStandby() *standby {
	n := len(s.standbys)
	start := int(s.nextStandby.Add(1))
	for i := range n {
		st := s.standbys[(start+i)%n]
		if st.up() {
			return st
		}
	}
	return nil
}

// fence coalesces the primary revision reads that consistent reads on
// standbys wait for: a read joins the next round that starts after it
// arrived (a round in flight may have read the revision before the
// read's caller's last write committed), so under load one query serves
// many reads, each still seeing every write that finished before it
// began.
type fence struct {
	mu      sync.Mutex
	running bool
	next    *fenceRound
}

type fenceRound struct {
	done chan struct{}
	rev  int64
	err  error
}

// primaryRev returns a revision read from the primary after the call began.
func (s *Store) primaryRev(ctx context.Context) (int64, error) {
	f := &s.fence
	f.mu.Lock()
	if f.next == nil {
		f.next = &fenceRound{done: make(chan struct{})}
	}
	r := f.next
	if !f.running {
		f.running = true
		f.next = nil
		go s.runFence(r)
	}
	f.mu.Unlock()
	select {
	case <-r.done:
		return r.rev, r.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// runFence reads the primary's revision for round r, then for each round
// that gathered while it ran.
func (s *Store) runFence(r *fenceRound) {
	for r != nil {
		ctx, cancel := s.bound(s.closedCtx)
		r.rev, _, r.err = s.revs(ctx)
		cancel()
		close(r.done)
		s.fence.mu.Lock()
		r = s.fence.next
		s.fence.next = nil
		s.fence.running = r != nil
		s.fence.mu.Unlock()
	}
}

// onStandby runs read on a standby that has replayed need, waiting up to
// StandbyWait for one to; it reports false when the primary must answer
// instead (no standby, all behind or failing). read returns errBehind when
// its snapshot is older than need.
func (s *Store) onStandby(ctx context.Context, need int64, read func(ctx context.Context, db *sql.DB) error) (bool, error) {
	deadline := time.Now().Add(s.opts.StandbyWait)
	step := 500 * time.Microsecond
	for {
		st := s.pickStandby()
		if st == nil {
			return false, nil
		}
		past, err := s.pastRewrites(ctx, st)
		if err == nil {
			if past {
				err = read(ctx, st.db)
			} else {
				err = errBehind
			}
		}
		switch {
		case err == nil:
			st.failures.Store(0)
			standbyReads.WithLabelValues(st.name, "served").Inc()
			return true, nil
		case errors.Is(err, errBehind) || notReplayedYet(err):
			if time.Now().Add(step).After(deadline) {
				standbyReads.WithLabelValues(st.name, "behind").Inc()
				return false, nil
			}
		case ctx.Err() != nil:
			return true, ctx.Err()
		default:
			// Recovery conflicts, restarts, a lost connection: the
			// primary answers this one.
			standbyReads.WithLabelValues(st.name, "failed").Inc()
			s.log.Debug("standby read failed; the primary answers", "standby", st.name, "err", err)
			if !isRecoveryConflict(err) {
				st.markDown()
			}
			return false, nil
		}
		t := time.NewTimer(step)
		select {
		case <-ctx.Done():
			t.Stop()
			return true, ctx.Err()
		case <-t.C:
		}
		step = min(2*step, 4*time.Millisecond)
	}
}

// need is the revision a read at rev (0: the latest) with floor minRev
// must see: rev itself, else the floor, else the primary's revision now.
func (s *Store) need(ctx context.Context, rev, minRev int64) (int64, error) {
	switch {
	case rev > 0:
		return rev, nil
	case minRev > 0:
		return minRev, nil
	}
	return s.primaryRev(ctx)
}

// getOnStandby reads key from db in one statement with the standby's
// revision, so both come from one snapshot.
func (s *Store) getOnStandby(ctx context.Context, db *sql.DB, key kv.Key, need int64, r *kv.Record, found *bool) error {
	var at int64
	var rev, created sql.NullInt64
	var value []byte
	err := s.queryRowOn(ctx, db, s.q(`SELECT t.rev, l.rev, l.created_rev, l.value FROM tabula_rev t
		LEFT JOIN tabula_current c ON c.resource = ? AND c.namespace = ? AND c.name = ?
		LEFT JOIN tabula_log l ON l.rev = c.rev
		WHERE t.id = 1`), key.Resource, key.Namespace, key.Name).Scan(&at, &rev, &created, &value)
	if err != nil {
		return err
	}
	if at < need {
		return errBehind
	}
	r.Rev, r.CreatedRev, r.Value, *found = rev.Int64, created.Int64, value, rev.Valid
	return nil
}

func (s *Store) queryRowOn(ctx context.Context, db *sql.DB, query string, args ...any) *sql.Row {
	if st := s.prepared(ctx, db, query, false); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return db.QueryRowContext(ctx, query, args...)
}

// pollDB is where the watch poller reads other processes' commits: a
// standby when one is up (nil: the primary).
func (s *Store) pollDB() (*sql.DB, *standby) {
	if st := s.pickStandby(); st != nil {
		return st.db, st
	}
	return s.read, nil
}

func (s *Store) closeStandbys() {
	for _, st := range s.standbys {
		st.db.Close()
		if st.close != nil {
			st.close()
		}
	}
}
