package netdev

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"strconv"
	"strings"

	"github.com/govs/govs/netdev/offload"
)

// This file turns netdev-dummy/receive's arguments into frames: a frame in
// hex (lib/packets.c eth_from_hex), or a datapath flow key in OVS's
// syntax, composed into the frame OVS's flow_compose builds from it
// (lib/flow.c), so that tests written for OVS send the same bytes.

// ethTotalMin is the smallest --len accepted (OVS's ETH_TOTAL_MIN).
const ethTotalMin = 60

// flowL7Len is the payload flow_compose appends after an L4 header when
// no --len is given: bytes 0, 1, 2, ... 63.
const flowL7Len = 64

// dlTypeNone is OVS's FLOW_DL_TYPE_NONE: the key names no eth_type, the
// frame is 802.3 with its length in the type field.
const dlTypeNone = 0x5ff

var errFlowSyntax = errors.New("bad packet or flow syntax")

// DummyFrameFromHex parses a frame given as hex digits, whitespace allowed
// between bytes; ok is false if s is not one.
func DummyFrameFromHex(s string) (frame []byte, ok bool) {
	for i := 0; i < len(s); {
		if c := s[i]; c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' {
			i++
			continue
		}
		if i+1 >= len(s) {
			return nil, false
		}
		b, err := strconv.ParseUint(s[i:i+2], 16, 8)
		if err != nil {
			return nil, false
		}
		frame = append(frame, byte(b))
		i += 2
	}
	return frame, len(frame) >= 14
}

// dummyFlow is what a flow key says about the frame to build.
type dummyFlow struct {
	dst, src net.HardwareAddr
	tags     []uint32 // TPID<<16 | TCI, outermost first
	ethType  uint16

	// IPv4 or IPv6.
	src4, dst4     netip.Addr
	src6, dst6     netip.Addr
	proto, tos     uint8
	ttl            uint8
	label          uint32
	fragMF, fragLt bool

	tpSrc, tpDst uint16 // ports, or ICMP type and code
	tcpFlags     uint16
	l4           string // "tcp", "udp", "sctp", "icmp", "icmpv6" or ""

	arpOp      uint16
	sha, tha   net.HardwareAddr
	sip, tip   netip.Addr
	hasArpKeys bool

	// beyond is set at a second VLAN tag: OVS's flow keeps one tag
	// (other_config:vlan-limit's default), so the frame ends with the
	// first tag's inner type and the keys after it shape nothing.
	beyond bool
}

// ParseDummyFlow parses a datapath flow key such as
// "in_port(1),eth(src=..,dst=..),eth_type(0x0800),ipv4(src=..,dst=..,proto=6,tos=0,ttl=64,frag=no),tcp(src=1,dst=2)"
// and returns the frame flow_compose builds from it: with size 0, with a
// 64-byte payload after an L4 header; else size bytes, padded with zeros
// (headers longer than size are an error with no text, as in OVS 3.1).
func ParseDummyFlow(s string, size int) ([]byte, error) {
	f := &dummyFlow{ethType: dlTypeNone}
	if err := f.parseKeys(s, 0, len(s), 0); err != nil {
		return nil, err
	}
	l7 := flowL7Len
	if size > 0 {
		l7 = 0
	}
	b := f.compose(l7)
	switch {
	case size > len(b):
		b = f.expand(b, size)
	case size > 0 && size < len(b):
		// OVS 3.1 refuses it with an empty error.
		return nil, errors.New("")
	}
	return b, nil
}

// ignoredKeys are datapath metadata keys that do not shape the frame.
var ignoredKeys = map[string]bool{
	"in_port": true, "recirc_id": true, "dp_hash": true, "skb_priority": true, "skb_mark": true,
	"ct_state": true, "ct_zone": true, "ct_mark": true, "ct_label": true,
}

// flowSyntaxError is odp_flow_from_string's error: the text from the key
// it could not parse to the end of the flow.
type flowSyntaxError struct{ at string }

func (e *flowSyntaxError) Error() string { return "syntax error at " + e.at }

