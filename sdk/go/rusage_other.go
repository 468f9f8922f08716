//go:build !unix

// Process CPU time is not measured where getrusage is missing.

package roottrace

// processCPUNs returns -1: unknown on this platform (process_cpu_ns is then not sent).
func processCPUNs() int64 { return -1 }
