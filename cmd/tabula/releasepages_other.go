//go:build !linux

package main

import "errors"

// releaseStartupPages is Linux's MADV_DONTNEED; elsewhere the pages stay mapped.
func releaseStartupPages() (int64, error) {
	return 0, errors.New("not supported on this system")
}
