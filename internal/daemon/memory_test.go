package daemon

import (
	"os"
	"path/filepath"
	"regexp"
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

// TestMemoryMonitorLogs checks the first report's lines, as lib/memory.c
// logs them (the process started memoryCheckInterval ago, so the check is
// due at once).
func TestMemoryMonitorLogs(t *testing.T) {
	saved := processStart
	processStart = time.Now().Add(-memoryCheckInterval)
	defer func() { processStart = saved }()
	log := NewLogger(nil)
	file := filepath.Join(t.TempDir(), "memory.log")
	if err := log.SetLogFile(file); err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	out := func() string {
		b, _ := os.ReadFile(file)
		return string(b)
	}
	stop := make(chan struct{})
	defer close(stop)
	MemoryMonitor(log, nil, func() map[string]uint64 { return map[string]uint64{"monitors": 1, "cells": 20} }, stop)
	want := regexp.MustCompile(`\|memory\|INFO\|\d+ kB peak resident set size after 1\d\.\d seconds\n` +
		`.*\|memory\|INFO\|cells:20 monitors:1\n$`)
	deadline := time.Now().Add(10 * time.Second)
	for !want.MatchString(out()) {
		if time.Now().After(deadline) {
			t.Fatalf("log: %q", out())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
