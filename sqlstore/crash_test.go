package sqlstore_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/sqlstore"
	"github.com/tabula-dev/tabula/sqlstore/dbtest"
	"github.com/tabula-dev/tabula/sqlstore/kv"
	"github.com/tabula-dev/tabula/sqlstore/storetest"
)

// crashWriterEnv makes the test binary act as a writer process for
// TestCrashSafety: it writes from several goroutines and prints the name of
// every write the store acknowledged.
const crashWriterEnv = "TABULA_CRASH_WRITER_URL"

// runCrashWriter is the writer process's whole life; TestMain calls it
// instead of running tests when crashWriterEnv is set.
func runCrashWriter(url string) {
	s, err := sqlstore.Open(context.Background(), url, sqlstore.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		fmt.Println("open-error", err)
		os.Exit(1)
	}
	acks := make(chan string, 1024)
	for g := 0; g < 8; g++ {
		go func(g int) {
			for i := 0; ; i++ {
				name := fmt.Sprintf("%s-g%d-%d", os.Getenv("TABULA_CRASH_ROUND"), g, i)
				k := kv.Key{Resource: "configmaps", Namespace: "crash", Name: name}
				r, err := s.Create(context.Background(), k, func(rev int64) (kv.Entry, error) {
					return kv.Entry{Value: []byte(fmt.Sprintf(`{"rev":%d}`, rev))}, nil
				})
				if err != nil {
					continue
				}
				if _, err := s.Update(context.Background(), k, r.Rev, func(rev int64) (kv.Entry, error) {
					return kv.Entry{Value: []byte(fmt.Sprintf(`{"rev":%d,"updated":true}`, rev))}, nil
				}); err == nil {
					acks <- name
				}
			}
		}(g)
	}
	w := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(w, "ready")
	w.Flush()
	for name := range acks {
		fmt.Fprintln(w, name)
		w.Flush()
	}
}

// TestCrashSafety kills a writing process with SIGKILL at several moments
// and checks that every acknowledged write survived and that the database
// opens without repair, with dense revisions.
func TestCrashSafety(t *testing.T) {
	for name, newURL := range map[string]func(t *testing.T) string{
		"sqlite":   func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "crash.db") },
		"postgres": func(t *testing.T) string { return dbtest.Postgres(t) },
	} {
		t.Run(name, func(t *testing.T) {
			url := newURL(t)
			var acked []string
			for round := 0; round < 4; round++ {
				acked = append(acked, crashRound(t, url, round, time.Duration(100+round*150)*time.Millisecond)...)
			}
			s := storetest.Open(t, url)
			for _, n := range acked {
				r, err := s.Get(context.Background(), kv.Key{Resource: "configmaps", Namespace: "crash", Name: n})
				if err != nil {
					t.Fatalf("acknowledged write %s lost after kill -9: %v", n, err)
				}
				if !strings.Contains(string(r.Value), `"updated":true`) {
					t.Fatalf("acknowledged update of %s lost: %s", n, r.Value)
				}
			}
			if len(acked) == 0 {
				t.Fatal("the writer acknowledged nothing; the test proved nothing")
			}
			// History is intact: a watch from the start replays dense revisions.
			cur, _ := s.CurrentRev(context.Background())
			w, err := s.Watch(context.Background(), kv.WatchOptions{Resource: "configmaps", After: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			for want := int64(2); want <= cur; want++ {
				select {
				case ev := <-w.Events():
					if ev.Rev != want {
						t.Fatalf("replayed rev %d; want %d", ev.Rev, want)
					}
				case <-time.After(20 * time.Second):
					t.Fatalf("replay stopped before rev %d", want)
				}
			}
			t.Logf("%d acknowledged writes survived %d kills; newest revision %d", len(acked), 4, cur)
		})
	}
}

func crashRound(t *testing.T, url string, round int, after time.Duration) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), crashWriterEnv+"="+url, fmt.Sprintf("TABULA_CRASH_ROUND=r%d", round))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var acked []string
	var killAt <-chan time.Time
	deadline := time.After(60 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				_ = cmd.Wait()
				return acked
			}
			switch {
			case l == "ready":
				killAt = time.After(after)
			case strings.HasPrefix(l, "open-error"):
				t.Fatalf("writer could not open the database after a crash: %s", l)
			case strings.HasPrefix(l, "r"):
				acked = append(acked, l)
			}
		case <-killAt:
			_ = cmd.Process.Signal(syscall.SIGKILL)
			killAt = nil
		case <-deadline:
			_ = cmd.Process.Kill()
			t.Fatal("writer process did not start or stop in 60s")
		}
	}
}
