package netdev

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/govs/govs/datapath/packet"
)

// A DummyPort is OVS's netdev-dummy (lib/netdev-dummy.c): a port with no
// device behind it, for tests that need neither root nor namespaces. The
// frames netdev-dummy/receive injects are what Read returns; the frames
// written are counted and, with options:tx_pcap or pcap, appended to a
// pcap file. Every open DummyPort is found by name (LookupDummy), as
// netdev-dummy/* finds OVS's.
type DummyPort struct {
	name string
	typ  string

	rxq *FrameQueue

	mu     sync.Mutex // guards every field below
	closed bool
	up     bool
	mac    net.HardwareAddr
	mtu    int
	stats  Stats
	// rxPcap records the frames queued for Read, txPcap the frames
	// written; the same writer for options:pcap.
	rxPcap, txPcap *pcapWriter
	addr4, addr6   netip.Prefix

	fin txFinisher // the writer's; no offload is taken
}

// dummyMaxQueue is how many frames wait for Read at most; more are
// dropped, as OVS's NETDEV_DUMMY_MAX_QUEUE.
const dummyMaxQueue = 100

var (
	dummiesMu sync.Mutex // guards dummies and dummyNext
	dummies              = map[string]*DummyPort{}
	// dummyNext numbers the dummies' MACs: aa:55:00:00:00:00 + n, as OVS
	// counts from 0xaa550000.
	dummyNext uint32 = 0xaa550000
)

// ErrDummyExists is returned by OpenDummy for a name already open.
var ErrDummyExists = errors.New("netdev: dummy device exists")

// OpenDummy creates dummy port name of type typ ("dummy",
// "dummy-internal", or the type a --enable-dummy=override replaced), up.
func OpenDummy(name, typ string) (*DummyPort, error) {
	dummiesMu.Lock()
	defer dummiesMu.Unlock()
	if _, ok := dummies[name]; ok {
		return nil, fmt.Errorf("%s: %w", name, ErrDummyExists)
	}
	n := dummyNext
	dummyNext++
	p := &DummyPort{
		name: name, typ: typ, up: true, mtu: dummyMTU,
		mac: net.HardwareAddr{0xaa, 0x55, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)},
		rxq: NewFrameQueue(), fin: newTxFinisher(false, Offloads{}),
	}
	dummies[name] = p
	return p, nil
}

// LookupDummy returns the open dummy port name, nil if there is none.
func LookupDummy(name string) *DummyPort {
	dummiesMu.Lock()
	defer dummiesMu.Unlock()
	return dummies[name]
}

// Dummies returns every open dummy port, by name.
func Dummies() []*DummyPort {
	dummiesMu.Lock()
	defer dummiesMu.Unlock()
	out := make([]*DummyPort, 0, len(dummies))
	for _, p := range dummies {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *DummyPort) int { return strings.Compare(a.name, b.name) })
	return out
}

// Name implements Port.
func (p *DummyPort) Name() string { return p.name }

// Type is the type the port was opened as.
func (p *DummyPort) Type() string { return p.typ }

// Receive queues frames for Read, as if they arrived, recording them in
// the rx pcap file. Frames past the queue's limit are dropped and counted.
func (p *DummyPort) Receive(frames ...[]byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.receive(frames...)
}

// receive is Receive with mu held.
func (p *DummyPort) receive(frames ...[]byte) {
	for _, f := range frames {
		if p.rxPcap != nil {
			p.rxPcap.write(f)
		}
		if len(f) > packet.MaxFrame {
			p.stats.RxDropped++
			continue
		}
		p.stats.RxDropped += uint64(p.rxq.Push(dummyMaxQueue, f))
	}
}

// Read implements Port.
func (p *DummyPort) Read(pkts []*packet.Packet) (int, error) {
	var bytes uint64
	n, err := p.rxq.Pop(pkts, func(pk *packet.Packet, f []byte) {
		pk.Reset()
		pk.SetData(f)
		bytes += uint64(len(f))
	})
	// Counted after Pop: Receive takes mu, then the queue's lock.
	p.count(func(s *Stats) {
		s.RxPackets += uint64(n)
		s.RxBytes += bytes
	})
	return n, err
}

