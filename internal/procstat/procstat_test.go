package procstat

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	// The command name holds a space and a parenthesis: fields count from
	// the last ')'.
	line := "1234 (java (x) y) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 40 0 100 1000 10 0 0"
	if got, want := parseStatCPU(line), 300*clockTick; got != want {
		t.Fatalf("parseStatCPU = %v, want %v", got, want)
	}
	if got := parseStatCPU("garbage"); got != 0 {
		t.Fatalf("garbage: %v", got)
	}
}

func TestParseStatusKB(t *testing.T) {
	s := "Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n"
	if got := parseStatusKB(s, "VmRSS:"); got != 1024 {
		t.Fatalf("VmRSS = %d", got)
	}
	if got := parseStatusKB(s, "VmHWM:"); got != 2048 {
		t.Fatalf("VmHWM = %d", got)
	}
}

func TestSelf(t *testing.T) {
	// Burn some CPU; our own counters must see it.
	cpu0, rss := Self(), 0
	deadline := time.Now().Add(50 * time.Millisecond)
	for time.Now().Before(deadline) {
		rss++
	}
	if Self() <= cpu0 && CPU(os.Getpid()) == 0 {
		t.Fatal("no CPU time seen for this process")
	}
	if cur, peak := RSS(os.Getpid()); cur <= 0 || peak < cur {
		t.Fatalf("RSS = %d, peak %d", cur, peak)
	}
	if la := LoadAvg(); !strings.HasPrefix(la, "load average ") || strings.Contains(la, "unknown") {
		t.Fatalf("LoadAvg = %q", la)
	}
}
