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
