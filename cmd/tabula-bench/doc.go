// Command tabula-bench is Tabula's load tool. It drives any API server
// named by a kubeconfig through client-go — Tabula, kube-apiserver or
// another — so runs can be compared side by side on one machine.
//
// Workloads: create (1 KiB and 10 KiB ConfigMaps from N clients), get,
// update with contention, list of many objects whole and in pages of 500,
// selective list by label, watch delivery latency with many watchers, and
// rewatch (a watch from a recent revision, as an informer's after its
// list, until its history's events arrive).
// It prints a table, writes JSON, and samples the server's RSS when given
// its pid; with its pid (or --cpu-pids, the server's processes, storage
// included) the timed workloads also report the server's CPU time per
// operation. Every workload is bounded by --duration.
package main
