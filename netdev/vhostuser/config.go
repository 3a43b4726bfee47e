package vhostuser

import "time"

const (
	// DefaultTxRetries is OVS's default options:tx-retries-max.
	DefaultTxRetries = 8
	// MaxTxRetries is the largest options:tx-retries-max OVS accepts.
	MaxTxRetries = 32
	// DefaultMaxQueuePairs is how many queue pairs a port offers
	// (GET_QUEUE_NUM) unless told otherwise; the guest picks how many it
	// uses. Each costs two rings of about 1.5 KiB of bookkeeping.
	DefaultMaxQueuePairs = 8
	// maxQueuePairs bounds Config.MaxQueuePairs: the ring index of
	// SET_VRING_* messages is 8 bits, two rings a pair.
	maxQueuePairs = 128
	// DefaultReconnectInterval is how often a client port retries its
	// socket, as DPDK's vhost library does for RTE_VHOST_USER_CLIENT.
	DefaultReconnectInterval = time.Second
)

// Config is how a vhost-user port is opened.
type Config struct {
	// Logger gets rate-limited anomaly reports; nil discards them.
	Logger Logger
	// TxRetriesMax is options:tx-retries-max, 0..MaxTxRetries: how many
	// times Write retries a guest receive ring that is full before it
	// drops the rest of the batch. DefaultConfig sets DefaultTxRetries.
	TxRetriesMax int
	// ZeroCopy is options:dq-zero-copy; see SetZeroCopy.
	ZeroCopy bool
	// MaxQueuePairs is offered to the front-end; 0 means
	// DefaultMaxQueuePairs.
	MaxQueuePairs int
	// ReconnectInterval is a client port's pause between connection
	// attempts; 0 means DefaultReconnectInterval.
	ReconnectInterval time.Duration
	// DisableOffload offers the guest no checksum or segmentation
	// offload: frames reach it complete and segmented.
	DisableOffload bool
}

// DefaultConfig returns OVS's defaults.
func DefaultConfig() Config { return Config{TxRetriesMax: DefaultTxRetries} }

// Counters are the vhost-user specific counters, beyond netdev.Stats.
type Counters struct {
	TxRetries       uint64 // ring-full retries (OVS ovs_tx_retries)
	TxRingFullDrops uint64 // frames dropped after the retries (ovs_tx_failure_drops)
	TxNoDeviceDrops uint64 // frames dropped while no device ran
	RxBadFrames     uint64 // malformed chains or headers from the guest, dropped
	RingErrors      uint64 // rings stopped for impossible indexes or bad buffers
	ProtocolErrors  uint64 // connections dropped for malformed messages
	Faults          uint64 // faults on guest memory survived
	Connections     uint64 // connections accepted or made
	ZeroCopyFrames  uint64 // frames handed on from guest memory
	ZeroCopyCopied  uint64 // frames copied in zero-copy mode (no free slot, fragmented, short)
}
