// Package storetest is the behaviour suite every sqlstore dialect must
// pass. sqlstore's tests call Run once per database; each subtest gets a
// fresh, empty database from the caller's factory.
package storetest
