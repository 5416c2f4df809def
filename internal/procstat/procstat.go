// Package procstat reads what the benchmarks report about processes from
// /proc: CPU time and resident memory of a process, and the machine's load
// average (the benches print it: on a shared machine a number means little
// without it). Linux only; elsewhere the values are zero.
package procstat

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

// clockTick is USER_HZ, 100 on every Linux ABI Go supports.
const clockTick = 10 * time.Millisecond

// CPU returns the user+system CPU time pid has used so far (0 if unknown).
func CPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	return parseStatCPU(string(b))
}

// parseStatCPU takes utime and stime (fields 14 and 15) from a
// /proc/PID/stat line; the command name in parentheses may hold spaces.
func parseStatCPU(s string) time.Duration {
	i := strings.LastIndex(s, ")")
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	var ut, st int64
	if _, err := fmt.Sscan(f[11], &ut); err != nil {
		return 0
	}
	if _, err := fmt.Sscan(f[12], &st); err != nil {
		return 0
	}
	return time.Duration(ut+st) * clockTick
}

// Self is this process's CPU time so far.
func Self() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// RSS returns pid's resident set size and its peak (VmRSS, VmHWM) in bytes.
func RSS(pid int) (cur, peak int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	return parseStatusKB(string(b), "VmRSS:") * 1024, parseStatusKB(string(b), "VmHWM:") * 1024
}

func parseStatusKB(s, key string) int64 {
	for _, line := range strings.Split(s, "\n") {
		if rest, ok := strings.CutPrefix(line, key); ok {
			var kb int64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), &kb)
			return kb
		}
	}
	return 0
}

// LoadAvg is /proc/loadavg's 1, 5 and 15 minute averages with the number
// of CPUs, as one printable line.
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "load average unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "load average unknown"
	}
	return fmt.Sprintf("load average %s %s %s (1/5/15 min)", f[0], f[1], f[2])
}
