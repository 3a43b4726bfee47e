package bridge

import (
	"cmp"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/netdev/tunnel"
	"github.com/govs/govs/vswitchd/ofproto"
)

// Tunnel port types: no device of their own; the tunnels of one kind and
// UDP port share one datapath vport (OVS's vxlan_sys_4789), and the
// datapath's tnl_push/tnl_pop actions encapsulate and decapsulate.
const (
	TypeVXLAN  = "vxlan"
	TypeGeneve = "geneve"
	TypeGRE    = "gre"
)

type tunnelPort struct {
	noLive
	typ     string
	encap   tunnel.Kind
	dstPort uint16 // IANA's UDP port; 0 for GRE
}

func init() {
	registerPort(TypeVXLAN, tunnelPort{typ: TypeVXLAN, encap: tunnel.KindVXLAN, dstPort: 4789})
	registerPort(TypeGeneve, tunnelPort{typ: TypeGeneve, encap: tunnel.KindGeneve, dstPort: 6081})
	registerPort(TypeGRE, tunnelPort{typ: TypeGRE, encap: tunnel.KindGRE})
}

// vportRun is one running tunnel vport and the tunnel ports sharing it.
type vportRun struct {
	no      uint32
	dev     *tunnel.Vport
	dstPort uint16 // 0 for GRE
	refs    int
}

func (tunnelPort) kind() PortKind                      { return KindPatch }
func (tunnelPort) request(*Switch, *iface) OpenRequest { return OpenRequest{} }
func (tunnelPort) apply(*Switch, *iface, bool)         {}
func (tunnelPort) refresh(*Switch, *iface)             {}

func (d tunnelPort) netdevType(ifc *iface) string {
	var opts []string
	for _, k := range slices.Sorted(maps.Keys(ifc.spec.Options)) {
		opts = append(opts, k+"="+ifc.spec.Options[k])
	}
	if len(opts) == 0 {
		return d.typ
	}
	return d.typ + ": " + strings.Join(opts, ", ")
}

// parse reads a tunnel's options as OVS's set_tunnel_config
// (lib/netdev-vport.c): what it cannot use it warns about and ignores;
// a missing remote_ip or inconsistent addresses refuse the port.
func (d tunnelPort) parse(spec *IfaceSpec, _ parseEnv, problems *[]string) string {
	name := spec.Name
	c := &ofproto.TunnelConfig{Kind: d.encap, DstPort: d.dstPort}
	var srcV6, dstV6 *bool
	var refuse string
	gpe := false // options:exts has gpe (VXLAN-GPE)
	for _, k := range slices.Sorted(maps.Keys(spec.Options)) {
		v := spec.Options[k]
		switch k {
		case "remote_ip":
			c.RemoteFlow, c.Remote, dstV6 = d.tunnelIP(name, k, v, problems)
		case "local_ip":
			c.LocalFlow, c.Local, srcV6 = d.tunnelIP(name, k, v, problems)
		case "tos":
			if v == "inherit" {
				c.TOSInherit = true
				break
			}
			t, err := strconv.ParseInt(v, 0, 32)
			if err != nil || t != t&0xfc {
				*problems = append(*problems, fmt.Sprintf("%s: invalid TOS %s", name, v))
				break
			}
			c.TOS = uint8(t)
		case "ttl":
			// atoi's value, as OVS's: 0 (or junk) is the default 64.
			t, _ := strconv.Atoi(v)
			c.TTL, c.TTLInherit = uint8(t), v == "inherit"

		case "csum":
			// Other values leave the default, as OVS's.
			if v == "true" || v == "false" {
				c.Csum = v == "true"
			}
		case "dst_port":
			if d.encap == tunnel.KindGRE {
				*problems = append(*problems, fmt.Sprintf("%s: unknown %s argument '%s'", name, d.typ, k))
				break
			}
			p, _ := strconv.Atoi(v)
			c.DstPort = uint16(p)
		case "df_default":
			if v == "true" || v == "false" {
				c.NoDF = v == "false"
			}
		case "key", "in_key", "out_key":
			// Keys below.
		case "exts":
			if d.encap != tunnel.KindVXLAN {
				*problems = append(*problems, fmt.Sprintf("%s: unknown %s argument '%s'", name, d.typ, k))
				break
			}
			c.GBP, gpe, refuse = vxlanExts(name, v, problems)
		case "egress_pkt_mark":
			// OVS's strtoul(value, NULL, 10): the leading decimal
			// digits, 0 if none; set whatever the value.
			c.EgressPktMark, c.SetEgressPktMark = leadingDecimal(v), true
		case "packet_type":
			// Read after the loop, as OVS's.
		default:
			*problems = append(*problems, fmt.Sprintf("%s: unknown %s argument '%s'", name, d.typ, k))
		}
	}
	if pt, ok := spec.Options["packet_type"]; ok {
		if r := d.packetType(name, pt, gpe, c); r != "" {
			return r
		}
	}
	if refuse != "" {
		return refuse
	}
	if !c.Remote.IsValid() && !c.RemoteFlow {
		return fmt.Sprintf("%s: %s type requires valid 'remote_ip' argument", name, d.typ)
	}
	if c.LocalFlow && !c.RemoteFlow {
		return fmt.Sprintf("%s: %s type requires 'remote_ip=flow' with 'local_ip=flow'", name, d.typ)
	}
	if srcV6 != nil && dstV6 != nil && *srcV6 != *dstV6 {
		return fmt.Sprintf("%s: 'remote_ip' and 'local_ip' has to be of the same address family", name)
	}
	c.InKey, c.InKeyPresent, c.InKeyFlow = tunnelKey(spec.Options, "in_key")
	c.OutKey, c.OutKeyPresent, c.OutKeyFlow = tunnelKey(spec.Options, "out_key")
	c.UDPGSO = spec.TunnelUDPGSO.Value && d.encap != tunnel.KindGRE
	spec.Tunnel = c
	return ""
}

