// Package offload finishes in software the work a frame's packet.Offload
// defers, for ports that cannot take it: completing partial L4 checksums
// and segmenting TCP and UDP super-frames (as the kernel's
// skb_checksum_help and tcp_gso_segment/__udp_gso_segment do), and
// recovering the Offload of super-frames that arrived without a
// virtio_net_hdr.
package offload

import (
	"errors"
	"sync/atomic"
)

var (
	// ErrMalformed means the frame's headers do not parse as its Offload
	// says they should, or its offsets are out of bounds.
	ErrMalformed = errors.New("offload: malformed frame for its offload")
	// ErrUnsupported means the frame carries work this package cannot
	// do, such as a partial checksum over a protocol other than TCP or UDP
	// over IPv4 or IPv6.
	ErrUnsupported = errors.New("offload: unsupported offload")
	// ErrUnknownSegmentSize means a UDP super-frame arrived without its
	// segment size, which unlike TCP's cannot be recovered from the MTU:
	// the datagram boundaries are the application's.
	ErrUnknownSegmentSize = errors.New("offload: UDP super-frame without a segment size")
)

// Stats counts the frames a port finished in software.
type Stats struct {
	Segmented   uint64 // super-frames segmented
	Segments    uint64 // segments they were cut into
	Checksummed uint64 // partial checksums completed
	Errors      uint64 // frames dropped because their offload could not be done
}

// Counters is the form of Stats that a port updates while another
// goroutine reads it.
type Counters struct {
	segmented, segments, checksummed, errors atomic.Uint64
}

// AddSegmented counts one super-frame cut into segs segments.
func (c *Counters) AddSegmented(segs int) {
	c.segmented.Add(1)
	c.segments.Add(uint64(segs))
}

// AddChecksummed counts n checksums completed.
func (c *Counters) AddChecksummed(n int) { c.checksummed.Add(uint64(n)) }

// AddErrors counts n frames whose offload failed.
func (c *Counters) AddErrors(n int) { c.errors.Add(uint64(n)) }

// Snapshot returns the counters' current values.
func (c *Counters) Snapshot() Stats {
	return Stats{
		Segmented:   c.segmented.Load(),
		Segments:    c.segments.Load(),
		Checksummed: c.checksummed.Load(),
		Errors:      c.errors.Load(),
	}
}
