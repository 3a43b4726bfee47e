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
	return b.trace(bridgeName, spec, true, &traceOptions{})
}

// traceOptions are ofproto/trace's options besides the flow.
type traceOptions struct {
	// ctNext are --ct-next's states: the ct_state each conntrack
	// recirculation resumes with, in turn; trk|new once they run out.
	ctNext []uint8
	// names: ports by name rather than number (--names), OpenFlow ports
	// from the bridge being traced, datapath ports from the datapath.
	names bool
	// generate: -generate, taken for a trace whose text is OVS's; the
	// actions do not run on a packet, as OVS's would (logged).
	generate bool
	// consistent: -consistent (ofproto/trace-packet-out only), actions
	// the flow does not give what they work on are refused.
	consistent bool
	// actions are ofproto/trace-packet-out's, run instead of the
	// tables; nil (none given, or "drop") traces the tables.
	actions []ofp.Action
}

// traceNames are the current bridge's port names in a trace with
// --names; nil otherwise, for numbers.
func (x *xlate) traceNames() ofp.PortNames {
	if !x.names || x.of == nil || x.of.in == nil {
		return nil
	}
	return x.of.in.br.portNames()
}

// portNames maps the snapshot's OpenFlow port numbers to their names;
// the local port keeps its reserved name, LOCAL, as in OVS.
func (s *snapshot) portNames() ofp.PortNames {
	pn := make(ofp.PortNames, len(s.ports))
	for _, p := range s.ports {
		if p.ofport != LocalOFPort {
			pn[uint32(p.ofport)] = p.name
		}
	}
	return pn
}

// dpActions formats a trace's datapath actions, with port names if asked.
func (x *xlate) dpActions() string {
	if x.names {
		return x.acts.Format(x.backer.dp.PortName)
	}
	return x.acts.String()
}