// parseKeys parses the keys in orig[base:end], comma-separated; an error
// points into orig.
func (f *dummyFlow) parseKeys(orig string, base, end, depth int) error {
	s := orig[base:end]
	for i := 0; ; {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i >= len(s) {
			return nil
		}
		start, j, nest := i, i, 0
	scan:
		for ; j < len(s); j++ {
			switch s[j] {
			case '(':
				nest++
			case ')':
				if nest--; nest < 0 {
					break scan
				}
			case ',':
				if nest == 0 {
					break scan
				}
			}
		}
		bad := &flowSyntaxError{at: orig[base+start:]}
		p := strings.TrimRight(s[start:j], " \t")
		open := strings.IndexByte(p, '(')
		if nest != 0 || depth > 8 || open <= 0 || !strings.HasSuffix(p, ")") {
			return bad
		}
		if i = j + 1; j >= len(s) {
			i = len(s)
		}
		key, arg := p[:open], p[open+1:len(p)-1]
		var err error
		if f.beyond {
			continue
		}
		switch key {
		case "eth":
			err = f.parseFields(arg, map[string]func(string) error{
				"src": macField(&f.src), "dst": macField(&f.dst),
			})
		case "eth_type":
			var v uint64
			if v, err = strconv.ParseUint(arg, 0, 16); err == nil {
				f.ethType = uint16(v)
			}
		case "vlan":
			err = f.parseVLAN(arg)
		case "encap":
			if err := f.parseKeys(orig, base+start+open+1, base+start+len(p)-1, depth+1); err != nil {
				return err
			}
		case "ipv4":
			if f.ethType != 0x0800 {
				return bad
			}
			err = f.parseFields(arg, map[string]func(string) error{
				"src": addrField(&f.src4, true), "dst": addrField(&f.dst4, true),
				"proto": u8Field(&f.proto), "tos": u8Field(&f.tos), "ttl": u8Field(&f.ttl),
				"frag": f.fragField(true),
			})
		case "ipv6":
			if f.ethType != 0x86dd {
				return bad
			}
			err = f.parseFields(arg, map[string]func(string) error{
				"src": addrField(&f.src6, false), "dst": addrField(&f.dst6, false),
				"label": func(v string) error { return uintField(v, 20, &f.label) },
				"proto": u8Field(&f.proto), "tclass": u8Field(&f.tos), "hlimit": u8Field(&f.ttl),
				"frag": f.fragField(false),
			})
		case "tcp", "udp", "sctp":
			err = f.l4Key(key, arg, "src", "dst", map[string]uint8{"tcp": 6, "udp": 17, "sctp": 132}[key], 0)
		case "icmp", "icmpv6":
			err = f.l4Key(key, arg, "type", "code", 1, 58)
		case "tcp_flags":
			err = f.parseTCPFlags(arg)
		case "arp":
			if f.ethType != 0x0806 && f.ethType != 0x8035 {
				return bad
			}
			f.hasArpKeys = true
			err = f.parseFields(arg, map[string]func(string) error{
				"sip": addrField(&f.sip, true), "tip": addrField(&f.tip, true),
				"op":  func(v string) error { var x uint32; e := uintField(v, 16, &x); f.arpOp = uint16(x); return e },
				"sha": macField(&f.sha), "tha": macField(&f.tha),
			})
		default:
			if !ignoredKeys[key] || arg == "" {
				return bad
			}
		}
		if err != nil {
			return bad
		}
	}
}

// l4Key parses tcp(src,dst), udp(...), icmp(type,code) or icmpv6(...),
// which must follow an IP key with the matching protocol.
func (f *dummyFlow) l4Key(key, arg, a, b string, proto4, proto6 uint8) error {
	want := proto4
	if f.ethType == 0x86dd && proto6 != 0 {
		want = proto6
	}
	if key == "icmp" && f.ethType != 0x0800 || key == "icmpv6" && f.ethType != 0x86dd ||
		f.ethType != 0x0800 && f.ethType != 0x86dd || f.proto != want || f.l4 != "" {
		return errFlowSyntax
	}
	f.l4 = key
	var x, y uint32
	bits := 16
	if key == "icmp" || key == "icmpv6" {
		bits = 8
	}
	err := f.parseFields(arg, map[string]func(string) error{
		a: func(v string) error { return uintField(v, bits, &x) },
		b: func(v string) error { return uintField(v, bits, &y) },
	})
	f.tpSrc, f.tpDst = uint16(x), uint16(y)
	return err
}

var tcpFlagNames = map[string]uint16{
	"fin": 0x001, "syn": 0x002, "rst": 0x004, "psh": 0x008, "ack": 0x010,
	"urg": 0x020, "ece": 0x040, "cwr": 0x080, "ns": 0x100,
}

func (f *dummyFlow) parseTCPFlags(arg string) error {
	if v, err := strconv.ParseUint(arg, 0, 12); err == nil {
		f.tcpFlags = uint16(v)
		return nil
	}
	for _, n := range strings.Split(arg, "|") {
		bit, ok := tcpFlagNames[n]
		if !ok {
			return errFlowSyntax
		}
		f.tcpFlags |= bit
	}
	return nil
}

