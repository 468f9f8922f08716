//go:build unix

// Process CPU time from getrusage(RUSAGE_SELF), for process_cpu_ns.

package roottrace

import "syscall"

// processCPUNs returns the process's user and system CPU time (ns), -1 when unknown.
func processCPUNs() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
