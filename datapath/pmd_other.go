//go:build !linux

package datapath

import "errors"

// Elsewhere than Linux no CPU can be chosen: a mask selects none.
func processCPUs() []int { return nil }

func setThreadCPUs(int, []int) error { return errors.New("CPU affinity is Linux-only") }

func gettid() int { return 0 }
