package conntrack

import (
	"encoding/binary"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
)

// Application-level gateways (ct(alg=ftp|tftp)), as OVS's userspace
// conntrack: a connection committed with a helper is watched for the
// control messages that announce a data connection (FTP's PORT, EPRT,
// 227 and 229 replies; any TFTP request), each of which leaves an
// expectation; the data connection's first packet matches it and is
// +new+rel, with the parent's mark and label and, under NAT, the
// parent's translation. With nat, FTP addresses in the payload are
// rewritten to the translated ones and the TCP sequence numbers after
// them shifted by the change in length.

// Helpers a ct action may name (OVS_CT_ATTR_HELPER).
const (
	HelperFTP  = "ftp"
	HelperTFTP = "tftp"
)

// alg kinds of a connection or of a packet's control channel.
const (
	algNone uint8 = iota
	algFTP
	algTFTP
)

// Well-known control ports (OVS's get_alg_ctl_type).
const (
	ftpPort  = 21
	tftpPort = 69
)

// ftpMsgMax is how much of a control segment's payload is examined for
// a command, as OVS's LARGEST_FTP_MSG_OF_INTEREST.
const ftpMsgMax = 128

// maxExpectations bounds the expectation table: a hostile control
// channel can announce ports as fast as it sends segments, and each
// expectation lives until its parent goes.
const maxExpectations = 4096

func helperKind(h string) (uint8, bool) {
	switch h {
	case "":
		return algNone, true
	case HelperFTP:
		return algFTP, true
	case HelperTFTP:
		return algTFTP, true
	}
	return algNone, false
}

// algCtl is the control channel a packet belongs to by its ports,
// whatever its connection's helper.
func algCtl(p *parsed) uint8 {
	switch {
	case p.proto == protoTCP && p.l4Valid && (p.sport == ftpPort || p.dport == ftpPort):
		return algFTP
	case p.proto == protoUDP && p.l4Valid && p.dport == tftpPort:
		return algTFTP
	}
	return algNone
}

// algConn is a connection's ALG state; guarded by its conn's mu, except
// kind, related and parent, which are set before it is inserted.
type algConn struct {
	kind    uint8 // the helper the connection was committed with
	related bool  // created from an expectation
	parent  key   // the parent's original key, if related
	// skew is how much the FTP rewrites have lengthened the stream in
	// direction skewReply so far: later sequence numbers that way, and
	// acknowledgements the other way, are shifted by it.
	skew      int32
	skewReply bool
}

// expectation is an announced data connection (OVS's alg_exp_node). Its
// key has source port 0: the data connection may come from any port.
type expectation struct {
	key    key
	parent *conn
	// parentKey, mark and label are what the related connection shows.
	parentKey key
	mark      uint32
	label     Label
	// natAddr is the address the related connection's reply goes to
	// (natDst) or comes from; its translation when the ct action has nat.
	natAddr [16]byte
	natDst  bool
}

// expTable holds the expectations.
type expTable struct {
	n  atomic.Int32 // len(m), read without mu on every new connection
	mu sync.Mutex   // guards m
	m  map[key]*expectation
	// refused counts expectations not created because the table is full.
	refused atomic.Uint64
}

func (e *expTable) lookup(k key) *expectation {
	if e.n.Load() == 0 {
		return nil
	}
	k.sport = 0
	e.mu.Lock()
	defer e.mu.Unlock()
	x := e.m[k]
	if x != nil && x.parent.dead.Load() {
		delete(e.m, k)
		e.n.Add(-1)
		return nil
	}
	return x
}

func (e *expTable) add(x *expectation) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.m[x.key]; ok {
		return
	}
	if len(e.m) >= maxExpectations {
		e.refused.Add(1)
		return
	}
	if e.m == nil {
		e.m = make(map[key]*expectation)
	}
	e.m[x.key] = x
	e.n.Add(1)
}

func (e *expTable) remove(x *expectation) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m[x.key] == x {
		delete(e.m, x.key)
		e.n.Add(-1)
	}
}

// sweep drops the expectations whose parent is gone or expired.
func (e *expTable) sweep(now int64) {
	if e.n.Load() == 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for k, x := range e.m {
		if x.parent.dead.Load() || x.parent.expires.Load() <= now {
			delete(e.m, k)
			e.n.Add(-1)
		}
	}
}

// Expectations returns how many expectations the table holds.
func (t *Tracker) Expectations() int { return int(t.exps.n.Load()) }

