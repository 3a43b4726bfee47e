package conntrack

import (
	"net/netip"
	"strconv"
	"strings"
)

// Entry is one connection as dumps show it.
type Entry struct {
	Orig, Reply Tuple
	Zone        uint16
	Mark        uint32
	Label       Label
	// TCPState is the connection's TCP state as OVS prints it, "" for
	// other protocols; TCPOrig and TCPReply are each peer's, with their
	// window scale and flags (OVS's verbose protoinfo).
	TCPState               string
	TCPOrig, TCPReply      string
	WscaleOrig, WscaleRepl uint8
	FlagsOrig, FlagsReply  uint8
	// ExpiresIn is the time left before the connection expires, in
	// seconds.
	ExpiresIn int64
	// Helper is the connection's ALG ("ftp", "tftp" or ""); Parent the
	// original tuple of the connection it is related to, if HasParent.
	Helper    string
	Parent    Tuple
	HasParent bool
}

// TCP protoinfo flags (CT_DPIF_TCPF_*).
const (
	tcpfWindowScale = 1 << 0
	tcpfBeLiberal   = 1 << 3
)

func peerFlags(p *tcpPeer) uint8 {
	var f uint8
	if p.wscale&wscaleFlag != 0 {
		f |= tcpfWindowScale
	}
	if p.wscale&wscaleUnknown != 0 {
		f |= tcpfBeLiberal
	}
	return f
}

func tupleOf(k *key) Tuple {
	return Tuple{Src: k.src, Dst: k.dst, SrcPort: k.sport, DstPort: k.dport, Proto: k.proto, V6: k.v6}
}

func (c *conn) entry(now int64) Entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := Entry{Orig: tupleOf(&c.orig), Reply: tupleOf(&c.reply), Zone: c.orig.zone, Mark: c.mark, Label: c.label,
		ExpiresIn: max(0, (c.expires.Load()-now)/1e9)}
	switch c.alg.kind {
	case algFTP:
		e.Helper = HelperFTP
	case algTFTP:
		e.Helper = HelperTFTP
	}
	if c.alg.related {
		e.Parent, e.HasParent = tupleOf(&c.alg.parent), true
	}
	if c.orig.proto == protoTCP && (c.tcp.peer[0].state != 0 || c.tcp.peer[1].state != 0) {
		// OVS prints one state, the later of the two peers', with the
		// userspace view coalesced to the kernel's (ct-dpif.c).
		s := max(c.tcp.peer[0].state, c.tcp.peer[1].state)
		switch s {
		case tcpsFinWait2:
			s = tcpsTimeWait
		case tcpsSynRecv:
			s = tcpsEstablished
		}
		e.TCPState = s.String()
		p0, p1 := &c.tcp.peer[0], &c.tcp.peer[1]
		e.TCPOrig, e.TCPReply = p0.state.String(), p1.state.String()
		e.WscaleOrig, e.WscaleRepl = p0.wscale&wscaleMask, p1.wscale&wscaleMask
		e.FlagsOrig, e.FlagsReply = peerFlags(p0), peerFlags(p1)
	}
	return e
}

// Dump returns the live connections, of zone only if zone >= 0, in no
// particular order.
func (t *Tracker) Dump(zone int) []Entry {
	now := t.clock()
	var out []Entry
	t.each(func(c *conn) bool {
		if zone < 0 || int(c.orig.zone) == zone {
			out = append(out, c.entry(now))
		}
		return true
	})
	return out
}

// ProtoName is the name OVS prints for an IP protocol
// (ct_dpif_format_ipproto), or its number.
func ProtoName(p uint8) string {
	switch p {
	case 1:
		return "icmp"
	case 58:
		return "icmpv6"
	case 6:
		return "tcp"
	case 17:
		return "udp"
	case 132:
		return "sctp"
	case 136:
		return "udplite"
	case 33:
		return "dccp"
	case 2:
		return "igmp"
	}
	return strconv.Itoa(int(p))
}

// Addr returns the tuple's source or destination as an address.
func (tu *Tuple) Addr(src bool) netip.Addr {
	a := tu.Dst
	if src {
		a = tu.Src
	}
	if tu.V6 {
		return netip.AddrFrom16(a)
	}
	return netip.AddrFrom4([4]byte(a[:4]))
}

