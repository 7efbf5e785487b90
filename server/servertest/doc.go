// Package servertest runs a Tabula server in process for tests, on a
// store the test opens (storetest.Open), with its controllers running
// until the test ends.
package servertest
