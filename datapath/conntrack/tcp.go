package conntrack

// TCP states of one peer, as OVS's CT_DPIF_TCPS_* (lib/ct-dpif.h); the
// order matters, the tracker compares them.
type tcpState uint8

const (
	tcpsClosed tcpState = iota
	tcpsListen
	tcpsSynSent
	tcpsSynRecv
	tcpsEstablished
	tcpsCloseWait
	tcpsFinWait1
	tcpsClosing
	tcpsLastAck
	tcpsFinWait2
	tcpsTimeWait
)

var tcpStateNames = [...]string{"CLOSED", "LISTEN", "SYN_SENT", "SYN_RECV", "ESTABLISHED",
	"CLOSE_WAIT", "FIN_WAIT_1", "CLOSING", "LAST_ACK", "FIN_WAIT_2", "TIME_WAIT"}

func (s tcpState) String() string {
	if int(s) < len(tcpStateNames) {
		return tcpStateNames[s]
	}
	return "UNKNOWN"
}

// Window scale bookkeeping, as in OVS (and pf, which it follows).
const (
	tcpMaxWscale  = 14
	wscaleFlag    = 0x80 // the peer sent a window scale option
	wscaleUnknown = 0x40 // picked up mid-stream: be liberal
	wscaleMask    = 0x0f
	maxAckWindow  = 0xffff + 1500
	tcpOptEOL     = 0
	tcpOptNOP     = 1
	tcpOptWindow  = 3
)

type tcpPeer struct {
	seqlo, seqhi uint32
	maxWin       uint32
	state        tcpState
	wscale       uint8
}

// tcpConn is the sequence tracking of one TCP connection: peer[0] is the
// originator.
type tcpConn struct {
	peer [2]tcpPeer
}

func seqLT(a, b uint32) bool  { return int32(a-b) < 0 }
func seqGT(a, b uint32) bool  { return int32(a-b) > 0 }
func seqGEQ(a, b uint32) bool { return int32(a-b) >= 0 }

// tcpInvalidFlags rejects flag combinations no stack sends.
func tcpInvalidFlags(f uint16) bool {
	if f&tcpSYN != 0 {
		if f&(tcpRST|tcpFIN) != 0 {
			return true
		}
	} else if f&(tcpACK|tcpRST) == 0 {
		return true
	}
	if f&tcpACK == 0 && f&(tcpFIN|tcpPSH|tcpURG) != 0 {
		return true
	}
	return false
}

func tcpValidNew(p *parsed) bool {
	f := p.tcpFlags
	// A SYN|ACK does not open a connection: only a SYN or a packet of
	// an established stream does.
	return !tcpInvalidFlags(f) && !(f&tcpSYN != 0 && f&tcpACK != 0)
}

func tcpWscale(b []byte, p *parsed) uint8 {
	opt := b[p.l4+20 : p.l4+p.tcpHdrLen]
	var ws uint8
	for len(opt) >= 3 {
		switch opt[0] {
		case tcpOptEOL:
			return ws
		case tcpOptNOP:
			opt = opt[1:]
			continue
		case tcpOptWindow:
			ws = min(opt[2], tcpMaxWscale) | wscaleFlag
		}
		l := int(opt[1])
		if l < 2 {
			l = 2
		}
		if l > len(opt) {
			break
		}
		opt = opt[l:]
	}
	return ws
}

func (c *tcpConn) init(b []byte, p *parsed) timeout {
	src, dst := &c.peer[0], &c.peer[1]
	src.seqlo = p.seq
	src.seqhi = p.seq + uint32(p.payload) + 1
	if p.tcpFlags&tcpSYN != 0 {
		src.seqhi++
		src.wscale = tcpWscale(b, p)
	} else {
		src.wscale = wscaleUnknown
		dst.wscale = wscaleUnknown
	}
	src.maxWin = max(uint32(p.win), 1)
	if s := src.wscale & wscaleMask; s != 0 {
		src.maxWin = (src.maxWin + (1 << s) - 1) >> s
	}
	if p.tcpFlags&tcpFIN != 0 {
		src.seqhi++
	}
	dst.seqhi, dst.maxWin = 1, 1
	src.state, dst.state = tcpsSynSent, tcpsClosed
	return tmTCPFirst
}

