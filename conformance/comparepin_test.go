package conformance

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// pinning is COMPARE_PIN: the CPUs the server under test runs on and the
// CPUs tabula-bench runs on. A nil *pinning pins nothing.
type pinning struct {
	serverCPUs, loadCPUs string
	serverSet, loadSet   unix.CPUSet
}

// parsePinning reads SERVER:LOAD, each a comma-separated list of CPU
// numbers or ranges (0, 0-1, 0,2); "" is no pinning. The two may not
// share a CPU: the point is that they do not.
func parsePinning(v string) (*pinning, error) {
	if v == "" {
		return nil, nil
	}
	server, load, ok := strings.Cut(v, ":")
	if !ok {
		return nil, fmt.Errorf("%q: want SERVER:LOAD CPU lists, e.g. 0:1", v)
	}
	p := &pinning{serverCPUs: server, loadCPUs: load}
	var err error
	if p.serverSet, err = parseCPUList(server); err != nil {
		return nil, err
	}
	if p.loadSet, err = parseCPUList(load); err != nil {
		return nil, err
	}
	for cpu := range 1024 {
		if p.serverSet.IsSet(cpu) && p.loadSet.IsSet(cpu) {
			return nil, fmt.Errorf("%q: CPU %d is in both lists", v, cpu)
		}
	}
	return p, nil
}

func parseCPUList(list string) (unix.CPUSet, error) {
	var set unix.CPUSet
	for part := range strings.SplitSeq(list, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		if !isRange {
			hi = lo
		}
		from, err1 := strconv.Atoi(lo)
		to, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil || from < 0 || to < from || to >= 1024 {
			return set, fmt.Errorf("%q is not a CPU list (e.g. 0, 0-1, 0,2)", list)
		}
		for cpu := from; cpu <= to; cpu++ {
			set.Set(cpu)
		}
	}
	return set, nil
}

// server pins a process of the server under test.
func (p *pinning) server(tb testing.TB, pid int) {
	if p != nil {
		pinProcess(tb, pid, &p.serverSet)
	}
}

// load pins tabula-bench.
func (p *pinning) load(tb testing.TB, pid int) {
	if p != nil {
		pinProcess(tb, pid, &p.loadSet)
	}
}

// describe is the table's note on pinning.
func (p *pinning) describe() string {
	if p == nil {
		return ""
	}
	return fmt.Sprintf("; pinned: each server's processes on CPU %s once ready (its ready time is not pinned), tabula-bench on CPU %s", p.serverCPUs, p.loadCPUs)
}

// pinProcess sets the CPU affinity of every thread of pid. A thread
// inherits its creator's affinity, so threads started later follow; a
// thread started while the threads are walked is caught by walking again
// until a walk finds none new.
func pinProcess(tb testing.TB, pid int, set *unix.CPUSet) {
	tb.Helper()
	pinned := map[int]bool{}
	for {
		entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			tb.Fatalf("pinning process %d: %v", pid, err)
		}
		fresh := false
		for _, e := range entries {
			tid, err := strconv.Atoi(e.Name())
			if err != nil || pinned[tid] {
				continue
			}
			// A thread that exited meanwhile needs no pinning.
			if err := unix.SchedSetaffinity(tid, set); err != nil && !errors.Is(err, unix.ESRCH) {
				tb.Fatalf("pinning thread %d of process %d: %v", tid, pid, err)
			}
			pinned[tid] = true
			fresh = true
		}
		if !fresh {
			return
		}
	}
}

func TestComparePinning(t *testing.T) {
	for _, bad := range []string{"0", "0:0", "a:1", "1-0:2", "0:", "-1:2", "0,1:1"} {
		if _, err := parsePinning(bad); err == nil {
			t.Errorf("COMPARE_PIN=%q accepted", bad)
		}
	}
	p, err := parsePinning("0:1-2,4")
	if err != nil {
		t.Fatal(err)
	}
	if !p.serverSet.IsSet(0) || p.serverSet.Count() != 1 {
		t.Errorf("server CPUs of 0:1-2,4: %v", p.serverSet)
	}
	for _, cpu := range []int{1, 2, 4} {
		if !p.loadSet.IsSet(cpu) {
			t.Errorf("load CPUs of 0:1-2,4 lack %d", cpu)
		}
	}
	if p.loadSet.Count() != 3 {
		t.Errorf("load CPUs of 0:1-2,4: %d CPUs, want 3", p.loadSet.Count())
	}
	if none, err := parsePinning(""); err != nil || none != nil || none.describe() != "" {
		t.Errorf("empty COMPARE_PIN: %v, %v", none, err)
	}

	// A process pinned to CPU 0 has every thread allowed CPU 0 alone.
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	zero, _ := parsePinning("0:1")
	zero.server(t, cmd.Process.Pid)
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", cmd.Process.Pid, task.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(status), "Cpus_allowed_list:\t0\n") {
			t.Errorf("thread %s of the pinned process: %s", task.Name(), grepLine(string(status), "Cpus_allowed_list"))
		}
	}
}

func grepLine(text, prefix string) string {
	for line := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(line, prefix) {
			return line
		}
	}
	return ""
}