func (f *dummyFlow) parseVLAN(arg string) error {
	if f.ethType != 0x8100 && f.ethType != 0x88a8 {
		return errFlowSyntax
	}
	if len(f.tags) == 1 {
		f.beyond = true
		return nil
	}
	var vid, pcp uint32
	cfi := uint32(1)
	if err := f.parseFields(arg, map[string]func(string) error{
		"vid": func(v string) error { return uintField(v, 12, &vid) },
		"pcp": func(v string) error { return uintField(v, 3, &pcp) },
		"cfi": func(v string) error { return uintField(v, 1, &cfi) },
	}); err != nil {
		return err
	}
	if cfi != 1 {
		return errFlowSyntax
	}
	f.tags = append(f.tags, uint32(f.ethType)<<16|pcp<<13|0x1000|vid)
	f.ethType = dlTypeNone
	return nil
}

func (f *dummyFlow) fragField(v4 bool) func(string) error {
	return func(v string) error {
		switch v {
		case "no":
		case "first":
			f.fragMF = true
		case "later":
			f.fragMF, f.fragLt = true, true
		default:
			return errFlowSyntax
		}
		if !v4 && f.fragMF {
			// flow_compose writes no IPv6 fragment header.
			return errFlowSyntax
		}
		return nil
	}
}

// parseFields parses "k=v,k=v" with each k among fields, at most once.
func (f *dummyFlow) parseFields(arg string, fields map[string]func(string) error) error {
	if strings.TrimSpace(arg) == "" {
		return nil
	}
	seen := map[string]bool{}
	for _, kv := range strings.Split(arg, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		set := fields[k]
		if !ok || set == nil || seen[k] || strings.Contains(v, "/") {
			return errFlowSyntax
		}
		seen[k] = true
		if err := set(v); err != nil {
			return err
		}
	}
	return nil
}

func macField(dst *net.HardwareAddr) func(string) error {
	return func(v string) error {
		hw, err := net.ParseMAC(v)
		if err != nil || len(hw) != 6 {
			return errFlowSyntax
		}
		*dst = hw
		return nil
	}
}

func addrField(dst *netip.Addr, v4 bool) func(string) error {
	return func(v string) error {
		a, err := netip.ParseAddr(v)
		if err != nil || a.Is4() != v4 || a.Zone() != "" {
			return errFlowSyntax
		}
		*dst = a
		return nil
	}
}

func u8Field(dst *uint8) func(string) error {
	return func(v string) error {
		var x uint32
		err := uintField(v, 8, &x)
		*dst = uint8(x)
		return err
	}
}

func uintField(v string, bits int, dst *uint32) error {
	x, err := strconv.ParseUint(v, 0, bits)
	if err != nil {
		return errFlowSyntax
	}
	*dst = uint32(x)
	return nil
}

func mac6(hw net.HardwareAddr) []byte {
	if hw == nil {
		return make([]byte, 6)
	}
	return hw
}

func addrBytes(a netip.Addr, n int) []byte {
	if !a.IsValid() {
		return make([]byte, n)
	}
	return a.AsSlice()
}

// compose builds the frame as flow_compose does, with l7 bytes of
// payload (0, 1, 2, ...) after an L4 header.
func (f *dummyFlow) compose(l7 int) []byte {
	b := append(append([]byte{}, mac6(f.dst)...), mac6(f.src)...)
	for _, t := range f.tags {
		// eth_push_vlan clears the CFI bit, which marks a tag present
		// in OVS's flow.
		b = binary.BigEndian.AppendUint32(b, t&^0x1000)
	}
	b = binary.BigEndian.AppendUint16(b, f.ethType)
	if f.ethType == dlTypeNone {
		binary.BigEndian.PutUint16(b[len(b)-2:], uint16(len(b)))
		return b
	}
	l3 := len(b)
	switch f.ethType {
	case 0x0800:
		ip := make([]byte, 20)
		ip[0], ip[1], ip[8], ip[9] = 0x45, f.tos, f.ttl, f.proto
		if f.fragMF {
			frag := uint16(0x2000)
			if f.fragLt {
				frag |= 100
			}
			binary.BigEndian.PutUint16(ip[6:], frag)
		}
		copy(ip[12:], addrBytes(f.src4, 4))
		copy(ip[16:], addrBytes(f.dst4, 4))
		b = append(b, ip...)
		if !f.fragLt {
			b = f.composeL4(b, l7)
		}
		binary.BigEndian.PutUint16(b[l3+2:], uint16(len(b)-l3))
		f.checksums(b, l3)
	case 0x86dd:
		ip := make([]byte, 40)
		binary.BigEndian.PutUint32(ip, 6<<28|uint32(f.tos)<<20|f.label)
		ip[6], ip[7] = f.proto, f.ttl
		copy(ip[8:], addrBytes(f.src6, 16))
		copy(ip[24:], addrBytes(f.dst6, 16))
		b = append(b, ip...)
		b = f.composeL4(b, l7)
		binary.BigEndian.PutUint16(b[l3+4:], uint16(len(b)-l3-40))
		f.checksums(b, l3)
	case 0x0806, 0x8035:
		arp := make([]byte, 28)
		binary.BigEndian.PutUint16(arp[0:], 1)
		binary.BigEndian.PutUint16(arp[2:], 0x0800)
		arp[4], arp[5] = 6, 4
		binary.BigEndian.PutUint16(arp[6:], f.arpOp)
		if f.arpOp == 1 || f.arpOp == 2 {
			copy(arp[8:], mac6(f.sha))
			copy(arp[14:], addrBytes(f.sip, 4))
			copy(arp[18:], mac6(f.tha))
			copy(arp[24:], addrBytes(f.tip, 4))
		}
		b = append(b, arp...)
	}
	return b
}

