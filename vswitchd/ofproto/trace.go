package ofproto

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/netdev"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// Trace translates a flow given in OpenFlow match syntax as if it arrived
// on bridge bridgeName, without side effects (nothing is learned), and
// returns the report `ovs-appctl ofproto/trace BRIDGE FLOW` prints in OVS
// 3.1 for a bridge whose only flow is "priority=0 actions=NORMAL":
//
//	Flow: in_port=1,vlan_tci=0x0000,dl_src=..,dl_dst=..,dl_type=0x0000
//
//	bridge("br0")
//	-------------
//	 0. priority 0
//	    NORMAL
//	     -> forwarding to learned port
//
//	Final flow: unchanged
//	Megaflow: recirc_id=0,eth,in_port=1,dl_src=..,dl_dst=..,dl_type=0x0000
//	Datapath actions: 2
//
// A patch port's peer bridge follows as another bridge("...") section.
// The megaflow is the one a miss of such a packet installs.
func (b *Backer) Trace(bridgeName, spec string) (string, error) {
	return b.trace(bridgeName, spec, true, false)
}

// trace is Trace, checking the flow's fields' prerequisites (an OpenFlow
// flow) or not (a datapath flow's match).
func (b *Backer) trace(bridgeName, spec string, prereqs, names bool, ctNext ...uint8) (string, error) {
	br := b.Bridge(bridgeName)
	if br == nil {
		return "", fmt.Errorf("%s: unknown bridge", bridgeName)
	}
	s := br.snap.Load()
	idx := b.idx.Load()
	tlv := br.tlv.Load()
	var md flowMeta
	k, in, ofport, err := parseFlowMeta(spec, tlv, func(v string) (*port, int, error) {
		if v == "LOCAL" {
			v = strconv.Itoa(LocalOFPort)
		}
		if n, err := strconv.ParseUint(v, 0, 16); err == nil {
			for _, p := range s.ports {
				if p.ofport == int(n) {
					return p, p.ofport, nil
				}
			}
			return nil, int(n), nil
		}
		if p := s.byName[v]; p != nil {
			return p, p.ofport, nil
		}
		return nil, 0, errors.New("unknown port")
	}, prereqs, &md)
	if err != nil {
		return "", err
	}
	inText := ofportString(ofport)
	var pn ofp.PortNames
	if names {
		// --names: ports by name (OVS's port map), the datapath's too.
		pn = ofp.PortNames{}
		for _, p := range s.ports {
			pn[uint32(p.ofport)] = p.name
		}
		inText = pn.Port(uint32(ofport))
		if ofport == LocalOFPort {
			inText = "LOCAL"
		}
	}

	var out strings.Builder
	fmt.Fprintf(&out, "Flow: %s\n", formatMatchOF(&k, ptr(packetMask(&k)), inText, false, true, traceTunMD(tlv, &k, nil),
		u32Flow("pkt_mark", md.pktMark), u32Flow("dp_hash", md.dpHash), "", ""))
	u := datapath.Upcall{Key: k}
	x := b.newXlate(idx, &u, modeTrace, 0)
	x.inMeta, x.pktMark, x.names = md, md.pktMark, names
	x.trace, x.tt = &out, newTraceTree()
	x.tunMDWC = &ofp.Flow{}
	tnlWCInit(&k, &u.Mask)
	var failed string
	if k.RecircID != 0 {
		// OVS's xlate_actions thaws the state frozen under the ID, if
		// any, before it looks at the input port.
		if st, ok := b.recircs.lookup(k.RecircID); ok {
			x.resume(st, true)
		} else {
			x.tt.open(traceBridge, fmt.Sprintf("bridge(\"%s\")", br.name))
			x.tt.add(traceError, fmt.Sprintf("Recirculation context not found for ID %x <<<<", k.RecircID))
			failed = "Translation failed (No recirculation context), packet is dropped.\n"
		}
	} else if in == nil {
		x.tt.open(traceBridge, fmt.Sprintf("bridge(\"%s\")", br.name))
		x.tt.open(traceTable, " 0. priority 0")
		x.tt.add(traceAction, "NORMAL")
		// OVS's xlate_normal consults the addresses before it finds the
		// input port missing.
		u.Mask.EthSrc = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
		u.Mask.EthDst = u.Mask.EthSrc
		x.report(">>>>", "received packet on unknown port %d", ofport)
		x.report(">>", "no input bundle, dropping")
	} else {
		x.pipeline(in)
	}
	x.finishPause()
	x.tt.render(&out)
	if !k.HasTunnel() {
		clearTunnelMask(&u.Mask)
	}
	// A packet's pkt_mark (0 unless the trace gives one) and dp_hash: the
	// megaflow shows them when a lookup or an action consulted them, as
	// OVS's (format_uint32_masked).
	mark, dpHash := u32Masked("pkt_mark", md.pktMark, x.traceMarkWC), u32Masked("dp_hash", md.dpHash, x.traceDpHashWC)
	// The megaflow's values are the packet's under its mask, as OVS's
	// (a minimatch).
	mk := k.Masked(&u.Mask)
	mk.RecircID = k.RecircID // a megaflow always matches it
	acts := x.acts.String()
	if names {
		acts = x.acts.Format(func(no uint32) string {
			if p := idx.byDPPort[no]; p != nil {
				return p.name
			}
			return strconv.FormatUint(uint64(no), 10)
		})
	}
	fmt.Fprintf(&out, "\nFinal flow: %s\nMegaflow: %s\nDatapath actions: %s\n", traceFinalFlow(x, tlv, pn),
		formatMatchOF(&mk, &u.Mask, inText, true, false, traceTunMD(tlv, &k, x.tunMDWC), mark, dpHash, "", ""), acts)
	out.WriteString(failed)
	b.traceRecircs(&out, idx, x.recircTrace, k.InPort, inText, ctNext)
	return out.String(), nil
}

