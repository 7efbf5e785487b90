// Package migrations holds the versioned SQL that creates and evolves
// Tabula's tables, one folder per database dialect (sqlite, postgres, mysql).
//
// Files are named NNNN_description.up.sql and are applied in order by
// sqlstore, each recorded in the tabula_migrations table. A file holds
// statements separated by lines that end with ";". Never edit a released
// migration: add a new one.
package migrations

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

//go:embed sqlite/*.sql postgres/*.sql mysql/*.sql
var files embed.FS

// Migration is one versioned step for one dialect.
type Migration struct {
	Version    int
	Name       string
	Statements []string
}

// For returns the migrations of dialect ("sqlite", "postgres" or "mysql")
// in version order.
func For(dialect string) ([]Migration, error) {
	entries, err := fs.ReadDir(files, dialect)
	if err != nil {
		return nil, fmt.Errorf("migrations: unknown dialect %q: %w", dialect, err)
	}
	var out []Migration
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".up.sql") {
			continue
		}
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migrations: %s/%s: name must start with a number and _", dialect, name)
		}
		body, err := fs.ReadFile(files, dialect+"/"+name)
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: name, Statements: split(string(body))})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i := range out {
		if out[i].Version != i+1 {
			return nil, fmt.Errorf("migrations: %s: version %d missing", dialect, i+1)
		}
	}
	return out, nil
}

// split cuts a file into statements at lines ending in ";", dropping
// comment-only lines; MySQL's driver runs one statement per call.
func split(body string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(body, "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "--") {
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.HasSuffix(t, ";") {
			out = append(out, strings.TrimSuffix(strings.TrimSpace(cur.String()), ";"))
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	return out
}