// expect records the data connection a control packet of parent
// announced on port, as OVS's expectation_create: reply says the packet
// went the reply way (the announcing end is the responder).
func (t *Tracker) expect(parent *conn, port uint16, reply bool) {
	x := &expectation{parent: parent, parentKey: parent.orig, mark: parent.mark, label: parent.label}
	k := key{zone: parent.orig.zone, proto: parent.orig.proto, v6: parent.orig.v6, dport: port}
	if reply {
		// The originator connects to the responder's announced port.
		k.src, k.dst = parent.orig.src, parent.orig.dst
		x.natDst, x.natAddr = true, parent.reply.dst
		if parent.nat&StateDstNAT != 0 {
			x.natDst, x.natAddr = false, parent.reply.src
		}
	} else {
		// The responder connects back to the originator.
		k.src, k.dst = parent.reply.src, parent.reply.dst
		x.natAddr = parent.orig.src
		if parent.nat&StateDstNAT != 0 {
			x.natDst, x.natAddr = true, parent.orig.dst
		}
	}
	x.key = k
	t.exps.add(x)
}

// relate makes c, a new connection matching x, its related connection;
// with nat (the ct action has one) it takes the parent's translation.
// It reports whether c is NATed, in which case its reply key is set.
func relate(c *conn, x *expectation, nat bool) bool {
	c.alg.related = true
	c.alg.parent = x.parentKey
	c.mark, c.label = x.mark, x.label
	if !nat {
		return false
	}
	if x.natDst {
		c.reply.dst = x.natAddr
		c.nat = StateSrcNAT
	} else {
		c.reply.src = x.natAddr
		c.nat = StateDstNAT
	}
	return true
}

// algBefore shifts the acknowledgement of an FTP control packet going
// against the skewed direction back into its receiver's sequence space,
// before the packet is tracked (OVS's conn_update_state_alg). As OVS,
// only a ct action with nat shifts.
func (t *Tracker) algBefore(b []byte, p *parsed, c *conn, reply, nat, partial bool) {
	if !nat || algCtl(p) != algFTP {
		return
	}
	c.mu.Lock()
	skew, dir := c.alg.skew, c.alg.skewReply
	c.mu.Unlock()
	if skew == 0 || reply == dir || p.tcpFlags&tcpACK == 0 {
		return
	}
	p.ack = setSeq(b, p, 8, p.ack-uint32(skew), partial)
}

