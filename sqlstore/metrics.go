package sqlstore

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Query latency per named query, for every Store in the process. Names
// are constants in this package, never request text.
var queryDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "tabula_sql_query_duration_seconds",
	Help:    "Latency of Tabula's named SQL queries and transactions.",
	Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10), // 100µs … 26s
}, []string{"dialect", "query"})

var batchSize = prometheus.NewHistogram(prometheus.HistogramOpts{
	Name:    "tabula_sql_write_batch_size",
	Help:    "Writes committed together by one group-commit transaction.",
	Buckets: prometheus.ExponentialBuckets(1, 2, 9), // 1 … 256
})

var sharedReadBytes = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "tabula_sql_shared_value_read_bytes_total",
	Help: "Bytes of values read from the database for shared reads (watches opening with a collection's state); reads of values already held cost none.",
})

var checkpoints = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "tabula_sqlite_checkpoints_total",
	Help: "Background checkpoints of SQLite's write-ahead log, by result (done: every page copied; partial: readers still used some; failed).",
}, []string{"result"})

var listKeys = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "tabula_sql_list_keys_total",
	Help: "Warm whole lists at the latest revision, by where their keys came from (kept: the last such list's, nothing of theirs written since; forwarded: the last list's with the log rows written since applied; read: the database's, then kept).",
}, []string{"result"})

var listKeysBytes = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "tabula_sql_list_keys_kept_bytes",
	Help: "Estimated bytes of the keys kept from warm whole lists (8 MiB at most per store).",
})

var getsHeld = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "tabula_sql_gets_held_total",
	Help: "Gets of a revision the server held an encoding of (GetKnown): the store read the live revision alone, none of the object.",
})

var watchHistory = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "tabula_sql_watch_history_total",
	Help: "Watches from a revision before the latest, by where their history came from (memory: the rows the watch hub delivered last; log: the database).",
}, []string{"from"})

// Collectors returns the store's metrics for registration by the binary.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{queryDuration, batchSize, sharedReadBytes, standbyReads, checkpoints, listKeys, listKeysBytes, getsHeld, watchHistory}
}

// observe records one named query's latency and logs it when slow. Use as
// defer s.observe("name", time.Now()).
func (s *Store) observe(name string, start time.Time) {
	d := time.Since(start)
	queryDuration.WithLabelValues(s.d.name(), name).Observe(d.Seconds())
	if s.opts.SlowQuery > 0 && d >= s.opts.SlowQuery {
		s.log.Warn("slow query", "query", name, "dialect", s.d.name(), "duration", d.Round(time.Microsecond))
	}
}
