// Package cmd holds Tabula's commands: tabula (the server) and, later,
// tabula-bench (the load tool). Each lives in its own folder.
package cmd