// packetType reads options:packet_type as OVS's set_tunnel_config: the
// layers a tunnel carries are L2 and L3 for GRE and VXLAN-GPE, L2 only for
// plain VXLAN and Geneve; legacy_l2 or legacy_l3 on a tunnel that cannot
// carry it, or an unknown value, refuse the port with OVS's text. ptap (a
// packet type aware port) needs OpenFlow's packet_type matching and the
// encap/decap actions, which govs does not have: the port is refused.
// legacy_l3 on GRE sets c.L3. It returns why the port is refused.
func (d tunnelPort) packetType(name, pt string, gpe bool, c *ofproto.TunnelConfig) string {
	l3 := d.encap == tunnel.KindGRE || gpe
	fullType := d.typ
	if d.encap == tunnel.KindVXLAN {
		// OVS 3.1's text (some OVS sources lack the closing
		// parenthesis; Debian's 3.1 binary has it).
		fullType = "VXLAN (without GPE)"
		if gpe {
			fullType = "VXLAN-GPE"
		}
	}
	switch pt {
	case "legacy_l2":
		// Every tunnel govs has carries L2 (it is the default).
	case "legacy_l3":
		if !l3 {
			return fmt.Sprintf("%s: legacy_l3 configured on %s tunnel that cannot carry L3 traffic", name, fullType)
		}
		// VXLAN-GPE is refused after, for exts=gpe.
		c.L3 = d.encap == tunnel.KindGRE
	case "ptap":
		return fmt.Sprintf("%s: options:packet_type=ptap is not supported by govs", name)
	default:
		return fmt.Sprintf("%s: unknown packet_type '%s'", name, pt)
	}
	return ""
}

// vxlanExts parses a VXLAN tunnel's options:exts, a comma list of
// extensions, as OVS's set_tunnel_config: "gbp" (Group Based Policy),
// "gpe", and warnings for others. It reports whether gbp is on, and why
// the port is refused: VXLAN-GPE (another header and next protocols, which
// govs does not speak) would otherwise leave as plain VXLAN.
func vxlanExts(name, v string, problems *[]string) (gbp, gpe bool, refuse string) {
	for _, ext := range strings.Split(v, ",") {
		switch ext {
		case "":
			// strtok_r skips empty tokens.
		case "gbp":
			gbp = true
		case "gpe":
			gpe = true
			refuse = fmt.Sprintf("%s: options:exts=gpe (VXLAN-GPE) is not supported by govs", name)
		default:
			*problems = append(*problems, fmt.Sprintf("%s: unknown extension '%s'", name, ext))
		}
	}
	return gbp, gpe, refuse
}

