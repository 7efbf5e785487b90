// Command tabula serves the Kubernetes API from a SQL database.
//
//	tabula serve    start the server (SQLite in ./tabula-data by default)
//	tabula version  print the version
//
// main.go is tiny; Main (main_type.go) parses flags, runs and closes the
// server so tests can start the very same server in-process.
package main