// traceRecircs follows the recirculations of a trace, as OVS does with a
// conntrack that reports every connection new (its default without
// --ct-next).
func (b *Backer) traceRecircs(out *strings.Builder, idx *index, queue []traceRecirc, dpIn uint32, inText string, ctNext []uint8) {
	for n := 0; len(queue) > 0 && n < maxRecircTraces; n++ {
		r := queue[0]
		queue = queue[1:]
		rule := strings.Repeat("=", 79)
		state := uint8(ofp.CtTrk | ofp.CtNew)
		if len(ctNext) > 0 {
			// --ct-next: the states given, in turn.
			state, ctNext = ctNext[0], ctNext[1:]
			fmt.Fprintf(out, "\n%s\nrecirc(%#x) - resume conntrack with ct_state=%s\n%s\n\n", rule, r.id, ctStateString(state), rule)
		} else {
			fmt.Fprintf(out, "\n%s\nrecirc(%#x) - resume conntrack with default ct_state=trk|new (use --ct-next to customize)\n%s\n\n", rule, r.id, rule)
		}
		k := r.flow.Key
		k.InPort = dpIn
		k.CtState = state
		k.CtZone = r.zone
		m := packetMask(&k)
		m.CtState, m.CtZone = 0xff, 0xffff
		if k.CtMark != 0 {
			m.CtMark = ^uint32(0)
		}
		fmt.Fprintf(out, "Flow: %s\n", formatMatch(&k, &m, inText, false, true, ""))
		u := datapath.Upcall{Key: k}
		x := b.newXlate(idx, &u, modeTrace, 0)
		x.trace, x.tt = out, newTraceTree()
		x.resume(r.st, true)
		x.tt.render(out)
		fmt.Fprintf(out, "\nFinal flow: %s\nMegaflow: %s\nDatapath actions: %s\n", traceFinalFlow(x, r.st.br.tlv.Load(), nil),
			formatMatch(&k, &u.Mask, inText, true, false, ""), x.acts)
		queue = append(queue, x.recircTrace...)
	}
}

// tnlWCInit is OVS's tnl_wc_init for a trace: a packet from a tunnel
// matches the fields that tell tunnel ports apart, its outer TOS, and
// the ECN of an inner IP header when the outer one says CE.
func tnlWCInit(k *flow.Key, m *flow.Mask) {
	if k.HasTunnel() {
		tunnelWC(k, m)
	}
}

// clearTunnelMask removes the tunnel fields from the megaflow of a packet
// that did not come from a tunnel, as OVS's xlate_wc_finish does.
func clearTunnelMask(m *flow.Mask) {
	m.TunID, m.TunSrc, m.TunDst, m.TunFlags = 0, [16]byte{}, [16]byte{}, 0
	m.TunTpSrc, m.TunTpDst, m.TunTOS, m.TunTTL = 0, 0, 0, 0
	m.TunOptsLen, m.TunOpts = 0, [flow.TunOptsMax]byte{}
}

