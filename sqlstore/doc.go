// Package sqlstore is Tabula's storage engine: an event log in a relational
// database (SQLite, PostgreSQL or MySQL/MariaDB) whose row ids are the
// Kubernetes resourceVersions.
//
// # Tables
//
//   - tabula_rev: one row holding the newest revision and the compacted one.
//   - tabula_log: one row per write (create, update, delete). rev is the
//     revision; prev_rev points at the key's previous row, next_rev at the
//     row that superseded it (NULL while current). A delete appends a
//     tombstone row holding the object's final state.
//   - tabula_current: the live objects, key → rev of the current log row.
//     Lists at "latest" join it to the log, so their cost follows the live
//     objects, never the length of history.
//
// # Revisions are dense and in commit order, by construction
//
// Every writing transaction first increments the single tabula_rev row and
// takes its new value as the revision of the rows it appends. The row lock
// is held until commit, so the next writer can only read the counter after
// the previous writer committed (or rolled back, which also undoes its
// increment). Revisions therefore have no holes and become visible in
// order: a reader that has seen revision N has seen every revision below
// it. This holds for writers in one process and for several Tabula
// processes on one PostgreSQL or MySQL database alike, which is why the
// watch poller can simply read "rev > last". Autoincrement ids are not used
// for revisions: with overlapping transactions they commit out of order.
//
// The price is that writes are serialized on one row; batching many
// requests into one transaction (group commit) is how throughput grows.
//
// # A batch costs a fixed number of statements
//
// The committer (write.go) takes every write queued while the previous
// transaction committed. batch.go reads the live rows of all the batch's
// keys in one query, then decides every write in Go, in order, each one
// seeing the earlier ones (a create after a delete of the same key, an
// update of an object created in the same batch). Only then are the
// tables written, one statement each: the log rows, their index rows, the
// next_rev of superseded rows, and the live rows (an upsert plus a
// delete). A round trip to a networked database costs more than the rows
// it carries, so a batch of 50 writes takes about as long as a batch of
// one. On PostgreSQL keys and rows are bound as arrays (unnest): the
// statements' text never changes, so they stay prepared, and each key is
// a primary-key lookup even before the planner has statistics.
//
// # Reads
//
// The state at a past revision S is a range query on the log:
// rev <= S AND (next_rev IS NULL OR next_rev > S), no GROUP BY over
// history. Lists are keyset-paginated on (namespace, name).
//
// Label and field selectors use tabula_index, one (rev, name, value,
// resource, namespace) row per label and selectable field of each stored
// version, looked up by (name, value, resource, namespace). When a selector
// term matches few index rows (listindex.go), the list reads just those
// rows and sorts them itself, whatever the planner would have chosen;
// otherwise it walks the key range with the conditions pushed into SQL.
//
// # Watch
//
// One hub per Store fans the log out to watchers (see watch.go). A local
// batch whose first revision directly follows the newest delivered one is
// handed over by the committer as it is: revisions are dense, so nothing
// can lie between. Anything else (another process's commits) is read by
// the hub's poller, woken by PostgreSQL's NOTIFY, by a watch of SQLite's
// WAL file (Linux), or by its poll interval: 100 ms where nothing tells
// it, 5 s while something does.
//
// # Standbys
//
// On PostgreSQL, gets, lists and the hub's poller may read hot standbys
// (standby.go). A standby shows a prefix of the primary's commits, and
// tabula_rev, read in the same snapshot as the rows, says which: a read
// that needs revision R (exact, a NotOlderThan floor, or the primary's
// revision when a consistent read began, one query shared by the reads
// that arrive meanwhile) takes a standby's answer only when it shows
// rev >= R, else waits briefly and then reads the primary. Writes
// compare and swap on the primary, so a read-modify-write whose read came
// from a standby is as safe as one whose read did not.
//
// sqlstore imports nothing of Tabula's but migrations and its own kv
// vocabulary; it stores bytes plus the labels and fields handed to it.
package sqlstore
