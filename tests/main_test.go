package tests

import (
	"os"
	"testing"
)

// TestMain removes what the test binary built for its own use once every
// test has run.
func TestMain(m *testing.M) {
	code := m.Run()
	if ovsdbBuildDir != "" {
		os.RemoveAll(ovsdbBuildDir)
	}
	os.Exit(code)
}
