package vhostuser

import "unsafe"

func ptrAt(b []byte, off uint64) unsafe.Pointer { return unsafe.Pointer(&b[off]) }