func (tu *Tuple) format(b *strings.Builder) {
	b.WriteString("src=")
	b.WriteString(tu.Addr(true).String())
	b.WriteString(",dst=")
	b.WriteString(tu.Addr(false).String())
	if tu.Proto == protoICMP || tu.Proto == protoICMPv6 {
		b.WriteString(",id=")
		b.WriteString(strconv.Itoa(int(tu.SrcPort)))
		b.WriteString(",type=")
		b.WriteString(strconv.Itoa(int(tu.DstPort >> 8)))
		b.WriteString(",code=")
		b.WriteString(strconv.Itoa(int(tu.DstPort & 0xff)))
		return
	}
	b.WriteString(",sport=")
	b.WriteString(strconv.Itoa(int(tu.SrcPort)))
	b.WriteString(",dport=")
	b.WriteString(strconv.Itoa(int(tu.DstPort)))
}

// String formats e as `ovs-appctl dpctl/dump-conntrack` does
// (ct_dpif_format_entry), e.g.
//
//	tcp,orig=(src=10.0.0.1,dst=10.0.0.2,sport=40000,dport=80),reply=(src=10.0.0.2,dst=10.0.0.1,sport=80,dport=40000),zone=5,protoinfo=(state=ESTABLISHED)
func (e Entry) String() string { return e.Format(false, false) }

// Format is String with dump-conntrack's -m (verbose) and -s (stats)
// additions: the id and status the userspace tracker shows as 0, each
// TCP peer's state, and the seconds left before expiry.
func (e Entry) Format(verbose, stats bool) string {
	var b strings.Builder
	b.WriteString(ProtoName(e.Orig.Proto))
	b.WriteString(",orig=(")
	e.Orig.format(&b)
	b.WriteString("),reply=(")
	e.Reply.format(&b)
	b.WriteByte(')')
	if verbose {
		b.WriteString(",id=0")
	}
	if e.Zone != 0 {
		b.WriteString(",zone=")
		b.WriteString(strconv.Itoa(int(e.Zone)))
	}
	if verbose {
		b.WriteString(",status=0")
	}
	if stats {
		b.WriteString(",timeout=")
		b.WriteString(strconv.FormatInt(e.ExpiresIn, 10))
	}
	if e.Mark != 0 {
		b.WriteString(",mark=")
		b.WriteString(strconv.FormatUint(uint64(e.Mark), 10))
	}
	if e.Label != (Label{}) {
		b.WriteString(",labels=")
		b.WriteString(e.Label.String())
	}
	switch {
	case e.TCPState != "" && verbose:
		b.WriteString(",protoinfo=(state_orig=" + e.TCPOrig + ",state_reply=" + e.TCPReply)
		if e.WscaleOrig != 0 || e.WscaleRepl != 0 {
			b.WriteString(",wscale_orig=" + strconv.Itoa(int(e.WscaleOrig)) + ",wscale_reply=" + strconv.Itoa(int(e.WscaleRepl)))
		}
		b.WriteString(",flags_orig=" + tcpFlagsString(e.FlagsOrig) + ",flags_reply=" + tcpFlagsString(e.FlagsReply) + ")")
	case e.TCPState != "":
		b.WriteString(",protoinfo=(state=")
		b.WriteString(e.TCPState)
		b.WriteByte(')')
	}
	if e.Helper != "" {
		b.WriteString(",helper=" + e.Helper)
	}
	if verbose && e.HasParent {
		b.WriteString(",parent=(")
		e.Parent.format(&b)
		b.WriteByte(')')
	}
	return b.String()
}

var tcpfNames = [...]string{"WINDOW_SCALE", "SACK_PERM", "CLOSE_INIT", "BE_LIBERAL", "UNACKED", "MAXACK_SET"}

func tcpFlagsString(f uint8) string {
	if f == 0 {
		return "0"
	}
	var names []string
	for i, n := range tcpfNames {
		if f&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	return strings.Join(names, "|")
}

// String formats a label as OVS does: 0x and hex digits without leading
// zeros.
func (l Label) String() string {
	const hexd = "0123456789abcdef"
	var b strings.Builder
	b.WriteString("0x")
	started := false
	for _, x := range l {
		for _, d := range [2]byte{x >> 4, x & 15} {
			if d != 0 || started {
				started = true
				b.WriteByte(hexd[d])
			}
		}
	}
	if !started {
		b.WriteByte('0')
	}
	return b.String()
}

// TCPStateNames are the TCP states in OVS's order (CT_DPIF_TCPS_*), as
// ct-stats-show lists them.
func TCPStateNames() []string { return tcpStateNames[:] }

// StateNames are the ct_state flag names, by bit, as OVS prints them.
var StateNames = [8]string{"new", "est", "rel", "rpl", "inv", "trk", "snat", "dnat"}

// StateString formats the set bits of a ct_state as "+new+trk", "0" if
// none.
func StateString(s uint8) string {
	if s == 0 {
		return "0"
	}
	var b strings.Builder
	for i, n := range StateNames {
		if s&(1<<i) != 0 {
			b.WriteByte('+')
			b.WriteString(n)
		}
	}
	return b.String()
}
