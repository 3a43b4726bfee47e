package tests

import (
	"os"
	"strconv"
	"syscall"
	"testing"
)

// TestMain removes what the test binary built for its own use once every
// test has run.
func TestMain(m *testing.M) {
	keepInheritedFDs()
	code := m.Run()
	if ovsdbBuildDir != "" {
		os.RemoveAll(ovsdbBuildDir)
	}
	os.Exit(code)
}

// keepInheritedFDs marks the descriptors the test binary inherited
// close-on-exec, so that the daemons the tests start do not get them: run
// as `flock LOCK go test`, a daemon that outlives a killed test would
// otherwise hold the lock for as long as it lives.
func keepInheritedFDs() {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}
