// Package netdev owns the ports the datapath reads and writes: AF_PACKET
// sockets on existing kernel interfaces ("system"), tap devices ("tap",
// "internal" and each bridge's local port), patch ports, and dummy ports
// with no device at all (--enable-dummy, for tests). Every port is
// batch-shaped and negotiates its own offloads; the datapath sees only
// packet.Packet and packet.Offload, whatever the port kind.
package netdev

import (
	"errors"
	"net"

	"github.com/govs/govs/datapath/packet"
	"github.com/govs/govs/netdev/offload"
)

// BatchSize is the number of frames one Read or Write handles at most. It
// matches OVS's NETDEV_MAX_BURST (32): large enough that a syscall is paid
// per 32 frames, small enough that a batch of full-size buffers
// (32 x 64 KiB) stays within the L2 cache budget of one worker.
const BatchSize = 32

// ErrClosed is returned by Read and Write once the port is closed.
var ErrClosed = errors.New("netdev: port closed")

// ErrNoDevice is returned by Read and Write when the port's kernel device
// has been deleted under it; the port should be closed.
var ErrNoDevice = errors.New("netdev: device removed")

// Port is one attached interface.
//
// Read and Write may be called concurrently with each other, but each of
// them from one goroutine at a time.
type Port interface {
	// Name is the interface name, as in the Interface table.
	Name() string
	// Read blocks until at least one frame is available (waiting in the
	// kernel, never spinning), then fills pkts[0:n] with up to len(pkts)
	// frames, each with its Offload set. It returns ErrClosed after Close.
	Read(pkts []*packet.Packet) (n int, err error)
	// Write sends pkts. A frame whose Offload the port cannot take is
	// segmented or checksummed in software first. It returns how many
	// frames were sent; frames not sent are counted as tx drops. The error
	// is non-nil only when the port itself is unusable (ErrClosed,
	// ErrNoDevice), not for the frames it dropped.
	//
	// Write may complete a frame's partial checksum in place (clearing
	// NeedsCsum), so a packet must not be in two concurrent Writes; a
	// frame sent to several ports one after the other stays valid for all.
	Write(pkts []*packet.Packet) (n int, err error)
	// Offloads reports what the port accepts on transmit.
	Offloads() Offloads
	// Stats returns the port's counters.
	Stats() Stats
	// Close releases the port; a tap device govs created is removed.
	Close() error
}

// Offloads is the set of deferred work a port takes on transmit.
type Offloads struct {
	Csum bool // partial L4 checksums (packet.NeedsCsum)
	TSO4 bool
	TSO6 bool
	USO  bool
}

// Stats are the counters the Interface table's statistics column shows.
type Stats struct {
	RxPackets, RxBytes, RxDropped, RxErrors uint64
	TxPackets, TxBytes, TxDropped, TxErrors uint64

	// Offload counts the frames the port finished in software because the
	// other side could not take their offload. Added to the original
	// fields so that the daemon can show it (as OVS's coverage counters
	// would) and a benchmark can tell the software path from the fast one.
	Offload offload.Stats
}

// Config is how a port is opened.
type Config struct {
	// SockBufSize is the socket receive and send buffer size in bytes
	// for system ports; 0 keeps the kernel default (net.core.rmem_default,
	// 212992 bytes), far too small for 8 KiB UDP bursts at line rate. It is
	// set with SO_RCVBUFFORCE/SO_SNDBUFFORCE (ignoring net.core.rmem_max),
	// falling back to SO_RCVBUF/SO_SNDBUF. Tap devices have no socket
	// buffer (their queue is the device's txqueuelen) and ignore it.
	SockBufSize int
	// DisableOffload opens the port without a virtio_net_hdr: received
	// frames are finished in software (checksums completed, TCP
	// super-frames marked for segmentation) and Offloads is all false, so
	// every frame written is segmented and checksummed in software first.
	DisableOffload bool
	// RxQueues is how many receive queues a system or tap port opens:
	// for a system port one AF_PACKET socket each, all in one
	// PACKET_FANOUT_HASH group, so that the kernel spreads the device's
	// flows over them; for a tap one file each of its multi-queue device
	// (options:n_rxq). 0 means 1. Other ports have one queue and ignore it.
	RxQueues int
}