// tunnelIP parses remote_ip or local_ip (key): "flow", or an address,
// with whether it is IPv6 (nil when there is none).
func (d tunnelPort) tunnelIP(name, key, v string, problems *[]string) (flow bool, a netip.Addr, v6 *bool) {
	if v == "flow" {
		return true, a, nil
	}
	a, err := netip.ParseAddr(v)
	if err != nil || a.Zone() != "" {
		*problems = append(*problems, fmt.Sprintf("%s: bad %s '%s'", name, d.typ, key))
		return false, netip.Addr{}, nil
	}
	if key == "remote_ip" && a.IsMulticast() {
		*problems = append(*problems, fmt.Sprintf("%s: multicast remote_ip=%s not allowed", name, v))
		return false, netip.Addr{}, nil
	}
	b := !a.Is4()
	return false, a, &b
}

// tunnelKey is OVS's parse_key: in_key or out_key, else key; "flow", or a
// number as strtoull reads it.
func tunnelKey(opts map[string]string, name string) (key uint64, present, flow bool) {
	v, ok := opts[name]
	if !ok {
		v, ok = opts["key"]
	}
	if !ok {
		return 0, false, false
	}
	if v == "flow" {
		return 0, true, true
	}
	k, _ := strconv.ParseUint(v, 0, 64)
	return k, true, false
}

// attach adds ifc to the vport of its kind and UDP port, creating it.
func (d tunnelPort) attach(s *Switch, ifc *iface) bool {
	c := ifc.spec.Tunnel
	name := tunnel.VportName(d.encap, c.DstPort)
	vp := s.vports[name]
	if vp != nil && vp.dev.GBP() != c.GBP {
		// One vport per UDP port decapsulates for all its tunnels: it
		// takes the G bit or does not (OVS's
		// is_concomitant_vxlan_tunnel_present, EEXIST).
		s.fail(ifc, StateFailed, fmt.Sprintf("%s: VXLAN-GBP, and non-VXLAN-GBP tunnels can't be configured on the same dst_port", ifc.spec.Name))
		return false
	}
	if vp == nil {
		dev := tunnel.NewVport(name, d.encap)
		if c.GBP {
			dev = tunnel.NewGBPVport(name)
		}
		// A UDP tunnel's vport is numbered after its port, as OVS's
		// ofproto-dpif port_add numbers it.
		no := uint32(c.DstPort)
		if no == 0 || s.dpPorts[no] {
			no = s.allocDPPort()
		}
		if err := s.dp.AddPort(no, dev); err != nil {
			s.fail(ifc, StateFailed, fmt.Sprintf("could not add network device %s to ofproto (%s)", ifc.spec.Name, Strerror(err)))
			return false
		}
		s.count("dpif_port_add")
		s.dpPorts[no] = true
		vp = &vportRun{no: no, dev: dev, dstPort: c.DstPort}
		if s.vports == nil {
			s.vports = map[string]*vportRun{}
		}
		s.vports[name] = vp
	}
	vp.refs++
	ifc.vport, ifc.dpPort, ifc.router = name, vp.no, s.router
	return true
}

// releaseVport takes ifc out of its vport, deleting the vport when no
// tunnel uses it any more. Caller holds mu.
func (s *Switch) releaseVport(ifc *iface) {
	vp := s.vports[ifc.vport]
	ifc.vport, ifc.dpPort = "", 0
	if vp == nil {
		return
	}
	if vp.refs--; vp.refs > 0 {
		return
	}
	delete(s.vports, vp.dev.Name())
	if err := s.dp.DelPort(vp.no); err != nil {
		s.log.Warnf("%s: deleting datapath port %d: %v", vp.dev.Name(), vp.no, err)
	}
	s.count("dpif_port_del")
	delete(s.dpPorts, vp.no)
	vp.dev.Close()
}