// traceTunMD formats the tun_metadata of a tunnel packet k: those wc
// consulted, or with a nil wc every present one (a packet's flow).
func traceTunMD(t *ofp.TLVTable, k *flow.Key, wc *ofp.Flow) string {
	if !k.HasTunnel() {
		return ""
	}
	f := ofp.Flow{TunTab: t}
	if ofp.TunMDFromOpts(&f, t, k.Options()) != nil {
		return ""
	}
	var b strings.Builder
	ofp.FormatTunMD(&b, &f, wc)
	return b.String()
}

// maxRecircTraces bounds the recirculations one trace follows (a ct
// loop would otherwise never end).
const maxRecircTraces = 16

func ptr[T any](v T) *T { return &v }

// TraceCommand is `ovs-appctl ofproto/trace BRIDGE FLOW` (see Trace), or
// `ofproto/trace [DP] ODP_FLOW` with a datapath flow key whose in_port
// names the bridge (see TraceODP). Packet options are not supported.
func (b *Backer) TraceCommand(args []string) (string, error) {
	// OVS's parse_flow_and_packet: options anywhere, then at most three
	// arguments. Of the options govs takes --names and --ct-next; it
	// has no packet to trace (-generate, --l7, a packet).
	var rest []string
	var ctNext []uint8
	names := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--names" || a == "-names":
			names = true
		case a == "--ct-next" || a == "--l7" || a == "--l7-len":
			if i+1 >= len(args) {
				return "", fmt.Errorf("Missing argument for option %s", a)
			}
			if a != "--ct-next" {
				return "", fmt.Errorf("ofproto/trace: %s: not supported", a)
			}
			i++
			st, err := parseCtNext(args[i])
			if err != nil {
				return "", err
			}
			ctNext = append(ctNext, st)
		case a == "-generate" || a == "--generate":
			return "", fmt.Errorf("ofproto/trace: %s: packet options are not supported", a)
		case strings.HasPrefix(a, "-"):
			return "", fmt.Errorf("%s: unknown option", a)
		case len(rest) >= 3:
			return "", errors.New("too many arguments")
		default:
			rest = append(rest, a)
		}
	}
	args = rest
	switch len(args) {
	case 0:
		return "", errors.New(`"ofproto/trace" command requires at least 1 arguments`)
	case 1:
		if strings.Contains(args[0], "(") {
			return b.TraceODP(args[0])
		}
		return "", fmt.Errorf("syntax error at %s (or the bridge name was omitted)", args[0])
	case 2:
		if b.Bridge(args[0]) == nil && dpNames[args[0]] && strings.Contains(args[1], "(") {
			return b.TraceODP(args[1])
		}
		return b.trace(args[0], args[1], true, names, ctNext...)
	}
	return "", fmt.Errorf("ofproto/trace: %s: packet options are not supported", args[2])
}

// parseCtNext parses --ct-next's states, flags separated by commas or
// spaces, and checks them, as OVS's parse_ct_state and
// validate_ct_state (their words).
func parseCtNext(arg string) (uint8, error) {
	var st uint8
	for _, f := range strings.FieldsFunc(arg, func(r rune) bool { return r == ',' || r == ' ' }) {
		i := slices.Index(ctStateNames[:], f)
		if i < 0 {
			return 0, fmt.Errorf("%s: unknown connection tracking state flag", f)
		}
		st |= 1 << i
	}
	var msg strings.Builder
	bad := func(why string) { fmt.Fprintf(&msg, "%s: invalid connection state: %s\n", ctStateString(st), why) }
	if st != 0 && st&ofp.CtTrk == 0 {
		bad(`If "trk" is unset, no other flags are set`)
	}
	if st&ofp.CtInv != 0 && st&^(ofp.CtTrk|ofp.CtInv) != 0 {
		bad(`when "inv" is set, only "trk" may also be set`)
	}
	if st&ofp.CtNew != 0 && st&ofp.CtEst != 0 {
		bad(`"new" and "est" are mutually exclusive`)
	}
	if st&ofp.CtNew != 0 && st&ofp.CtRpl != 0 {
		bad(`"new" and "rpy" are mutually exclusive`)
	}
	if msg.Len() > 0 {
		return 0, errors.New(msg.String())
	}
	return st, nil
}

// ctStateString is OVS's format_flags of ct_state with '|'.
func ctStateString(st uint8) string {
	var names []string
	for i, n := range ctStateNames {
		if st&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return "0"
	}
	return strings.Join(names, "|")
}

