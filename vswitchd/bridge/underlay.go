package bridge

// A tunnel's underlay port receives what the far switch sends: its
// segments, not super-frames, since a TSO super-frame is cut before it is
// encapsulated (an AF_PACKET socket takes no UDP-tunnel GSO). A system
// port's receive ring counts frames, 240 of them whatever their size (see
// netdev's ring geometry), so a few super-frames' worth of 1500-byte
// segments fills it: iperf3 TCP between VIFs over Geneve lost ~20% of its
// segments there (rx_dropped on the underlay port, 21 363 of 111 659 in
// 4 s) and ran at 0.3-0.4 Gbit/s. A 4 MiB socket buffer holds ~1 800 such
// frames: no drops, 1 retransmit, 0.9-1.0 Gbit/s on the same machine.

// underlaySockBuf is the socket buffer (userspace-sock-buf-size's units)
// a system port runs with while its bridge is the egress of a tunnel's
// route and no userspace-sock-buf-size applies to it.
const underlaySockBuf = 4 << 20

// syncUnderlays marks the system ports of the bridges that tunnels leave
// by as underlay ports and moves each whose mark changed to its new
// socket buffer. Called after a reconfiguration and on every Refresh,
// since routes change without one. Caller holds mu.
func (s *Switch) syncUnderlays() {
	var egress map[string]bool
	for _, t := range s.ifaces {
		c := t.spec.Tunnel
		if c == nil || c.RemoteFlow || t.router == nil || t.state != StateAttached {
			continue
		}
		if rt, ok := t.router.Lookup(0, c.Remote); ok && !rt.Local {
			if egress == nil {
				egress = map[string]bool{}
			}
			egress[rt.Dev] = true
		}
	}
	for _, ifc := range s.ifaces {
		k, ok := ifc.driver().(kernelPort)
		if !ok || k.typ != TypeSystem || ifc.local {
			continue
		}
		u := egress[ifc.bridge]
		if u == ifc.underlay {
			continue
		}
		ifc.underlay = u
		if ifc.state == StateAttached && ifc.dev != nil {
			s.applySockBuf(ifc)
		}
	}
}
