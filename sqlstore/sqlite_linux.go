package sqlstore

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// watchChanges watches the database's WAL file with inotify. In WAL mode
// every commit, whichever process makes it, is a write to that file, so
// the watch tells the poller of other processes' commits as they happen
// and it need not look every 100 ms.
func (sqliteDialect) watchChanges(ctx context.Context, db *sql.DB, watching func(), changed func() time.Duration) error {
	c, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	wal := walPath(ctx, c)
	_ = c.Close()
	if wal == "" {
		return fmt.Errorf("%w: the database has no WAL file", errCannotTell)
	}
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		return fmt.Errorf("%w: %w", errCannotTell, os.NewSyscallError("inotify_init1", err))
	}
	// Non-blocking, so reads wait in the runtime's poller, not a thread.
	f := os.NewFile(uintptr(fd), "inotify")
	defer f.Close()
	// The file is removed only when the last connection to the database
	// closes (not while this process has one) or by hand: then the watch
	// ends with an error and is set up again.
	if _, err := syscall.InotifyAddWatch(fd, wal, syscall.IN_MODIFY|syscall.IN_DELETE_SELF|syscall.IN_MOVE_SELF); err != nil {
		return fmt.Errorf("%w: %w", errCannotTell, &os.PathError{Op: "inotify_add_watch", Path: wal, Err: err})
	}
	stop := context.AfterFunc(ctx, func() { _ = f.Close() })
	defer stop()
	watching()
	buf := make([]byte, 64*(syscall.SizeofInotifyEvent+syscall.NAME_MAX+1))
	wait := time.NewTimer(time.Hour)
	wait.Stop()
	defer wait.Stop()
	for {
		n, err := f.Read(buf)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			return err
		}
		// One read holds every event queued since the last (identical
		// ones are merged by the kernel): one change to report.
		quiet := changed()
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			mask := binary.NativeEndian.Uint32(buf[off+4:])
			if mask&(syscall.IN_DELETE_SELF|syscall.IN_MOVE_SELF|syscall.IN_IGNORED) != 0 {
				return errors.New("sqlstore: the WAL file was removed or moved")
			}
			off += syscall.SizeofInotifyEvent + int(binary.NativeEndian.Uint32(buf[off+12:]))
		}
		// Every write of a commit to the log is an event, and read as
		// they come a commit of this process's woke this loop and the
		// poller ~a dozen times. While the news can wait, the events
		// queue and merge, and the next read tells them once.
		if quiet > 0 {
			wait.Reset(quiet)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-wait.C:
			}
		}
	}
}
