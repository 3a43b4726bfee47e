package jsonrpc

import (
	"runtime/debug"
	"sync"
)

// Large messages make spikes: a 64 MiB echo takes the message, its buffer's
// doubling slack and the reply. Go returns freed heap to the OS only slowly
// (the background scavenger), so without help the server's RSS stayed at its
// peak for minutes, as if the memory were still in use.
// spikeSize is the size of a buffer whose release is worth a garbage
// collection: well above the ~1 MiB batches of replies that a pipelining
// client causes in normal use.
const spikeSize = 16 << 20

var release struct {
	mu      sync.Mutex
	running bool // guarded by mu: a goroutine is freeing memory
	again   bool // guarded by mu: free once more when it is done
}

// ReleaseMemory returns freed memory to the OS soon, in the background. It is
// meant for after a spike (a large buffer dropped), not for every message:
// each run is a full garbage collection. Calls during a run coalesce into one
// more run.
func ReleaseMemory() {
	release.mu.Lock()
	defer release.mu.Unlock()
	if release.running {
		release.again = true
		return
	}
	release.running = true
	go func() {
		for {
			debug.FreeOSMemory()
			release.mu.Lock()
			if !release.again {
				release.running = false
				release.mu.Unlock()
				return
			}
			release.again = false
			release.mu.Unlock()
		}
	}()
}
