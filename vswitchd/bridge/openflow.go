package bridge

import (
	"path/filepath"
	"slices"
	"time"

	"github.com/govs/govs/netdev"
	"github.com/govs/govs/vswitchd/ofproto/connmgr"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// ServeOpenFlow makes every bridge, from the next Apply on, serve OpenFlow
// on <rundir>/<bridge>.mgmt as OVS does, logging to log.
func (s *Switch) ServeOpenFlow(rundir string, log connmgr.Logger) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ofRundir, s.ofLog = rundir, log
}

// startOpenFlow opens rb's management socket. Caller holds mu.
func (s *Switch) startOpenFlow(rb *runBridge) {
	if s.ofRundir == "" {
		return
	}
	path := filepath.Join(s.ofRundir, rb.name+".mgmt")
	m, err := connmgr.Listen(rb.name, path, ofSource{s, rb.name}, s.ofLog)
	if err != nil {
		s.log.Errorf("bridge %s: could not listen on %s: %v", rb.name, path, err)
		return
	}
	rb.mgmt = m
	rb.of.SetAsync(m)
}

// stopOpenFlow closes rb's management socket and connections. Caller
// holds mu, so it does not wait for the connections' goroutines (they may
// be waiting for mu); they end without it.
func (s *Switch) stopOpenFlow(rb *runBridge) {
	if rb != nil && rb.mgmt != nil {
		rb.of.SetAsync(nil)
		rb.mgmt.Close()
		rb.mgmt = nil
	}
}

// StopOpenFlow closes every bridge's management socket and connections,
// for the daemon's exit: OVS removes its sockets whether or not it
// removes its bridges.
func (s *Switch) StopOpenFlow() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rb := range s.bridges {
		s.stopOpenFlow(rb)
	}
	s.ofRundir = ""
}

// ofSource reports one bridge to its OpenFlow connections.
type ofSource struct {
	s    *Switch
	name string
}

// bridge returns the running bridge, nil once it is gone. Caller holds mu.
func (o ofSource) bridge() *runBridge { return o.s.bridges[o.name] }

func (o ofSource) DatapathID() uint64 {
	o.s.mu.Lock()
	defer o.s.mu.Unlock()
	if rb := o.bridge(); rb != nil {
		return rb.dpid
	}
	return 0
}

// ports returns the bridge's running interfaces by OpenFlow number, the
// local port last. Caller holds mu.
func (o ofSource) ports() []*iface {
	var ifcs []*iface
	for _, ifc := range o.s.ifaces {
		if ifc.bridge == o.name && ifc.state == StateAttached && ifc.ofport > 0 {
			ifcs = append(ifcs, ifc)
		}
	}
	slices.SortFunc(ifcs, func(a, b *iface) int { return a.ofport - b.ofport })
	return ifcs
}

func ofPortNo(ifc *iface) uint32 {
	if ifc.local {
		return ofp.PortLocal
	}
	return uint32(ifc.ofport)
}

func (o ofSource) Ports() []ofp.Port {
	o.s.mu.Lock()
	defer o.s.mu.Unlock()
	var ports []ofp.Port
	for _, ifc := range o.ports() {
		p := ofp.Port{No: ofPortNo(ifc), Name: ifc.spec.Name}
		var link *netdev.LinkInfo
		switch ifc.kind() {
		case KindKernel:
			if l, err := o.s.devs.Link(ifc.spec.Name); err == nil {
				link = &l
			} else {
				link = ifc.link
			}
		case KindPatch:
			link = &netdev.LinkInfo{AdminUp: true, OperUp: true}
		case KindVhost:
			link = &netdev.LinkInfo{AdminUp: true, OperUp: ifc.vhostUp}
		}
		if link == nil {
			link = &netdev.LinkInfo{}
		}
		copy(p.HWAddr[:], link.MAC)
		if !link.AdminUp {
			p.Config |= ofp.PortConfigDown
		}
		if link.OperUp {
			p.State |= ofp.PortStateLive
		} else {
			p.State |= ofp.PortStateDown
		}
		p.Curr, p.CurrSpeed = portFeatures(link)
		ports = append(ports, p)
	}
	return ports
}