// update tracks one packet of the connection; reply says it goes from the
// responder. It returns the outcome and the timeout now due, which is
// tmKeep when the packet must not refresh the connection.
func (c *tcpConn) update(b []byte, p *parsed, reply, liberal bool) (result, timeout) {
	si, di := 0, 1
	if reply {
		si, di = 1, 0
	}
	src, dst := &c.peer[si], &c.peer[di]
	flags := p.tcpFlags
	if tcpInvalidFlags(flags) {
		return resInvalid, tmKeep
	}
	if flags&(tcpSYN|tcpACK) == tcpSYN {
		if dst.state >= tcpsFinWait2 && src.state >= tcpsFinWait2 {
			src.state, dst.state = tcpsClosed, tcpsClosed
			return resNew, tmKeep
		}
		if src.state <= tcpsSynSent {
			// A retransmitted SYN.
			src.state = tcpsSynSent
			return resValidNew, tmTCPFirst
		}
	}
	var sws, dws uint8
	if src.wscale&wscaleFlag != 0 && dst.wscale&wscaleFlag != 0 && flags&tcpSYN == 0 {
		sws, dws = src.wscale&wscaleMask, dst.wscale&wscaleMask
	} else if src.wscale&wscaleUnknown != 0 && dst.wscale&wscaleUnknown != 0 && flags&tcpSYN == 0 {
		sws, dws = tcpMaxWscale, tcpMaxWscale
	}
	win := uint32(p.win)
	seq := p.seq
	origSeq := seq
	ack := p.ack
	end := seq + uint32(p.payload)
	checkAckSkew := true
	if src.state < tcpsSynSent {
		// The first packet from this end.
		if flags&tcpSYN != 0 {
			end++
			if dst.wscale&wscaleFlag != 0 {
				src.wscale = tcpWscale(b, p)
				if src.wscale&wscaleFlag != 0 {
					sws = src.wscale & wscaleMask
					win = (win + (1 << sws) - 1) >> sws
					dws = dst.wscale & wscaleMask
				} else {
					dst.maxWin <<= dst.wscale & wscaleMask
					dst.wscale = 0
				}
			}
		}
		if flags&tcpFIN != 0 {
			end++
		}
		src.seqlo = seq
		src.state = tcpsSynSent
		if src.seqhi == 1 || seqGEQ(end+max(1, dst.maxWin<<dws), src.seqhi) {
			src.seqhi = end + max(1, dst.maxWin<<dws)
			checkAckSkew = false
		}
		if win > src.maxWin {
			src.maxWin = win
		}
	} else {
		if flags&tcpSYN != 0 {
			end++
		}
		if flags&tcpFIN != 0 {
			end++
		}
	}
	if flags&tcpACK == 0 {
		ack = dst.seqlo
	} else if ack == 0 && flags&(tcpACK|tcpRST) == tcpACK|tcpRST {
		ack = dst.seqlo // broken stacks do not set ack on RST
	}
	if seq == end {
		// No data: ease the sequence checks.
		seq = src.seqlo
		end = seq
	}
	ackskew := int32(0)
	if checkAckSkew {
		ackskew = int32(dst.seqlo - ack)
	}
	inWindow := seqGEQ(src.seqhi, end) &&
		seqGEQ(seq, src.seqlo-(dst.maxWin<<dws)) &&
		ackskew >= -maxAckWindow &&
		int64(ackskew) <= int64(maxAckWindow)<<sws &&
		(flags&tcpRST == 0 || origSeq == src.seqlo || origSeq == src.seqlo+1 || origSeq+1 == src.seqlo)
	switch {
	case inWindow || liberal:
		slide(src, dst, win, end, ack, sws)
		if flags&tcpSYN != 0 && src.state < tcpsSynSent {
			src.state = tcpsSynSent
		}
		if flags&tcpFIN != 0 && src.state < tcpsClosing {
			src.state = tcpsClosing
		}
		if flags&tcpACK != 0 {
			if dst.state == tcpsSynSent {
				dst.state = tcpsEstablished
			} else if dst.state == tcpsClosing {
				dst.state = tcpsFinWait2
			}
		}
		if flags&tcpRST != 0 {
			src.state, dst.state = tcpsTimeWait, tcpsTimeWait
		}
		switch {
		case src.state >= tcpsFinWait2 && dst.state >= tcpsFinWait2:
			return resValid, tmTCPClosed
		case src.state >= tcpsClosing && dst.state >= tcpsClosing:
			return resValid, tmTCPFinWait
		case src.state < tcpsEstablished || dst.state < tcpsEstablished:
			return resValid, tmTCPOpening
		case src.state >= tcpsClosing || dst.state >= tcpsClosing:
			return resValid, tmTCPClosing
		}
		return resValid, tmTCPEstablished
	case (dst.state < tcpsSynSent || dst.state >= tcpsFinWait2 || src.state >= tcpsFinWait2) &&
		seqGEQ(src.seqhi+maxAckWindow, end) && seqGEQ(seq, src.seqlo-maxAckWindow):
		// Shotgunned SYNs, a stream picked up mid-way, stray packets
		// after a close: accepted, but the timeout is not refreshed, so
		// that a flood of them keeps nothing alive.
		slide(src, dst, win, end, ack, sws)
		if flags&tcpFIN != 0 && src.state < tcpsClosing {
			src.state = tcpsClosing
		}
		if flags&tcpRST != 0 {
			src.state, dst.state = tcpsTimeWait, tcpsTimeWait
		}
		return resValid, tmKeep
	}
	return resInvalid, tmKeep
}

// slide records an accepted packet from src: its window, the highest
// sequence number it sent, and what dst may now send.
func slide(src, dst *tcpPeer, win, end, ack uint32, sws uint8) {
	if src.maxWin < win {
		src.maxWin = win
	}
	if seqGT(end, src.seqlo) {
		src.seqlo = end
	}
	if seqGEQ(ack+(win<<sws), dst.seqhi) {
		dst.seqhi = ack + max(win<<sws, 1)
	}
}