// trace is Trace, checking the flow's fields' prerequisites (an OpenFlow
// flow) or not (a datapath flow's match).
func (b *Backer) trace(bridgeName, spec string, prereqs bool, o *traceOptions) (string, error) {
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
	if o.actions != nil {
		if err := br.checkTraceActions(o, &k); err != nil {
			return "", err
		}
		if in == nil && k.RecircID == 0 {
			// A packet-out may come from a port the bridge does not
			// have (OVS's xlate_actions with no xport).
			in = &port{br: s, ofport: ofport}
		}
	}
	inText := ofportString(ofport)
	if o.names && ofport != LocalOFPort {
		inText = s.portNames().Port(uint32(ofport))
	}

	var out strings.Builder
	fmt.Fprintf(&out, "Flow: %s\n", formatMatchOF(&k, traceFlowMask(&k), inText, false, true, traceTunMD(tlv, &k, nil),
		u32Flow("pkt_mark", md.pktMark), u32Flow("dp_hash", md.dpHash)+skbPriorityFlow(md.skbPriority), regsFlow(&md.regs), metadataFlow(md.metadata)))
	// The packet's skb_priority is in its key, as the datapath's.
	k.SkbPriority = md.skbPriority
	u := datapath.Upcall{Key: k}
	// A dp_hash is the packet's, in the key of a recirculated pass.
	u.Key.DpHash = md.dpHash
	x := b.newXlate(idx, &u, modeTrace, 0)
	x.inMeta, x.pktMark = md, md.pktMark
	x.trace, x.tt, x.names = &out, newTraceTree(), o.names
	x.traceActions = o.actions
	x.tunMDWC = &ofp.Flow{}
	tnlWCInit(&k, &u.Mask)
	var failed string
	if k.RecircID != 0 {
		// OVS's xlate_actions thaws the state frozen under the ID, if
		// any, before it looks at the input port.
		if n := b.recircs.lookup(k.RecircID); n != nil && o.actions != nil {
			failed = traceConflict(x, n.state.br.name)
		} else if n != nil {
			x.resume(n)
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
	mark, dpHash := u32Masked("pkt_mark", md.pktMark, x.traceMarkWC), u32Masked("dp_hash", md.dpHash, x.traceDpHashWC|u.Mask.DpHash)
	// skb_priority: matched whole, or not at all.
	dpHash += u32Masked("skb_priority", k.SkbPriority, u.Mask.SkbPriority)
	// The megaflow's values are the packet's under its mask, as OVS's
	// (a minimatch).
	mk := k.Masked(&u.Mask)
	mk.RecircID = k.RecircID // a megaflow always matches it
	fmt.Fprintf(&out, "\nFinal flow: %s\nMegaflow: %s\nDatapath actions: %s\n", traceFinalFlow(x, tlv),
		formatMatchOF(&mk, traceMegaflowMask(x, &u.Mask), inText, true, false, traceTunMD(tlv, &k, x.tunMDWC), mark, dpHash, "", ""), x.dpActions())
	out.WriteString(failed)
	b.traceRecircs(&out, idx, x.recircTrace, k.InPort, inText, o)
	return out.String(), nil
}

// traceRecircs follows the recirculations of a trace, as OVS does: each
// conntrack recirculation resumes with the next of --ct-next's states, or
// once there are none with a conntrack that reports every connection new.
func (b *Backer) traceRecircs(out *strings.Builder, idx *index, queue []traceRecirc, dpIn uint32, inText string, o *traceOptions) {
	for n := 0; len(queue) > 0 && n < maxRecircTraces; n++ {
		r := queue[0]
		queue = queue[1:]
		rule := strings.Repeat("=", 79)
		state := uint8(ofp.CtTrk | ofp.CtNew)
		if len(o.ctNext) > 0 {
			state, o.ctNext = o.ctNext[0], o.ctNext[1:]
			fmt.Fprintf(out, "\n%s\nrecirc(%#x) - resume conntrack with ct_state=%s\n%s\n\n", rule, r.id, formatCtState(state, 0xff), rule)
		} else {
			fmt.Fprintf(out, "\n%s\nrecirc(%#x) - resume conntrack with default ct_state=trk|new (use --ct-next to customize)\n%s\n\n", rule, r.id, rule)
		}
		k := r.flow.Key
		k.InPort = dpIn
		k.CtState = state
		k.CtZone = r.zone
		m := packetMask(&k)
		// flow_format leaves out a zone of 0 (a ct() without zone=).
		m.CtState = 0xff
		if k.CtZone != 0 {
			m.CtZone = 0xffff
		}
		if k.CtMark != 0 {
			m.CtMark = ^uint32(0)
		}
		fmt.Fprintf(out, "Flow: %s\n", formatMatchOF(&k, &m, inText, false, true, "", "", skbPriorityFlow(k.SkbPriority), "", ""))
		u := datapath.Upcall{Key: k}
		x := b.newXlate(idx, &u, modeTrace, 0)
		x.trace, x.tt, x.names = out, newTraceTree(), o.names
		var failed string
		if o.actions != nil {
			// OVS traces each recirculation with the packet-out's
			// actions again, which a frozen state conflicts with.
			failed = traceConflict(x, r.st.br.name)
		} else {
			x.resume(&recircNode{id: r.id, state: r.st})
		}
		x.tt.render(out)
		fmt.Fprintf(out, "\nFinal flow: %s\nMegaflow: %s\nDatapath actions: %s\n", traceFinalFlow(x, r.st.br.tlv.Load()),
			formatMatchOF(&k, traceMegaflowMask(x, &u.Mask), inText, true, false, "", "", u32Masked("skb_priority", k.SkbPriority, u.Mask.SkbPriority), "", ""),
			x.dpActions())
		out.WriteString(failed)
		queue = append(queue, x.recircTrace...)
	}
}

// traceConflict reports, as OVS's xlate_actions, a thaw of a frozen
// state in a trace of a packet-out's actions, which take the frozen
// actions' place (XLATE_RECIRCULATION_CONFLICT), and returns the line
// that follows the trace.
func traceConflict(x *xlate, bridge string) string {
	x.tt.open(traceBridge, fmt.Sprintf("bridge(\"%s\")", bridge))
	x.tt.open(traceThaw, "thaw")
	x.report(">>>>", "Recirculation conflict (actions)!")
	return "Translation failed (Recirculation conflict), packet is dropped.\n"
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
	m.TunGBPID, m.TunGBPFlags = 0, 0
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
//
// Options go anywhere among the arguments, as OVS's: --ct-next STATES
// (repeatable), and -generate, which makes OVS trace a packet built from
// the flow; govs traces the flow alone either way, with the same output,
// but runs no actions on a packet (OVS runs all but the outputs, so its
// ct(commit) would create a connection). A packet in hex, --l7 and
// --l7-len, which shape such a packet, are refused.
func (b *Backer) TraceCommand(args []string) (string, error) {
	if len(args) == 0 {
		return "", errors.New(`"ofproto/trace" command requires at least 1 arguments`)
	}
	pos, o, err := parseTraceArgs(args, false)
	if err != nil {
		return "", err
	}
	return b.traceArgs(pos, o)
}

// traceArgs traces as ofproto/trace's positional arguments say: a
// bridge and its flow, or a datapath flow (after the datapath's name).
func (b *Backer) traceArgs(pos []string, o *traceOptions) (string, error) {
	if o.generate {
		b.log.Infof("ofproto/trace: -generate: the trace is of the flow; govs runs no action on a generated packet (OVS runs all but the outputs)")
	}
	switch len(pos) {
	case 0:
		return "", errors.New("Syntax error")
	case 1:
		if strings.Contains(pos[0], "(") {
			return b.traceODP(pos[0], o)
		}
		return "", fmt.Errorf("syntax error at %s (or the bridge name was omitted)", pos[0])
	case 2:
		if b.Bridge(pos[0]) == nil && dpNames[pos[0]] && strings.Contains(pos[1], "(") {
			return b.traceODP(pos[1], o)
		}
		return b.trace(pos[0], pos[1], true, o)
	}
	return "", fmt.Errorf("ofproto/trace: %s: tracing a given packet is not supported", pos[2])
}

// parseTraceArgs separates ofproto/trace's options from its positional
// arguments (at most 3), with OVS's errors (parse_flow_and_packet);
// -consistent is an option only where consistent allows it
// (ofproto/trace-packet-out).
func parseTraceArgs(args []string, consistent bool) (pos []string, o *traceOptions, err error) {
	o = &traceOptions{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case consistent && (a == "-consistent" || a == "--consistent"):
			o.consistent = true
			continue
		}
		switch a {
		case "-generate", "--generate":
			o.generate = true
		case "-names", "--names":
			o.names = true
		case "--ct-next":
			if i+1 >= len(args) {
				return nil, nil, fmt.Errorf("Missing argument for option %s", a)
			}
			i++
			st, err := parseCtStateFlags(args[i])
			if err != nil {
				return nil, nil, err
			}
			o.ctNext = append(o.ctNext, st)
		case "--l7", "--l7-len":
			if i+1 >= len(args) {
				return nil, nil, fmt.Errorf("Missing argument for option %s", a)
			}
			return nil, nil, fmt.Errorf("ofproto/trace: %s: generated packets' contents are not supported", a)
		default:
			if strings.HasPrefix(a, "-") {
				return nil, nil, fmt.Errorf("%s: unknown option", a)
			}
			if len(pos) >= 3 {
				return nil, nil, errors.New("too many arguments")
			}
			pos = append(pos, a)
		}
	}
	return pos, o, nil
}

// parseCtStateFlags parses --ct-next's argument as OVS's parse_ct_state
// and validate_ct_state: flag names separated by commas or spaces.
func parseCtStateFlags(text string) (uint8, error) {
	var st uint8
	for _, f := range strings.FieldsFunc(text, func(r rune) bool { return r == ',' || r == ' ' }) {
		bit := slices.Index(ofp.CTStateNames[:], f)
		if bit < 0 {
			return 0, fmt.Errorf("%s: unknown connection tracking state flag", f)
		}
		st |= 1 << bit
	}
	var bad []string
	flags := formatCtState(st, 0xff)
	if st != 0 && st&ofp.CtTrk == 0 {
		bad = append(bad, flags+`: invalid connection state: If "trk" is unset, no other flags are set`)
	}
	if st&ofp.CtInv != 0 && st&^(ofp.CtTrk|ofp.CtInv) != 0 {
		bad = append(bad, flags+`: invalid connection state: when "inv" is set, only "trk" may also be set`)
	}
	if st&ofp.CtNew != 0 && st&ofp.CtEst != 0 {
		bad = append(bad, flags+`: invalid connection state: "new" and "est" are mutually exclusive`)
	}
	if st&ofp.CtNew != 0 && st&ofp.CtRpl != 0 {
		bad = append(bad, flags+`: invalid connection state: "new" and "rpy" are mutually exclusive`)
	}
	if bad != nil {
		return 0, errors.New(strings.Join(bad, "\n"))
	}
	return st, nil
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
func (b *Backer) TraceODP(flow string) (string, error) { return b.traceODP(flow, &traceOptions{}) }

func (b *Backer) traceODP(flow string, o *traceOptions) (string, error) {
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
	return b.trace(name, fmt.Sprintf("in_port=%d,%s", ofport, match), false, o)
}

// traceFinalFlow is ofproto/trace's "Final flow:": "unchanged", or the
// first bridge's flow after its actions as OVS's flow_format shows it
// (its packet fields, and the registers, metadata and mark not zero).
func traceFinalFlow(x *xlate, tlv *ofp.TLVTable) string {
	if x.traceStart == nil || x.traceFinal == nil || *x.traceStart == *x.traceFinal && !x.traceFinalActset {
		return "unchanged"
	}
	f := x.traceFinal
	k := f.Key
	mark, dpHash := u32Flow("pkt_mark", f.PktMark), u32Flow("dp_hash", f.DpHash)+skbPriorityFlow(f.SkbPriority)
	regs, meta := regsFlow(&f.Regs), metadataFlow(f.Metadata)
	var pn ofp.PortNames
	if x.names && x.traceBridge != nil {
		pn = x.traceBridge.portNames()
	}
	out := formatMatchOF(&k, traceFlowMask(&k), pn.Port(f.InPort), false, true, traceTunMD(tlv, &k, nil), mark, dpHash, regs, meta)
	if in := x.traceFinalInner; in.present() {
		// The tag a push_vlan pushed over, as match_format shows a
		// second VLAN header.
		out = strings.Replace(out, "vlan_tci1=0x0000,", fmt.Sprintf("dl_vlan1=%d,dl_vlan_pcp1=%d,", in.tci&flow.VLANVIDMask, in.tci>>13), 1)
	}
	return out
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

// traceFlowMask is the mask OVS's flow_format shows a trace's flow with:
// the packet's (packetMask) and its conntrack fields that are not zero,
// the original direction's only for a valid connection (new, est or
// rpl) of an IP packet with a ct_nw_proto.
func traceFlowMask(k *flow.Key) *flow.Mask {
	m := packetMask(k)
	if k.CtState != 0 {
		m.CtState = 0xff
	}
	if k.CtZone != 0 {
		m.CtZone = 0xffff
	}
	if k.CtMark != 0 {
		m.CtMark = ^uint32(0)
	}
	all := [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	if k.CtLabel != [16]byte{} {
		m.CtLabel = all
	}
	ip := k.EthType == flow.EthTypeIPv4 || k.EthType == flow.EthTypeIPv6
	if ip && k.CtState&(ofp.CtNew|ofp.CtEst|ofp.CtRpl) != 0 && k.CtNwProto != 0 {
		m.CtNwProto, m.CtTpSrc, m.CtTpDst = 0xff, 0xffff, 0xffff
		m.CtNwSrc, m.CtNwDst = all, all
	}
	return &m
}

// regsFlow formats the registers that are not zero as flow_format does.
func regsFlow(regs *[16]uint32) string {
	var s string
	for i, r := range regs {
		if r != 0 {
			s += fmt.Sprintf("reg%d=%#x,", i, r)
		}
	}
	return s
}

// metadataFlow formats metadata as flow_format does: not when zero.
func metadataFlow(v uint64) string {
	if v == 0 {
		return ""
	}
	return fmt.Sprintf("metadata=%#x,", v)
}

// skbPriorityFlow formats skb_priority as flow_format does: not when
// zero.
func skbPriorityFlow(v uint32) string {
	if v == 0 {
		return ""
	}
	return fmt.Sprintf("skb_priority=%#x,", v)
}

// traceMegaflowMask is the mask a trace's Megaflow: line shows: the
// datapath's, with OVS's ipv6_label mask: all 32 bits where a lookup
// found a rule on the whole label (x.traceLabelExact), else the label's
// bits consulted (a set's 20); no L4 fields for a later fragment.
func traceMegaflowMask(x *xlate, m *flow.Mask) *flow.Mask {
	later := x.key.NwFrag&flow.FragLater != 0 && m.TpSrc|m.TpDst|m.TCPFlags != 0
	if m.IPv6Label == 0 && !later {
		return m
	}
	mm := *m
	if later {
		// A later fragment has no L4 header, and OVS's megaflow, an ODP
		// key, no L4 fields.
		mm.TpSrc, mm.TpDst, mm.TCPFlags = 0, 0, 0
	}
	if mm.IPv6Label &= 0xfffff; x.traceLabelExact && mm.IPv6Label == 0xfffff {
		mm.IPv6Label = ^uint32(0)
	}
	return &mm
}
