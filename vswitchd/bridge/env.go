package bridge

import (
	"net"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/netdev"
	"github.com/govs/govs/vswitchd/ofproto"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// Datapath is the one datapath every bridge's ports are attached to (OVS's
// netdev@ovs-netdev). Port numbers are chosen by the caller.
type Datapath interface {
	AddPort(no uint32, port netdev.Port) error
	// DelPort detaches the port; once it returns no cached flow refers to
	// it any more, so its number can be reused at once.
	DelPort(no uint32) error
	// Stats returns the lookup counters dpif/show prints.
	Stats() datapath.Stats
}

// Backer creates the OpenFlow side of each bridge.
type Backer interface {
	AddBridge(name string) OFBridge
	DelBridge(name string)
}

// OFBridge is one bridge's OpenFlow switch (ofproto).
type OFBridge interface {
	// Reconfigure replaces the bridge's port table and settings. The
	// switch calls it only when the configuration changed.
	Reconfigure(ofproto.BridgeConfig)
	FDBShow() string
	FDBFlush()
	FDBStatsShow() string
	FDBStatsClear()
	// FDBAdd and FDBDel add and remove static MAC table entries.
	FDBAdd(iface string, vlan uint16, mac flow.MAC) (string, error)
	FDBDel(vlan uint16, mac flow.MAC) error
	// The OpenFlow tables: see ofproto.Bridge.
	FlowMod(fm *ofp.FlowMod) *ofp.Error
	Flows() []ofp.FlowStats
	EachFlow(fn func(f *ofp.FlowStats))
	Barrier()
	SetAsync(s ofproto.AsyncSink)
	// SetFailOpen turns OVS's fail-open on or off: while on, every
	// packet takes the NORMAL pipeline whatever the tables hold.
	SetFailOpen(open bool)
	// PacketOut executes an OFPT_PACKET_OUT.
	PacketOut(po *ofp.PacketOut) *ofp.Error
	// Resume executes an NXT_RESUME.
	Resume(r *ofp.Resume) *ofp.Error
}

// Devices opens the ports' devices and reads the kernel interfaces' state.
// Link, SetMTU and SetMAC apply to KindKernel interfaces only.
type Devices interface {
	// Open opens req.Name as its type says: attaches to the existing
	// kernel interface (TypeSystem) or creates a tap device (TypeInternal,
	// TypeTap), as req.Config says; or opens a vhost-user port on
	// req.SocketPath with req.Vhost (TypeVhostUser serves the socket,
	// TypeVhostUserClient connects to it), which returns a VhostPort. A
	// missing system interface fails with an error wrapping
	// syscall.ENODEV.
	Open(req OpenRequest) (netdev.Port, error)
	// SockBufDefaults returns net.core.rmem_default and wmem_default, the
	// buffer sizes of a fresh socket.
	SockBufDefaults() (rcv, snd int, err error)
	// Link reports the interface's kernel state; a missing interface fails
	// with an error wrapping syscall.ENODEV.
	Link(name string) (netdev.LinkInfo, error)
	SetMTU(name string, mtu int) error
	SetMAC(name string, mac net.HardwareAddr) error
}

// Logger is the vlog module logger the switch writes to.
type Logger interface {
	Errorf(format string, args ...any)
	Warnf(format string, args ...any)
	Infof(format string, args ...any)
	Debugf(format string, args ...any)
}