// algAfter runs the connection's helper on a packet that was tracked (and
// NATed) into c: an FTP control message may announce a data connection,
// its address is rewritten under NAT and the sequence numbers shifted; a
// TFTP request announces the reply. It returns the frame's new length,
// and whether the packet is invalid: a malformed announcement, or one of
// another host's address (OVS's CT_FTP_CTL_INVALID).
func (t *Tracker) algAfter(b []byte, p *parsed, c *conn, reply bool, nat, partial bool) (int, bool) {
	ctl := algCtl(p)
	n := len(b)
	// kind is fixed before c is inserted; skew only moves under an FTP
	// helper.
	if ctl == algNone || c.alg.kind == algNone {
		return n, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if ctl == algTFTP {
		if c.alg.kind == algTFTP && !reply {
			t.expect(c, c.reply.dport, reply)
		}
		return n, false
	}
	var delta int
	if c.alg.kind == algFTP && p.payload > 0 {
		payload := b[p.l4+p.tcpHdrLen : p.end]
		m, cmd, ok := parseFTP(payload[:min(len(payload), ftpMsgMax)], p.v6)
		if cmd && (!ok || !m.valid(c, reply)) {
			return n, true
		}
		if ok {
			t.expect(c, m.port, reply)
			if nat && m.addrLen > 0 {
				n, delta = rewriteFTP(b, p, m, c, reply)
			}
		}
	}
	if nat && c.alg.skew != 0 && reply == c.alg.skewReply {
		setSeq(b[:n], p, 4, p.seq+uint32(c.alg.skew), partial)
	}
	if delta != 0 {
		if c.alg.skew == 0 {
			c.alg.skewReply = reply
		}
		if reply == c.alg.skewReply {
			c.alg.skew += int32(delta)
		}
		tcpChecksum(b[:n], p, partial)
	}
	return n, false
}

// setSeq writes v at the TCP header's offset off (4 seq, 8 ack),
// adjusting the checksum (a partial one does not cover it), and returns v.
func setSeq(b []byte, p *parsed, off int, v uint32, partial bool) uint32 {
	f := b[p.l4+off : p.l4+off+4]
	old := binary.BigEndian.Uint32(f)
	diff := uint32(^uint16(old>>16)) + uint32(v>>16) + uint32(^uint16(old)) + uint32(v&0xffff)
	binary.BigEndian.PutUint32(f, v)
	if !partial {
		adjust(b[p.l4+16:], diff, false)
	}
	return v
}

// ftpMsg is an FTP control message that announces a data connection.
type ftpMsg struct {
	port uint16
	// addr is the announced address, at payload[addrOff:addrOff+addrLen]
	// in the message's own notation; addrLen is 0 when the message
	// carries none (229 replies).
	addr             netip.Addr
	addrOff, addrLen int
	// comma: the address is written a,b,c,d (PORT and 227).
	comma bool
	// active: the announcing end will be connected to (PORT, EPRT).
	active bool
}

// parseFTP parses a control message: "PORT a,b,c,d,p1,p2", "227 ...
// (a,b,c,d,p1,p2)", "EPRT |af|addr|port|", "229 ... (|||port|)". It
// accepts both families for the extended forms and the IPv4 ones only on
// IPv4. cmd says msg is one of these, ok that it parsed.
func parseFTP(msg []byte, v6 bool) (m ftpMsg, cmd, ok bool) {
	switch {
	case !v6 && hasPrefixFold(msg, "PORT "):
		m.active = true
		m, ok = parseFTPComma(msg, 5, m)
	case !v6 && hasPrefixFold(msg, "227 "):
		m, ok = parseFTPComma(msg, 4, m)
	case hasPrefixFold(msg, "EPRT "):
		m.active = true
		m, ok = parseEPRT(msg, v6, m)
	case hasPrefixFold(msg, "229 "):
		m, ok = parseEPSV(msg, m)
	default:
		return m, false, false
	}
	return m, true, ok
}

func hasPrefixFold(b []byte, s string) bool {
	if len(b) < len(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := b[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// parseFTPComma parses six comma-separated numbers starting at the first
// digit at or after i.
func parseFTPComma(msg []byte, i int, m ftpMsg) (ftpMsg, bool) {
	for i < len(msg) && !isDigit(msg[i]) {
		if msg[i] == '\r' || msg[i] == '\n' {
			return m, false
		}
		i++
	}
	var v [6]int
	start := i
	for n := 0; n < 6; n++ {
		if n > 0 {
			if i >= len(msg) || msg[i] != ',' {
				return m, false
			}
			i++
		}
		d := i
		for i < len(msg) && isDigit(msg[i]) && i-d < 3 {
			v[n] = v[n]*10 + int(msg[i]-'0')
			i++
		}
		if i == d || v[n] > 255 {
			return m, false
		}
		if n == 3 {
			m.addrOff, m.addrLen = start, i-start
		}
	}
	if i < len(msg) && isDigit(msg[i]) {
		return m, false
	}
	m.addr = netip.AddrFrom4([4]byte{byte(v[0]), byte(v[1]), byte(v[2]), byte(v[3])})
	m.port = uint16(v[4]<<8 | v[5])
	m.comma = true
	return m, m.port != 0
}

// parseEPRT parses "EPRT <d>af<d>addr<d>port<d>" (RFC 2428).
func parseEPRT(msg []byte, v6 bool, m ftpMsg) (ftpMsg, bool) {
	i := 5
	if i >= len(msg) {
		return m, false
	}
	d := msg[i]
	if d < 33 || d > 126 || isDigit(d) {
		return m, false
	}
	fields := make([][2]int, 0, 3)
	s := i + 1
	for j := s; j < len(msg) && len(fields) < 3; j++ {
		if msg[j] == d {
			fields = append(fields, [2]int{s, j})
			s = j + 1
		} else if msg[j] == '\r' || msg[j] == '\n' {
			break
		}
	}
	if len(fields) != 3 {
		return m, false
	}
	af := string(msg[fields[0][0]:fields[0][1]])
	if af != "1" && af != "2" || (af == "2") != v6 {
		return m, false
	}
	a, err := netip.ParseAddr(string(msg[fields[1][0]:fields[1][1]]))
	if err != nil || a.Is6() != v6 || a.Zone() != "" {
		return m, false
	}
	port, ok := parsePort(msg[fields[2][0]:fields[2][1]])
	if !ok {
		return m, false
	}
	m.addr, m.addrOff, m.addrLen, m.port = a, fields[1][0], fields[1][1]-fields[1][0], port
	return m, true
}

// parseEPSV parses "229 text (<d><d><d>port<d>)".
func parseEPSV(msg []byte, m ftpMsg) (ftpMsg, bool) {
	i := 4
	for i < len(msg) && msg[i] != '(' {
		if msg[i] == '\r' || msg[i] == '\n' {
			return m, false
		}
		i++
	}
	if i+5 > len(msg) {
		return m, false
	}
	d := msg[i+1]
	if msg[i+2] != d || msg[i+3] != d || isDigit(d) {
		return m, false
	}
	j := i + 4
	e := j
	for e < len(msg) && isDigit(msg[e]) {
		e++
	}
	if e >= len(msg) || msg[e] != d {
		return m, false
	}
	port, ok := parsePort(msg[j:e])
	if !ok {
		return m, false
	}
	m.port = port
	return m, true
}

func parsePort(s []byte) (uint16, bool) {
	if len(s) == 0 || len(s) > 5 {
		return 0, false
	}
	v, err := strconv.Atoi(string(s))
	if err != nil || v <= 0 || v > 65535 {
		return 0, false
	}
	return uint16(v), true
}

// addrOf is the netip form of a key address.
func keyAddr(a [16]byte, v6 bool) netip.Addr {
	if v6 {
		return netip.AddrFrom16(a)
	}
	return netip.AddrFrom4([4]byte(a[:4]))
}

// repl is the address a message's announced address becomes on the way
// through (OVS's v4_addr_rep): what the other end knows the announcer as.
func (m *ftpMsg) repl(c *conn, reply bool) [16]byte {
	if reply {
		return c.orig.dst
	}
	return c.reply.dst
}

// valid checks that an announced address is the announcer's own, before
// or after translation, as OVS does against PORT bouncing (a client
// announcing a third host).
func (m *ftpMsg) valid(c *conn, reply bool) bool {
	if m.addrLen == 0 {
		return true
	}
	own := c.orig.src
	if reply {
		own = c.reply.src
	}
	return m.addr == keyAddr(own, c.orig.v6) || m.addr == keyAddr(m.repl(c, reply), c.orig.v6)
}

// rewriteFTP replaces the announced address in the frame with the one the
// other end knows the announcer as, growing or shrinking the frame within
// b's capacity, and fixes the IP length. It returns the frame's new
// length and the change.
func rewriteFTP(b []byte, p *parsed, m ftpMsg, c *conn, reply bool) (int, int) {
	a := keyAddr(m.repl(c, reply), c.orig.v6)
	if a == m.addr {
		return len(b), 0
	}
	var s string
	if m.comma {
		v := a.As4()
		s = strconv.Itoa(int(v[0])) + "," + strconv.Itoa(int(v[1])) + "," + strconv.Itoa(int(v[2])) + "," + strconv.Itoa(int(v[3]))
	} else {
		s = a.String()
	}
	delta := len(s) - m.addrLen
	n := len(b) + delta
	if !p.resizable || n > cap(b) || p.end != len(b) {
		// A caller that cannot take a new length, no room, or
		// link-layer padding after the packet: leave the message as it
		// is (OVS warns of an unsupported MTU).
		return len(b), 0
	}
	b = b[:max(n, len(b))]
	at := p.l4 + p.tcpHdrLen + m.addrOff
	copy(b[at+len(s):], b[at+m.addrLen:p.end])
	copy(b[at:], s)
	p.end += delta
	p.payload += delta
	if p.v6 {
		binary.BigEndian.PutUint16(b[p.l3+4:], uint16(p.end-p.l3-40))
	} else {
		h := b[p.l3 : p.l3+p.ipv4HdrLen]
		binary.BigEndian.PutUint16(h[2:], uint16(p.end-p.l3))
		h[10], h[11] = 0, 0
		binary.BigEndian.PutUint16(h[10:], ^fold(sum(0, h)))
	}
	return n, delta
}

// tcpChecksum recomputes a TCP checksum whole, or, if partial, the
// pseudo-header's sum the output completes.
func tcpChecksum(b []byte, p *parsed, partial bool) {
	seg := b[p.l4:p.end]
	seg[16], seg[17] = 0, 0
	var s uint32
	if p.v6 {
		s = pseudoSum(p, uint32(len(seg)))
	} else {
		s = sum(0, b[p.l3+12:p.l3+20]) + uint32(protoTCP) + uint32(len(seg))
	}
	if partial {
		binary.BigEndian.PutUint16(seg[16:], fold(s))
		return
	}
	binary.BigEndian.PutUint16(seg[16:], ^fold(sum(s, seg)))
}