func (f *dummyFlow) composeL4(b []byte, l7 int) []byte {
	var h []byte
	switch f.l4 {
	case "tcp":
		h = make([]byte, 20)
		binary.BigEndian.PutUint16(h[0:], f.tpSrc)
		binary.BigEndian.PutUint16(h[2:], f.tpDst)
		binary.BigEndian.PutUint16(h[12:], 5<<12|f.tcpFlags&0x0fff)
		if f.tcpFlags&(tcpFlagNames["syn"]|tcpFlagNames["fin"]|tcpFlagNames["rst"]) != 0 {
			l7 = 0
		}
	case "udp":
		h = make([]byte, 8)
		binary.BigEndian.PutUint16(h[0:], f.tpSrc)
		binary.BigEndian.PutUint16(h[2:], f.tpDst)
		binary.BigEndian.PutUint16(h[4:], uint16(8+l7))
	case "sctp":
		h = make([]byte, 12)
		binary.BigEndian.PutUint16(h[0:], f.tpSrc)
		binary.BigEndian.PutUint16(h[2:], f.tpDst)
		l7 = 0
	case "icmp", "icmpv6":
		h = make([]byte, 8)
		h[0], h[1] = byte(f.tpSrc), byte(f.tpDst)
		echo := h[0] == 8 || h[0] == 0
		if f.l4 == "icmpv6" {
			echo = h[0] == 128 || h[0] == 129
			if h[1] == 0 && (h[0] == 135 || h[0] == 136) {
				h = append(h, make([]byte, 16)...) // nd_target ::, no nd() key
			}
		}
		if !echo || h[1] != 0 {
			l7 = 0
		}
	default:
		return b
	}
	b = append(b, h...)
	for i := range l7 {
		b = append(b, byte(i))
	}
	return b
}

// checksums fills the IPv4 header's checksum and the L4 checksum of the
// IP packet at l3, as flow_compose_l4_csum (UDP's length is left as set).
func (f *dummyFlow) checksums(b []byte, l3 int) {
	var l4 int
	var pseudo []byte
	if f.ethType == 0x0800 {
		ip := b[l3 : l3+20]
		ip[10], ip[11] = 0, 0
		binary.BigEndian.PutUint16(ip[10:], offload.Checksum(ip, 0))
		l4 = l3 + 20
		pseudo = append(append(pseudo, ip[12:20]...), 0, f.proto)
		pseudo = binary.BigEndian.AppendUint16(pseudo, uint16(len(b)-l4))
	} else {
		l4 = l3 + 40
		pseudo = append(pseudo, b[l3+8:l3+40]...)
		pseudo = binary.BigEndian.AppendUint32(pseudo, uint32(len(b)-l4))
		pseudo = append(pseudo, 0, 0, 0, f.proto)
	}
	if f.fragLt {
		return
	}
	seg := b[l4:]
	at := map[string]int{"tcp": 16, "udp": 6, "icmp": 2, "icmpv6": 2}
	off, ok := at[f.l4]
	if !ok {
		return
	}
	seg[off], seg[off+1] = 0, 0
	if f.l4 == "icmp" {
		binary.BigEndian.PutUint16(seg[off:], offload.Checksum(seg, 0))
		return
	}
	binary.BigEndian.PutUint16(seg[off:], offload.Checksum(append(pseudo, seg...), 0))
}

