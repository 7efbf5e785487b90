package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// releaseStartupPages unmaps the pages of the binary's code and
// read-only data mappings from the process, and returns how many bytes of
// them are still mapped once it has.
//
// Start-up runs the initialisers of some 1,600 linked packages, spread
// over the whole binary, and the kernel maps the pages around each one
// faulted: a settled server keeps ~40 MiB of its binary mapped, most of
// its RSS, and goes on to use a fraction of it. MADV_DONTNEED on a
// private file mapping drops only the process's page-table entries: the
// pages stay in the kernel's page cache, so one the server uses again is
// mapped back by a minor fault, with no read from disk (MADV_PAGEOUT,
// which evicts them, made the server slower for minutes after). Only
// read-only mappings are given to it, where no page can have been
// written, so nothing is lost.
func releaseStartupPages() (resident int64, err error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, err
	}
	ranges, err := binaryMappings(exe)
	if err != nil {
		return 0, err
	}
	if len(ranges) == 0 {
		return 0, fmt.Errorf("no read-only mapping of %s without anonymous pages in /proc/self/smaps", exe)
	}
	for _, r := range ranges {
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, r[0], r[1]-r[0], unix.MADV_DONTNEED); errno != 0 {
			return 0, fmt.Errorf("madvise(MADV_DONTNEED): %w", errno)
		}
	}
	return residentOf(exe)
}

// binaryMappings lists the address ranges of exe's read-only mappings
// (code, r-x; read-only data, r--) in /proc/self/smaps that hold no
// anonymous pages: in a position-independent build the loader writes
// relocations into read-only data before protecting it (RELRO), and
// MADV_DONTNEED would drop those copies for the file's unrelocated bytes.
func binaryMappings(exe string) ([][2]uintptr, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out [][2]uintptr
	var cur *[2]uintptr // the read-only mapping of exe being read, if any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if !strings.HasSuffix(fields[0], ":") { // start-end perms offset dev inode path
			cur = nil
			if len(fields) != 6 || fields[5] != exe || (fields[1] != "r-xp" && fields[1] != "r--p") {
				continue
			}
			lo, hi, _ := strings.Cut(fields[0], "-")
			start, err1 := strconv.ParseUint(lo, 16, 64)
			end, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 != nil || err2 != nil || end <= start {
				return nil, fmt.Errorf("/proc/self/smaps: unexpected line %q", sc.Text())
			}
			cur = &[2]uintptr{uintptr(start), uintptr(end)}
			continue
		}
		if cur != nil && fields[0] == "Anonymous:" {
			if len(fields) == 3 && fields[1] == "0" {
				out = append(out, *cur)
			}
			cur = nil
		}
	}
	return out, sc.Err()
}

// residentOf sums the Rss of exe's mappings in /proc/self/smaps.
func residentOf(exe string) (int64, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var total int64
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if !strings.HasSuffix(fields[0], ":") { // a mapping's first line
			in = len(fields) == 6 && fields[5] == exe
			continue
		}
		if in && fields[0] == "Rss:" && len(fields) == 3 {
			kib, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0, err
			}
			total += kib << 10
		}
	}
	return total, sc.Err()
}
