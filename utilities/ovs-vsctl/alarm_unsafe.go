//go:build linux

package main

import (
	"os"
	"syscall"
	"unsafe"
)

// sigaction is the kernel's struct sigaction (include/uapi/asm-generic/signal.h).
type sigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

// dieBySignal ends the process by sig with its default action, as OVS's
// fatal-signal module does: the shell then sees "killed by SIGALRM" (142).
// Go's runtime keeps its own handler for SIGALRM and drops the signal, so
// the default action is restored with rt_sigaction first.
func dieBySignal(sig syscall.Signal) {
	act := sigaction{} // SIG_DFL
	syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0)
	syscall.Kill(os.Getpid(), sig)
	select {}
}
