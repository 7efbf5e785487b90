// Package kv is the vocabulary shared by the event log (sqlstore) and its
// users (server): keys, records, write entries, list and watch options,
// events and errors. It holds no SQL and no HTTP, so server can declare the
// store interface it needs without importing the implementation.
package kv
