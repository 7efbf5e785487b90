package conformance

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
)

// Outcomes of a scenario on a target, as the matrix shows them.
const (
	resultPass = "pass"
	resultFail = "FAIL"
	// resultNA marks a scenario that cannot apply to a target (restarting
	// a server the suite does not own).
	resultNA = "n/a"
	// resultNotRun marks a cell no test reached (a -run filter, or a test
	// that stopped before the scenario).
	resultNotRun = "-"
)

// table is a shared row × column table of strings, filled in by tests as
// they finish and printed by TestMain.
type table struct {
	mu    sync.Mutex
	rows  []string // in order of first appearance
	cols  []string
	cells map[[2]string]string
}

func newTable() *table { return &table{cells: map[[2]string]string{}} }

func (tb *table) set(row, col, value string) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if !contains(tb.rows, row) {
		tb.rows = append(tb.rows, row)
	}
	if !contains(tb.cols, col) {
		tb.cols = append(tb.cols, col)
	}
	tb.cells[[2]string{row, col}] = value
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// print writes the table with the given column order first; empty cells
// show as empty.
func (tb *table) print(w io.Writer, corner string, colOrder []string) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	cols := append([]string(nil), colOrder...)
	for _, c := range tb.cols {
		if !contains(cols, c) {
			cols = append(cols, c)
		}
	}
	width := make([]int, len(cols)+1)
	width[0] = len(corner)
	for _, r := range tb.rows {
		width[0] = max(width[0], len(r))
	}
	for i, c := range cols {
		width[i+1] = len(c)
		for _, r := range tb.rows {
			width[i+1] = max(width[i+1], len(tb.cells[[2]string{r, c}]))
		}
	}
	line := func(first string, rest func(i int, c string) string) {
		var b strings.Builder
		fmt.Fprintf(&b, "%-*s", width[0], first)
		for i, c := range cols {
			fmt.Fprintf(&b, "  %-*s", width[i+1], rest(i, c))
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	line(corner, func(_ int, c string) string { return c })
	for _, r := range tb.rows {
		line(r, func(_ int, c string) string { return tb.cells[[2]string{r, c}] })
	}
}

// counts returns how many cells hold each value.
func (tb *table) counts() map[string]int {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	n := map[string]int{}
	for _, v := range tb.cells {
		n[v]++
	}
	return n
}

var (
	// results is the scenario × target matrix.
	results = newTable()
	// measurements are the numbers the suite measures per target.
	measurements = newTable()
)

// printReport writes the matrix and the measurements.
func printReport(w io.Writer) {
	cols := targetNames()
	results.mu.Lock()
	for _, r := range results.rows {
		for _, c := range cols {
			if _, ok := results.cells[[2]string{r, c}]; !ok {
				results.cells[[2]string{r, c}] = resultNotRun
			}
		}
	}
	results.mu.Unlock()
	fmt.Fprintln(w)
	fmt.Fprintln(w, "=== Conformance matrix (scenario × target) ===")
	results.print(w, "scenario", cols)
	n := results.counts()
	fmt.Fprintf(w, "%d pass, %d FAIL, %d n/a, %d not run\n", n[resultPass], n[resultFail], n[resultNA], n[resultNotRun])
	sec := newTable()
	sections.fill(sec)
	if len(sec.rows) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "=== API concepts (seed section × target; checks are the Concepts/... rows above) ===")
		sec.print(w, "seed section", cols)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "=== Measurements (target × measure) ===")
	measurements.print(w, "target", nil)
}

// scenarioRow names a matrix row: the top-level test without its Test
// prefix, then the scenario.
func scenarioRow(t *testing.T, name string) string {
	top, _, _ := strings.Cut(t.Name(), "/")
	row := strings.TrimPrefix(top, "Test")
	if name != "" {
		row += "/" + name
	}
	return row
}

// scenario runs fn as subtest name of a target's test and records its
// outcome in the matrix.
func scenario(t *testing.T, tg *target, name string, fn func(t *testing.T)) bool {
	t.Helper()
	row := scenarioRow(t, name)
	return t.Run(name, func(t *testing.T) {
		recordOutcome(t, row, tg.Name)
		fn(t)
	})
}

// recordOutcome records t's outcome under row and col once t and its
// cleanups are done (a cleanup that fails the test counts too).
func recordOutcome(t *testing.T, row, col string) {
	t.Cleanup(func() {
		if t.Failed() {
			results.set(row, col, resultFail)
		} else {
			results.set(row, col, resultPass)
		}
	})
}