// Write implements Port: every frame is counted and appended to the tx
// pcap file; a frame longer than an MTU of 1500 allows is dropped, as
// netdev_dummy_send refuses it. An IPv4 address set by SetAddr4 answers
// ARP requests for it, as OVS's dummy does.
func (p *DummyPort) Write(pkts []*packet.Packet) (int, error) {
	sent := 0
	for _, pk := range pkts {
		switch p.fin.prepare(pk, nil) {
		case txDrop:
			p.count(func(s *Stats) { s.TxDropped++ })
			continue
		case txSegment:
			q := segPool.Get()
			for range p.fin.seg.Segments() {
				q.SetLen(p.fin.seg.Next(q.Tail()))
				p.send(q.Data())
			}
			segPool.Put(q)
			sent++
			continue
		}
		if p.send(pk.Data()) {
			sent++
		}
	}
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return sent, ErrClosed
	}
	return sent, nil
}

func (p *DummyPort) count(f func(*Stats)) {
	p.mu.Lock()
	f(&p.stats)
	p.mu.Unlock()
}

// dummyMTU is a dummy's MTU until SetMTU, which it enforces on transmit
// (OVS's default); SetMTU takes dummyMinMTU to dummyMaxMTU.
const (
	dummyMTU    = 1500
	dummyMinMTU = 68
	dummyMaxMTU = 65535
)

func (p *DummyPort) send(b []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	max := p.mtu + 14
	if len(b) >= 14 && b[12] == 0x81 && b[13] == 0x00 {
		max += 4
	}
	if len(b) < 14 || len(b) > max || p.closed {
		p.stats.TxDropped++
		return false
	}
	p.stats.TxPackets++
	p.stats.TxBytes += uint64(len(b))
	if p.txPcap != nil {
		p.txPcap.write(b)
	}
	if reply := arpReply(b, p.addr4, p.mac); reply != nil {
		p.receive(reply)
	}
	return true
}

// arpReply is the reply to b if b is an ARP request for addr, else nil.
func arpReply(b []byte, addr netip.Prefix, mac net.HardwareAddr) []byte {
	if !addr.IsValid() || len(b) < 42 || b[12] != 0x08 || b[13] != 0x06 ||
		b[20] != 0 || b[21] != 1 || netip.AddrFrom4([4]byte(b[38:42])) != addr.Addr() {
		return nil
	}
	f := &dummyFlow{ethType: 0x0806, arpOp: 2, dst: net.HardwareAddr(b[6:12]), src: mac,
		sha: mac, tha: net.HardwareAddr(b[6:12]), sip: addr.Addr(), tip: netip.AddrFrom4([4]byte(b[28:32]))}
	return f.compose(0)
}

// Offloads implements Port: none.
func (p *DummyPort) Offloads() Offloads { return Offloads{} }

// Stats implements Port.
func (p *DummyPort) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.stats
	st.Offload = p.fin.ctr.Snapshot()
	return st
}

// Close implements Port: the port leaves the registry, its pcap files are
// closed and a blocked Read returns ErrClosed.
func (p *DummyPort) Close() error {
	dummiesMu.Lock()
	if dummies[p.name] == p {
		delete(dummies, p.name)
	}
	dummiesMu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closed = true
		p.rxq.Close()
		p.closePcaps()
	}
	return nil
}

func (p *DummyPort) closePcaps() {
	if p.rxPcap != nil {
		p.rxPcap.close()
	}
	if p.txPcap != nil && p.txPcap != p.rxPcap {
		p.txPcap.close()
	}
	p.rxPcap, p.txPcap = nil, nil
}

