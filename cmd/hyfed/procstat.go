package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat:
// 100 on every Linux architecture Go runs on (the kernel's HZ may differ;
// what it exports to user space does not).
const clockTicks = 100

// procSample is what /proc says of a process at one moment.
type procSample struct {
	At  time.Time
	CPU float64 // user + system CPU seconds since the process started, all its threads (10 ms resolution)
	RSS int64   // resident bytes now (VmRSS)
	HWM int64   // peak resident bytes (VmHWM) since the start or the last resetPeak
	// Self is this process's CPU seconds at the same moment (bench-net:
	// the simulated participants').
	Self float64
}

// sampleProc reads a process's CPU time and memory from /proc.
func sampleProc(pid int) (procSample, error) {
	s := procSample{At: time.Now()}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// the fields after it start at the state (field 3).
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return s, errors.New("/proc/PID/stat: no command name")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return s, errors.New("/proc/PID/stat: too few fields")
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseUint(f[12], 10, 64) // field 15
	if err := errors.Join(err1, err2); err != nil {
		return s, fmt.Errorf("/proc/PID/stat: %w", err)
	}
	s.CPU = float64(utime+stime) / clockTicks
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	s.RSS, s.HWM = statusBytes(st, "VmRSS:"), statusBytes(st, "VmHWM:")
	return s, nil
}

// statusBytes reads a "Name:   123 kB" line of /proc/PID/status.
func statusBytes(status []byte, name string) int64 {
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, name); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return -1
			}
			return n << 10
		}
	}
	return -1
}

// resetPeak sets a process's VmHWM back to its current RSS (proc(5),
// clear_refs: 5), so that the next sample's HWM is the peak since now.
func resetPeak(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}
