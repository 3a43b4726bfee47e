package tunnel

import (
	"sync"
	"sync/atomic"

	"github.com/govs/govs/datapath/packet"
	"github.com/govs/govs/netdev"
)

// Vport is the datapath port of the tunnels of one kind and UDP port
// (OVS's "vxlan_sys_4789", "genev_sys_6081", "gre_sys"): it has no device.
// Packets reach it decapsulated by the tnl_pop action of an underlay
// bridge's flow and leave it through tnl_push, so Read only waits for
// Close and Write counts what a flow sent to it without encapsulating
// (OVS does not output to a native tunnel's vport either).
type Vport struct {
	name   string
	kind   Kind
	gbp    bool
	closed chan struct{}
	once   sync.Once

	txDropped atomic.Uint64
}

// NewVport returns the vport called name for tunnels of kind k.
func NewVport(name string, k Kind) *Vport {
	return &Vport{name: name, kind: k, closed: make(chan struct{})}
}

// NewGBPVport returns the VXLAN vport called name whose tunnels take the
// Group Based Policy extension (options:exts=gbp): a packet with the G bit
// is decapsulated with its policy ID and flags, where another VXLAN vport
// drops it as malformed (Linux's vxlan device without "gbp" does too).
func NewGBPVport(name string) *Vport {
	v := NewVport(name, KindVXLAN)
	v.gbp = true
	return v
}

// Kind is the encapsulation of the vport's tunnels.
func (v *Vport) Kind() Kind { return v.kind }

// GBP reports whether the vport takes VXLAN's Group Based Policy extension.
func (v *Vport) GBP() bool { return v.gbp }

// VportName is the datapath port name OVS gives the tunnels of kind k on
// UDP port dstPort.
func VportName(k Kind, dstPort uint16) string {
	switch k {
	case KindVXLAN:
		return "vxlan_sys_" + itoa(dstPort)
	case KindGeneve:
		return "genev_sys_" + itoa(dstPort)
	}
	return "gre_sys"
}

func itoa(v uint16) string {
	var b [5]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(b[i:])
		}
	}
}

func (v *Vport) Name() string { return v.name }

func (v *Vport) Read([]*packet.Packet) (int, error) {
	<-v.closed
	return 0, netdev.ErrClosed
}

func (v *Vport) Write(pkts []*packet.Packet) (int, error) {
	v.txDropped.Add(uint64(len(pkts)))
	return 0, nil
}

func (v *Vport) Offloads() netdev.Offloads { return netdev.Offloads{} }

func (v *Vport) Stats() netdev.Stats { return netdev.Stats{TxDropped: v.txDropped.Load()} }

func (v *Vport) Close() error {
	v.once.Do(func() { close(v.closed) })
	return nil
}

// WaitRead implements netdev.ReadWaiter, so that the vport holds no
// receive buffers while it waits for Close.
func (v *Vport) WaitRead(idle func()) error {
	idle()
	<-v.closed
	return netdev.ErrClosed
}