// expand pads b with zeros to size bytes and mends the lengths and
// checksums, as OVS's packet_expand.
func (f *dummyFlow) expand(b []byte, size int) []byte {
	extra := size - len(b)
	b = append(b, make([]byte, extra)...)
	l3 := 14 + 4*len(f.tags)
	switch f.ethType {
	case dlTypeNone:
		binary.BigEndian.PutUint16(b[l3-2:], uint16(len(b)))
	case 0x0800:
		binary.BigEndian.PutUint16(b[l3+2:], uint16(len(b)-l3))
		f.expandUDP(b, l3+20, extra)
		f.checksums(b, l3)
	case 0x86dd:
		binary.BigEndian.PutUint16(b[l3+4:], uint16(len(b)-l3-40))
		f.expandUDP(b, l3+40, extra)
		f.checksums(b, l3)
	}
	return b
}

// expandUDP sets UDP's length as packet_expand does: the new L4 length
// plus the padding once more (sic), which OVS's tests have as expected
// output.
func (f *dummyFlow) expandUDP(b []byte, l4, extra int) {
	if f.l4 == "udp" && !f.fragLt {
		binary.BigEndian.PutUint16(b[l4+4:], uint16(len(b)-l4+extra))
	}
}

// parseDummyLen parses --len's value.
func parseDummyLen(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < ethTotalMin {
		// strtol gives 0 for garbage, which is too small too.
		return 0, errors.New("too small packet len")
	}
	if n > 65535 {
		return 0, fmt.Errorf("bad packet or flow syntax")
	}
	return n, nil
}

// ODPFlowMatch parses a datapath flow key as ParseDummyFlow does and
// returns its in_port (ok false if it names none) and the rest as an
// OpenFlow match (ovs-ofctl syntax, no in_port), for ofproto/trace's
// datapath-flow form.
func ODPFlowMatch(s string) (inPort uint32, ok bool, match string, err error) {
	f := &dummyFlow{ethType: dlTypeNone}
	if err := f.parseKeys(s, 0, len(s), 0); err != nil {
		return 0, false, "", err
	}
	if m := regexp.MustCompile(`(?:^|,)\s*in_port\((\d+)\)`).FindStringSubmatch(s); m != nil {
		n, err := strconv.ParseUint(m[1], 10, 32)
		if err != nil {
			return 0, false, "", errFlowSyntax
		}
		inPort, ok = uint32(n), true
	}
	var b []string
	add := func(format string, args ...any) { b = append(b, fmt.Sprintf(format, args...)) }
	add("dl_src=%s,dl_dst=%s", net.HardwareAddr(mac6(f.src)), net.HardwareAddr(mac6(f.dst)))
	if len(f.tags) > 0 {
		add("vlan_tci=0x%04x", f.tags[0]&0xffff)
	}
	if f.ethType != dlTypeNone {
		add("dl_type=0x%04x", f.ethType)
	}
	frag := "no"
	switch {
	case f.fragLt:
		frag = "later"
	case f.fragMF:
		frag = "first"
	}
	switch f.ethType {
	case 0x0800:
		add("nw_src=%s,nw_dst=%s", addrOr(f.src4, "0.0.0.0"), addrOr(f.dst4, "0.0.0.0"))
		add("nw_proto=%d,nw_tos=%d,nw_ecn=%d,nw_ttl=%d,nw_frag=%s", f.proto, f.tos&^3, f.tos&3, f.ttl, frag)
	case 0x86dd:
		add("ipv6_src=%s,ipv6_dst=%s,ipv6_label=0x%05x", addrOr(f.src6, "::"), addrOr(f.dst6, "::"), f.label)
		add("nw_proto=%d,nw_tos=%d,nw_ecn=%d,nw_ttl=%d,nw_frag=%s", f.proto, f.tos&^3, f.tos&3, f.ttl, frag)
	case 0x0806, 0x8035:
		add("arp_spa=%s,arp_tpa=%s,arp_op=%d,arp_sha=%s,arp_tha=%s", addrOr(f.sip, "0.0.0.0"), addrOr(f.tip, "0.0.0.0"),
			f.arpOp, net.HardwareAddr(mac6(f.sha)), net.HardwareAddr(mac6(f.tha)))
	}
	switch f.l4 {
	case "tcp", "udp", "sctp":
		add("tp_src=%d,tp_dst=%d", f.tpSrc, f.tpDst)
		if f.l4 == "tcp" {
			add("tcp_flags=0x%03x", f.tcpFlags)
		}
	case "icmp", "icmpv6":
		add("icmp_type=%d,icmp_code=%d", f.tpSrc, f.tpDst)
	}
	return inPort, ok, strings.Join(b, ","), nil
}

func addrOr(a netip.Addr, zero string) string {
	if !a.IsValid() {
		return zero
	}
	return a.String()
}