// DumpFlowsCommand is `ovs-appctl dpif/dump-flows [-m] [--names |
// --no-names] BRIDGE`: the datapath flows whose input port is one of the
// bridge's, formatted as OVS 3.1 does (as dpctl/dump-flows, without the
// per-thread headers, and with -m the UFID followed by a space).
func (b *Backer) DumpFlowsCommand(args []string) (string, error) {
	ff := datapath.FlowFormat{DPIF: true}
	names := -1
	bridge := ""
	for _, a := range args {
		switch a {
		case "-m", "--more":
			ff.Verbose = true
		case "--names":
			names = 1
		case "--no-names":
			names = 0
		default:
			bridge = a
		}
	}
	ff.Names = names == 1 || names == -1 && ff.Verbose
	br := b.Bridge(bridge)
	if br == nil {
		return "", errors.New("no such bridge")
	}
	mine := map[uint32]bool{}
	for _, p := range br.snap.Load().ports {
		if p.dpPort != 0 {
			mine[p.dpPort] = true
		}
	}
	now := b.dp.Now()
	var out strings.Builder
	for _, fi := range b.dp.Flows() {
		if mine[fi.Key.InPort] {
			out.WriteString(b.dp.FormatFlow(&fi, ff, now))
			out.WriteByte('\n')
		}
	}
	return out.String(), nil
}

// dpNames are the names ofproto/trace takes for govs' one datapath: its
// own, and the dummy datapath's that OVS's testsuite uses.
var dpNames = map[string]bool{
	"ovs-netdev": true, datapath.Name: true, "ovs-dummy": true, datapath.DummyName: true,
}

// TraceODP traces a datapath flow key (in_port(1),eth(...),...): the
// bridge and OpenFlow port are the ones datapath port in_port belongs to,
// the rest is traced as Trace traces an OpenFlow match.
func (b *Backer) TraceODP(flow string) (string, error) {
	in, ok, match, err := netdev.ODPFlowMatch(flow)
	if err != nil {
		return "", fmt.Errorf("Bad datapath flow syntax: %s", flow)
	}
	if !ok {
		return "", errors.New("datapath flow has no in_port")
	}
	b.mu.Lock()
	var name string
	ofport := -1
	for n, br := range b.bridges {
		for _, p := range br.snap.Load().ports {
			if p.dpPort == in {
				name, ofport = n, p.ofport
			}
		}
	}
	b.mu.Unlock()
	if ofport < 0 {
		return "", fmt.Errorf("no OpenFlow port for datapath port %d", in)
	}
	return b.trace(name, fmt.Sprintf("in_port=%d,%s", ofport, match), false, false)
}

// traceFinalFlow is ofproto/trace's "Final flow:": "unchanged", or the
// first bridge's flow after its actions as OVS's flow_format shows it
// (its packet fields, and the registers, metadata and mark not zero).
func traceFinalFlow(x *xlate, tlv *ofp.TLVTable, pn ofp.PortNames) string {
	if x.traceStart == nil || x.traceFinal == nil || *x.traceStart == *x.traceFinal {
		return "unchanged"
	}
	f := x.traceFinal
	k := f.Key
	var regs, meta string
	mark, dpHash := u32Flow("pkt_mark", f.PktMark), u32Flow("dp_hash", f.DpHash)
	for i, r := range f.Regs {
		if r != 0 {
			regs += fmt.Sprintf("reg%d=%#x,", i, r)
		}
	}
	if f.Metadata != 0 {
		meta = fmt.Sprintf("metadata=%#x,", f.Metadata)
	}
	return formatMatchOF(&k, ptr(packetMask(&k)), pn.Port(f.InPort), false, true, traceTunMD(tlv, &k, nil), mark, dpHash, regs, meta)
}

// u32Masked is OVS's format_uint32_masked as a "name=value," item, empty
// for a zero mask.
func u32Masked(name string, v, m uint32) string {
	switch m {
	case 0:
		return ""
	case ^uint32(0):
		return name + "=" + hexC(v) + ","
	}
	return name + "=" + hexC(v&m) + "/" + hexC(m) + ","
}

// u32Flow is a metadata field as OVS's flow_format shows it: only when
// not 0.
func u32Flow(name string, v uint32) string {
	if v == 0 {
		return ""
	}
	return u32Masked(name, v, ^uint32(0))
}

// hexC is C's %#x: 0 without a prefix.
func hexC(v uint32) string {
	if v == 0 {
		return "0"
	}
	return fmt.Sprintf("%#x", v)
}
