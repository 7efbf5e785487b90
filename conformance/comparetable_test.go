package conformance

import (
	"slices"
	"strings"
	"testing"
)

// TestCompareTableNoAPF: servers with API Priority and Fairness off are
// compared only with their like, and the goals are judged on the
// servers as they run by default.
func TestCompareTableNoAPF(t *testing.T) {
	var servers []compareServerKind
	for _, name := range []string{"tabula-sqlite", "tabula-sqlite-noapf", "kube-etcd", "kube-etcd-noapf"} {
		i := slices.IndexFunc(compareServers, func(s compareServerKind) bool { return s.name == name })
		if i < 0 {
			t.Fatalf("no server %q", name)
		}
		servers = append(servers, compareServers[i])
	}
	const gets = "get clients=32"
	runs := map[string][]compareRun{
		"tabula-sqlite":       {{gets: 9000}},
		"tabula-sqlite-noapf": {{gets: 1000}}, // below 3×: not judged
		"kube-etcd":           {{gets: 2000}},
		"kube-etcd-noapf":     {{gets: 2000}},
	}
	table := compareTable(servers, runs, 1, nil)
	header := strings.SplitN(table, "\n", 4)[2]
	for _, want := range []string{"| Tabula vs kube + etcd |", "| Tabula, no APF vs kube + etcd, no APF |"} {
		if !strings.Contains(header, want) {
			t.Errorf("header %q lacks %q", header, want)
		}
	}
	for _, cross := range []string{"Tabula vs kube + etcd, no APF", "Tabula, no APF vs kube + etcd |"} {
		if strings.Contains(header, cross) {
			t.Errorf("header %q compares across APF settings: %q", header, cross)
		}
	}
	var row string
	for _, line := range strings.Split(table, "\n") {
		if strings.HasPrefix(line, "| "+gets+" (") {
			row = line
		}
	}
	if want := "| 4.50× | 0.50× | ≥ 3×: met |"; !strings.HasSuffix(row, want) {
		t.Errorf("gets row %q; want it to end %q", row, want)
	}
}

// TestCompareTableStrictBound: a goal of "under" a bound is not met at
// the bound ("< 1 %" and an idle CPU of exactly 1.00 %), one of "at most"
// is.
func TestCompareTableStrictBound(t *testing.T) {
	var servers []compareServerKind
	for _, name := range []string{"tabula-sqlite", "kube-etcd"} {
		servers = append(servers, compareServers[slices.IndexFunc(compareServers, func(s compareServerKind) bool { return s.name == name })])
	}
	row := func(table, name string) string {
		for _, line := range strings.Split(table, "\n") {
			if strings.HasPrefix(line, "| "+name+" (") {
				return line
			}
		}
		return ""
	}
	for _, c := range []struct {
		idle, ready float64
		idleMet     bool
	}{{1, 300, false}, {0.9, 300, true}} {
		table := compareTable(servers, map[string][]compareRun{
			"tabula-sqlite": {{"idle CPU": c.idle, "ready": c.ready}},
			"kube-etcd":     {{"idle CPU": 3, "ready": 2000}},
		}, 1, nil)
		if got := strings.HasSuffix(row(table, "idle CPU"), "< 1 %: met |"); got != c.idleMet {
			t.Errorf("idle CPU %.2f %%: row %q; want met %v", c.idle, row(table, "idle CPU"), c.idleMet)
		}
		if r := row(table, "ready"); !strings.HasSuffix(r, "≤ 300 ms: met |") {
			t.Errorf("ready at its bound: row %q; want met", r)
		}
	}
}
