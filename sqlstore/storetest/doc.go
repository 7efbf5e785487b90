// Package storetest is the behaviour suite every sqlstore dialect must
// pass. sqlstore's tests call Run once per database; each subtest gets a
// fresh, empty database from the caller's factory. Open is the store a
// test opens on a URL, for this suite and for the server's tests.
package storetest