// status writes what OVS's tunnel_get_status does: the egress interface
// the route to remote_ip leaves by, and its carrier.
func (d tunnelPort) status(ifc *iface, st *IfaceStatus) {
	st.Link = &LinkStatus{AdminUp: true, LinkUp: true}
	c := ifc.spec.Tunnel
	if c == nil || c.RemoteFlow || ifc.router == nil {
		return
	}
	rt, ok := ifc.router.Lookup(0, c.Remote)
	if !ok || rt.Local {
		return
	}
	st.Status = map[string]string{"tunnel_egress_iface": rt.Dev}
	carrier := "down"
	if ifi, err := net.InterfaceByName(rt.Dev); err == nil && ifi.Flags&net.FlagRunning != 0 {
		carrier = "up"
	}
	st.Status["tunnel_egress_iface_carrier"] = carrier
}

// TunnelPortsShow is tnl/ports/show: the vports listening for tunnels and
// how many tunnel ports use each (OVS's tnl_port_show, its lines sorted),
// or with -v (in any case) the packets each decapsulates
// (tunnelPortsShowV). Any other argument is ignored, as by OVS.
func (s *Switch) TunnelPortsShow(args []string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	b.WriteString("Listening ports:\n")
	if len(args) > 0 && strings.EqualFold(args[0], "-v") {
		s.tunnelPortsShowV(&b)
		return b.String(), nil
	}
	for _, name := range slices.Sorted(maps.Keys(s.vports)) {
		vp := s.vports[name]
		fmt.Fprintf(&b, "%s (%d) ref_cnt=%d\n", name, vp.no, vp.refs)
	}
	return b.String(), nil
}

// tunnelPortsShowV writes OVS's tnl_port_show_v lines, "vport (dp port) :
// match", one per vport and local route: the match ofproto's terminates
// applies to a packet output to a bridge's local port
// (ofproto.TerminateMatch), from the same route table. Lines go by vport
// name, then address, IPv4 first (OVS's go in its classifier's order).
// Caller holds mu.
func (s *Switch) tunnelPortsShowV(b *strings.Builder) {
	if s.router == nil {
		return
	}
	var locals []netip.Prefix
	for _, rt := range s.router.Routes() {
		if rt.Local {
			locals = append(locals, netip.PrefixFrom(rt.Dst, rt.Plen))
		}
	}
	slices.SortFunc(locals, func(a, b netip.Prefix) int {
		// Addresses are in 16-byte form: ::1 sorts before IPv4's.
		v6 := func(p netip.Prefix) int {
			if p.Addr().Is4In6() {
				return 0
			}
			return 1
		}
		return cmp.Or(cmp.Compare(v6(a), v6(b)), a.Addr().Compare(b.Addr()), cmp.Compare(a.Bits(), b.Bits()))
	})
	for _, name := range slices.Sorted(maps.Keys(s.vports)) {
		vp := s.vports[name]
		for _, p := range locals {
			k, m := ofproto.TerminateMatch(vp.dev.Kind(), vp.dstPort, p)
			fmt.Fprintf(b, "%s (%d) : %s\n", name, vp.no, flow.FormatODPPacket(&k, &m))
		}
	}
}

// leadingDecimal is C's strtoul(s, NULL, 10) as a uint32 (OVS stores the
// unsigned long in a uint32_t): the decimal digits after the blanks and
// sign (cDecimal), 0 if there are none, negated for a minus, then
// truncated; ULONG_MAX (all ones) on overflow, as strtoul.
func leadingDecimal(s string) uint32 {
	neg, digits := cDecimal(s)
	var n uint64
	for _, c := range digits {
		d := uint64(c - '0')
		if n > (^uint64(0)-d)/10 {
			return ^uint32(0) // ULONG_MAX, whatever the sign
		}
		n = n*10 + d
	}
	if neg {
		n = -n
	}
	return uint32(n)
}