// SetPcap (re)opens the pcap files, as netdev_dummy_set_config: with both
// set to the same path (options:pcap) one file gets both directions, ""
// records none. The files are appended to.
func (p *DummyPort) SetPcap(rx, tx string) error {
	var rw, tw *pcapWriter
	var err error
	if rx != "" {
		if rw, err = openPcap(rx); err != nil {
			return err
		}
	}
	if tx == rx {
		tw = rw
	} else if tx != "" {
		if tw, err = openPcap(tx); err != nil {
			if rw != nil {
				rw.close()
			}
			return err
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closePcaps()
	if p.closed {
		if rw != nil {
			rw.close()
		}
		if tw != nil && tw != rw {
			tw.close()
		}
		return ErrClosed
	}
	p.rxPcap, p.txPcap = rw, tw
	return nil
}

// SetAdminUp sets the administrative state (netdev-dummy/set-admin-state).
// As in OVS it changes what the port reports (admin_state, link_state,
// the OpenFlow port's PORT_DOWN and LINK_DOWN), not what it forwards.
func (p *DummyPort) SetAdminUp(up bool) {
	p.mu.Lock()
	p.up = up
	p.mu.Unlock()
}

// AdminUp reports the administrative state; a dummy's carrier follows it.
func (p *DummyPort) AdminUp() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.up
}

// MAC is the port's Ethernet address.
func (p *DummyPort) MAC() net.HardwareAddr {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.mac)
}

// SetMAC changes the port's Ethernet address.
func (p *DummyPort) SetMAC(mac net.HardwareAddr) {
	p.mu.Lock()
	p.mac = slices.Clone(mac)
	p.mu.Unlock()
}

// SetMTU sets the MTU, as netdev_dummy_set_mtu: EINVAL outside 68..65535.
func (p *DummyPort) SetMTU(mtu int) error {
	if mtu < dummyMinMTU || mtu > dummyMaxMTU {
		return syscall.EINVAL
	}
	p.mu.Lock()
	p.mtu = mtu
	p.mu.Unlock()
	return nil
}

// LinkInfo is the port's state as a kernel device's would be shown: no
// ifindex, no speed, carrier while administratively up.
func (p *DummyPort) LinkInfo() LinkInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	return LinkInfo{MTU: p.mtu, MinMTU: dummyMinMTU, MaxMTU: dummyMaxMTU, MAC: slices.Clone(p.mac),
		AdminUp: p.up, OperUp: p.up}
}

// SetAddr4 sets the port's IPv4 address (netdev-dummy/ip4addr); ARP
// requests for it written to the port are answered.
func (p *DummyPort) SetAddr4(a netip.Prefix) {
	p.mu.Lock()
	p.addr4 = a
	p.mu.Unlock()
}

// SetAddr6 sets the port's IPv6 address (netdev-dummy/ip6addr).
func (p *DummyPort) SetAddr6(a netip.Prefix) {
	p.mu.Lock()
	p.addr6 = a
	p.mu.Unlock()
}

// Addrs returns the addresses SetAddr4 and SetAddr6 set (invalid if not).
func (p *DummyPort) Addrs() (v4, v6 netip.Prefix) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.addr4, p.addr6
}

// DummyReceive runs "netdev-dummy/receive NAME [--qid N] PACKET|FLOW
// [--len N]...", with OVS's error texts. Frames are queued in the order
// given; on an error the ones before it are queued already, as in OVS.
func DummyReceive(args []string) error {
	p := LookupDummy(args[0])
	if p == nil {
		return errors.New("no such dummy netdev")
	}
	k := 1
	if len(args) > k+1 && args[k] == "--qid" {
		// A dummy has one receive queue.
		if q, _ := strconv.Atoi(args[k+1]); q != 0 {
			return errors.New("bad rx queue id.")
		}
		k += 2
	}
	for i := k; i < len(args); i++ {
		if frame, ok := DummyFrameFromHex(args[i]); ok {
			p.Receive(frame)
			continue
		}
		size := 0
		flow := args[i]
		if i+1 < len(args) && args[i+1] == "--len" {
			v := ""
			if i+2 < len(args) {
				v = args[i+2]
			}
			n, err := parseDummyLen(v)
			if err != nil {
				return err
			}
			size = n
			i += 2
		}
		frame, err := ParseDummyFlow(flow, size)
		if err != nil {
			return err
		}
		p.Receive(frame)
	}
	return nil
}