// MaxRxQueues is the most receive queues a system or tap port takes: OVS's limit
// for its AF_XDP ports (MAX_XSKQ), whose options:n_rxq error text govs
// reports. Each queue of a port reading from its ring maps 16 MiB.
const MaxRxQueues = 16

// ErrMultiQueue is returned by SwitchSockBuf on a port with more than one
// receive queue: their sockets are in a PACKET_FANOUT_HASH group, which
// the hand-over's own group cannot join; the caller reopens the port.
var ErrMultiQueue = errors.New("netdev: a port with several receive queues cannot hand its sockets over")

// Reader is one receive queue of a port, read as Port.Read.
type Reader interface {
	Read(pkts []*packet.Packet) (n int, err error)
}

// RxQueuer is implemented by ports that may receive on several queues.
// Each queue is read by a goroutine of its own, as Port.Read; queue 0 is
// the port itself. Frames of one flow (same addresses and ports) always
// arrive on the same queue, so each stays in order.
type RxQueuer interface {
	// RxQueues returns the port's receive queues, at least one; the
	// count is fixed for the port's life.
	RxQueues() []Reader
}

// ReadWaiter is implemented by ports whose reader can wait for frames
// without holding receive buffers meanwhile, so that an idle port costs
// no buffer memory.
type ReadWaiter interface {
	// WaitRead blocks until Read would return without waiting: a frame
	// is there, or an error (ErrClosed after Close). If it has to wait, it
	// calls idle once before it does. It is called from the reading
	// goroutine, never concurrently with Read.
	WaitRead(idle func()) error
}

// Poller is implemented by readers that can be read without waiting (a
// system port: its receive ring, or recvmmsg with nothing to wait for),
// for workers that poll (GOVS_PMD_POLL). Poll is called from the reading
// goroutine, never concurrently with Read.
type Poller interface {
	// Poll returns the frames there are now, up to len(pkts), possibly
	// none; ErrClosed after Close.
	Poll(pkts []*packet.Packet) (int, error)
}

// SockBufSetter is implemented by ports with socket buffers, to apply a new
// Config.SockBufSize to an open port.
type SockBufSetter interface {
	SetSockBuf(n int) error
}

// SockBufSizer is implemented by ports with socket buffers, to set them
// separately and read them back.
type SockBufSizer interface {
	// SetSockBufs sets the receive and send buffers separately (bytes,
	// as SetSockBuf: the kernel doubles them); 0 leaves one alone.
	SetSockBufs(rcv, snd int) error
	// SockBufs reports the buffers' sizes as getsockopt gives them:
	// twice what was set, the kernel's accounting (socket(7)).
	SockBufs() (rcv, snd int, err error)
}

// SockBufSwitcher is implemented by ports that receive differently with and
// without a Config.SockBufSize (a system port: its ring, or recvmmsg on a
// socket buffer of that size). SwitchSockBuf moves the port to a socket
// opened with n in place, losing and duplicating no frame; the port's
// reader finishes the move (on a port nobody reads, a second switch waits
// a second and fails). On error the port goes on as it was.
type SockBufSwitcher interface {
	SwitchSockBuf(n int) error
}

// Reopener is implemented by ports that can be opened again with another
// Config while keeping their kernel device: a tap govs created would
// otherwise vanish with its addresses on Close. On success the receiver is
// closed and the new port replaces it; on failure the caller closes the
// receiver (a second Close is harmless).
type Reopener interface {
	Reopen(cfg Config) (Port, error)
}

// LinkInfo is what the Interface table shows about a kernel device.
type LinkInfo struct {
	Index int
	MTU   int
	// MinMTU and MaxMTU are the MTUs the device accepts (IFLA_MIN_MTU,
	// IFLA_MAX_MTU), 0 if the kernel does not say.
	MinMTU, MaxMTU int
	MAC            net.HardwareAddr
	AdminUp        bool // IFF_UP
	OperUp         bool // IFF_LOWER_UP and IFF_RUNNING: carrier and operstate up
	// Speed is the link speed in Mbit/s, 0 if unknown (as for tap devices).
	Speed uint32
	// Duplex is "full", "half" or "" if unknown.
	Duplex string
}
