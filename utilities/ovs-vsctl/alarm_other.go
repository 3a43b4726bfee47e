//go:build !linux

package main

import (
	"os"
	"syscall"
)

// dieBySignal exits with the status a shell reports for a death by sig.
func dieBySignal(sig syscall.Signal) { os.Exit(128 + int(sig)) }
