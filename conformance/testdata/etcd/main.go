// Command etcd is etcd's server as its release binary runs it, built in a
// module of its own because the etcd repository's main module cannot be
// installed from the module proxy (its go.mod replaces its sibling
// modules with local copies). The density benchmark runs kube-apiserver
// on it.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
