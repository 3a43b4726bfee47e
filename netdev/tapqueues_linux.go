//go:build linux

package netdev

import (
	"errors"
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// A tap port with Config.RxQueues > 1 attaches that many files to its
// multi-queue device (IFF_MULTI_QUEUE, tuntap(7)), each read by a goroutine
// of its own. The kernel picks the queue of a frame the device transmits
// (tun_automq_select_queue, drivers/net/tun.c): the queue on which a frame
// of the same flow (its symmetric hash) was last written, else one by the
// flow's hash. Write therefore spreads flows over the queues by a
// symmetric hash of its own (flowQueue), so that both directions of a flow
// meet on one queue and flows spread over all of them; frames of one flow
// are read from one queue, in order. Queue 0 is the port itself.

// tunGetDevNetns is TUNGETDEVNETNS (linux/if_tun.h, _IO('T', 227), Linux
// 5.2): a file descriptor of the device's network namespace.
const tunGetDevNetns = 0x54e3

// errSingleQueue: a tap device someone else created without
// IFF_MULTI_QUEUE cannot take more queues.
var errSingleQueue = errors.New("exists as a single-queue tap device: several receive queues need one created with multi_queue")

// openQueues attaches n-1 more files to t's device. On error they are
// closed again.
func (t *tapPort) openQueues(n, netns int) error {
	if n <= 1 {
		return nil
	}
	if !t.mq {
		return errSingleQueue
	}
	for i := 1; i < n; i++ {
		q := &tapPort{name: t.name, vnet: t.vnet, mq: true, offloads: t.offloads}
		if err := q.open(netns, false); err != nil {
			t.closeQueues()
			return fmt.Errorf("queue %d: %w", i, err)
		}
		t.queues = append(t.queues, q)
	}
	return nil
}

func (t *tapPort) closeQueues() {
	for _, q := range t.queues {
		q.closed.Store(true)
		q.f.Close()
	}
	t.queues = nil
}

// RxQueues implements RxQueuer.
func (t *tapPort) RxQueues() []Reader { return readers(t, t.queues) }

// openTun opens /dev/net/tun in network namespace netns (-1: the
// caller's). The file keeps the namespace it was opened in: TUNSETIFF finds
// or creates the device there (tun_chr_open saves current's net).
func openTun(netns int) (int, error) {
	const path = "/dev/net/tun"
	if netns < 0 {
		return unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	}
	runtime.LockOSThread()
	self, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		runtime.UnlockOSThread()
		return -1, err
	}
	defer unix.Close(self)
	if err := unix.Setns(netns, unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return -1, fmt.Errorf("setns: %w", err)
	}
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if serr := unix.Setns(self, unix.CLONE_NEWNET); serr != nil {
		// The thread stays locked, and so is ended with its goroutine
		// rather than reused in the wrong namespace.
		if err == nil {
			unix.Close(fd)
		}
		return -1, fmt.Errorf("setns back: %w", serr)
	}
	runtime.UnlockOSThread()
	return fd, err
}

// tunInNetns reports whether netns is the calling thread's network namespace.
func tunInNetns(netns int) (bool, error) {
	var a, b unix.Stat_t
	if err := unix.Fstat(netns, &a); err != nil {
		return false, err
	}
	if err := unix.Stat("/proc/thread-self/ns/net", &b); err != nil {
		return false, err
	}
	return a.Dev == b.Dev && a.Ino == b.Ino, nil
}
