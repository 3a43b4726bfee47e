package daemon

import (
	"bytes"
	"regexp"
	"sync"
	"testing"
	"time"
)

func TestMemoryReport(t *testing.T) {
	got := MemoryReport(map[string]uint64{"sessions": 2, "atoms": 1234, "n-weak-refs": 0, "cells": 567, "monitors": 3})
	if want := "atoms:1234 cells:567 monitors:3 n-weak-refs:0 sessions:2\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := MemoryReport(nil); got != "\n" {
		t.Errorf("empty: got %q", got)
	}
}

// lockedBuffer is a console the monitor's goroutine writes while the test
// reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestMemoryMonitorLogs checks the first report's lines, as lib/memory.c
// logs them (the process started memoryCheckInterval ago, so the check is
// due at once).
func TestMemoryMonitorLogs(t *testing.T) {
	saved := processStart
	processStart = time.Now().Add(-memoryCheckInterval)
	defer func() { processStart = saved }()
	var out lockedBuffer
	log := NewLogger(&out)
	stop := make(chan struct{})
	defer close(stop)
	MemoryMonitor(log, nil, func() map[string]uint64 { return map[string]uint64{"monitors": 1, "cells": 20} }, stop)
	want := regexp.MustCompile(`\|memory\|INFO\|\d+ kB peak resident set size after 1\d\.\d seconds\n` +
		`.*\|memory\|INFO\|cells:20 monitors:1\n$`)
	deadline := time.Now().Add(10 * time.Second)
	for !want.MatchString(out.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("log: %q", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