// portFeatures returns OpenFlow's current features and speed (kbit/s) for
// a link, as OVS reports them for its netdev ports: a known speed as its
// feature bit, an unknown one (tap devices) as 10 Gbit/s full duplex, and
// always copper.
func portFeatures(l *netdev.LinkInfo) (features, kbps uint32) {
	half := l.Duplex == "half"
	pick := func(hd, fd uint32) uint32 {
		if half {
			return hd
		}
		return fd
	}
	switch l.Speed {
	case 10:
		features = pick(ofp.Feature10MBHD, ofp.Feature10MBFD)
	case 100:
		features = pick(ofp.Feature100MBHD, ofp.Feature100MBFD)
	case 1000:
		features = pick(ofp.Feature1GBHD, ofp.Feature1GBFD)
	case 0, 10000:
		features = ofp.Feature10GBFD
	case 40000:
		features = ofp.Feature40GBFD
	case 100000:
		features = ofp.Feature100GBFD
	case 1000000:
		features = ofp.Feature1TBFD
	default:
		features = ofp.FeatureOther
	}
	speed := l.Speed
	if speed == 0 {
		speed = 10000
	}
	return features | ofp.FeatureCopper, speed * 1000
}

func (o ofSource) PortStats() []ofp.PortStats {
	o.s.mu.Lock()
	defer o.s.mu.Unlock()
	now := time.Now()
	var stats []ofp.PortStats
	for _, ifc := range o.ports() {
		// Counters govs does not keep are reported unknown, as are all
		// of a patch port's.
		st := ofp.PortStats{No: ofPortNo(ifc), Duration: now.Sub(ifc.attachedAt).Truncate(time.Millisecond),
			RxFrameErr: ofp.Unknown, RxOverErr: ofp.Unknown, RxCRCErr: ofp.Unknown, Collision: ofp.Unknown}
		if ifc.dev == nil {
			st.RxPackets, st.TxPackets, st.RxBytes, st.TxBytes = ofp.Unknown, ofp.Unknown, ofp.Unknown, ofp.Unknown
			st.RxDropped, st.TxDropped, st.RxErrors, st.TxErrors = ofp.Unknown, ofp.Unknown, ofp.Unknown, ofp.Unknown
		} else {
			c := ifc.dev.Stats()
			st.RxPackets, st.TxPackets, st.RxBytes, st.TxBytes = c.RxPackets, c.TxPackets, c.RxBytes, c.TxBytes
			st.RxDropped, st.TxDropped, st.RxErrors, st.TxErrors = c.RxDropped, c.TxDropped, c.RxErrors, c.TxErrors
		}
		stats = append(stats, st)
	}
	return stats
}

// of returns the bridge's OpenFlow switch, nil once it is gone.
func (o ofSource) of() OFBridge {
	o.s.mu.Lock()
	defer o.s.mu.Unlock()
	if rb := o.bridge(); rb != nil {
		return rb.of
	}
	return nil
}

// Flows reports the flows of every table.
func (o ofSource) Flows() []ofp.FlowStats {
	if of := o.of(); of != nil {
		return of.Flows()
	}
	return nil
}

// FlowMod changes the bridge's flow tables.
func (o ofSource) FlowMod(fm *ofp.FlowMod) *ofp.Error {
	of := o.of()
	if of == nil {
		return &ofp.Error{Errno: ofp.EPerm, Detail: "bridge is gone"}
	}
	return of.FlowMod(fm)
}

// Barrier waits for earlier flow changes to be in effect.
func (o ofSource) Barrier() {
	if of := o.of(); of != nil {
		of.Barrier()
	}
}
