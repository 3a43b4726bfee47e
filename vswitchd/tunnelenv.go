package main

import (
	"net"
	"net/netip"
	"slices"

	"github.com/govs/govs/netdev/tunnel"
)

// tunnelEnv is ofproto.TunnelEnv on the daemon's route table and
// neighbour cache.
type tunnelEnv struct {
	routes *tunnel.Router
	neigh  *tunnel.NeighCache
}

func (e tunnelEnv) Route(dst netip.Addr) (string, netip.Addr, netip.Addr, bool) {
	rt, ok := e.routes.Lookup(0, dst)
	if !ok || rt.Local {
		return "", netip.Addr{}, netip.Addr{}, false
	}
	nh := dst
	if rt.GW.IsValid() && !rt.GW.IsUnspecified() {
		nh = rt.GW.Unmap()
	}
	return rt.Dev, rt.Src.Unmap(), nh, true
}

func (e tunnelEnv) IsLocal(a netip.Addr) bool {
	rt, ok := e.routes.Lookup(0, a)
	return ok && rt.Local
}

func (e tunnelEnv) Neigh(bridge string, ip netip.Addr) (net.HardwareAddr, bool) {
	return e.neigh.Lookup(bridge, ip)
}

func (e tunnelEnv) LearnNeigh(bridge string, ip netip.Addr, mac net.HardwareAddr) bool {
	old, ok := e.neigh.Lookup(bridge, ip)
	e.neigh.Set(bridge, ip, mac)
	return !ok || !slices.Equal(old, mac)
}

func (e tunnelEnv) DevMAC(dev string) (net.HardwareAddr, bool) {
	ifi, err := net.InterfaceByName(dev)
	if err != nil || len(ifi.HardwareAddr) != 6 {
		return nil, false
	}
	return ifi.HardwareAddr, true
}

// syncDatapathCoverage copies the datapath's tunnel drop counters, and
// the tunnel packets dropped for ECN, into coverage/show under OVS's names,
// and the UDP GSO frames of tunnels under govs' own.
func (v *switchd) syncDatapathCoverage() {
	if v.plane == nil || v.plane.datapath == nil {
		return
	}
	pop, push := v.plane.datapath.TunnelErrors()
	if pop > 0 {
		v.cov.Raise("datapath_drop_tunnel_pop_error", pop)
	}
	if push > 0 {
		v.cov.Raise("datapath_drop_tunnel_push_error", push)
	}
	// govs' own: super-frames sent and received whole through a tunnel
	// with other_config:tunnel-udp-gso (datapath/tnlgso.go).
	if tx, _, rx := v.plane.datapath.TunnelGSO(); tx > 0 || rx > 0 {
		v.cov.Raise("tunnel_udp_gso_sent", tx)
		v.cov.Raise("tunnel_udp_gso_received", rx)
	}
	if v.plane.ofproto != nil {
		if n := v.plane.ofproto.CongestionDrops(); n > 0 {
			v.cov.Raise("drop_action_congestion", n)
		}
	}
}
