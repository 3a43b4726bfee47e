package conntrack

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
)

// IP fragments are reassembled before tracking, as OVS's lib/ipf.c does:
// the tracker keeps a copy of each fragment until its datagram is whole,
// tracks the reassembled datagram, and the datapath then forwards the
// original fragments with the datagram's conntrack state (and NAT).

// Limits of reassembly, OVS's defaults and bounds (ipf.c): fragments
// other than the last must be at least the minimum size (their IP packet,
// headers included), at most maxFrags fragments are held in all, a
// datagram may take fragListTimeout to arrive whole. The minimum sizes
// and maxFrags are set with dpctl/ipf-set-min-frag and
// dpctl/ipf-set-max-nfrags.
const (
	DefaultMinFragSize4 = 1200
	DefaultMinFragSize6 = 1280
	DefaultMaxFrags     = 1000
	// MinFragSizeBound is the least minimum fragment size either family
	// takes; MaxFragsBound the most fragments that may be held.
	MinFragSizeBound = 400
	MaxFragsBound    = 5000
	fragListTimeout  = 15e9 // ns
	// fragPurgeDelay is how long after its expiry a datagram's fragments
	// that were not sent on are purged (OVS's IPF_FRAG_LIST_PURGE_TIME_ADJ).
	fragPurgeDelay = 10e9 // ns
	maxDatagram    = 65535
	maxV4Header    = 60
)

// ipfFamily is one IP family's reassembly settings and counters.
type ipfFamily struct {
	disabled bool
	minSize  int
	maxList  int // fragments in one list: IPv4's follows minSize, as in OVS
	IPFCounters
}

// IPFCounters are a family's fragment counters, OVS's (ipf.c): fragments
// taken for reassembly, handed on whole, sent on as invalid as their
// datagram did not arrive whole in time, refused as too small, refused as
// overlapping a held fragment, and purged (expired fragments no packet of
// their family came to send on within fragPurgeDelay).
type IPFCounters struct {
	Accepted, Completed, Expired, TooSmall, Overlap, Purged uint64
}

// IPFFamilyStatus is one family's settings and counters.
type IPFFamilyStatus struct {
	Enabled     bool
	MinFragSize int
	IPFCounters
}

// IPFStatus is the reassembler's state for dpctl/ipf-get-status.
type IPFStatus struct {
	MaxFrags, NFrags int
	V4, V6           IPFFamilyStatus
}

type fragKey struct {
	src, dst [16]byte
	id       uint32
	zone     uint16
	proto    uint8
	v6       bool
}

type fragment struct {
	frame      []byte // a copy of the whole frame
	off, n     int    // payload offset in the datagram, payload length
	data       int    // where the payload starts in frame
	last       bool
	hdrEnd     int // end of the headers to keep (first fragment)
	l3n        int // the IP packet's length, headers included
	port       uint32
	nextHdrOff int // IPv6: the offset of the next-header byte before the fragment header
}

type fragList struct {
	frags   []fragment
	total   int // payload length of the datagram, -1 until the last fragment came
	expires int64
}

// reassembler holds the fragment lists; one mutex, as fragments are rare
// and never on the path of other packets.
type reassembler struct {
	mu       sync.Mutex // guards all below
	lists    map[fragKey]*fragList
	n        int
	maxFrags int
	fam      [2]ipfFamily // IPv4, IPv6
	inited   bool
	// held is n, and nextExp by family a time no list of the family
	// expires before: a ct action looks without the lock whether any
	// list may have expired, and scans the lists at most once per
	// expiry.
	held    atomic.Int32
	nextExp [2]atomic.Int64
}

// family is k's family's settings, OVS's defaults until set.
func (r *reassembler) family(v6 bool) *ipfFamily {
	if !r.inited {
		r.inited = true
		r.maxFrags = DefaultMaxFrags
		r.fam[0] = ipfFamily{minSize: DefaultMinFragSize4, maxList: v4MaxList(DefaultMinFragSize4)}
		r.fam[1] = ipfFamily{minSize: DefaultMinFragSize6, maxList: 65535}
	}
	if v6 {
		return &r.fam[1]
	}
	return &r.fam[0]
}

// v4MaxList is the most fragments of minimum size an IPv4 datagram can be
// cut into, OVS's max_v4_frag_list_size.
func v4MaxList(size int) int {
	return (maxDatagram - maxV4Header + size - maxV4Header - 1) / (size - maxV4Header)
}

// SetIPFEnabled enables or disables reassembly for IPv4 or IPv6
// (dpctl/ipf-set-enabled, -disabled). Fragments of a disabled family go
// to tracking as they are, which finds them invalid, as OVS's conntrack
// does; fragments already held stay until whole or expired.
func (t *Tracker) SetIPFEnabled(v6, on bool) {
	r := &t.frags
	r.mu.Lock()
	r.family(v6).disabled = !on
	r.mu.Unlock()
}

// ErrIPFRange is a reassembly setting out of OVS's bounds; OVS reports
// it with errno 1.
var ErrIPFRange = errors.New("out of range")

// SetIPFMinFrag sets the least size (IP packet, headers included) of
// fragments other than the last (dpctl/ipf-set-min-frag); below
// MinFragSizeBound it is refused.
func (t *Tracker) SetIPFMinFrag(v6 bool, size uint32) error {
	if size < MinFragSizeBound {
		return ErrIPFRange
	}
	r := &t.frags
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.family(v6)
	f.minSize = int(min(size, 1<<31-1))
	if !v6 {
		f.maxList = v4MaxList(f.minSize)
	}
	return nil
}

// SetIPFMaxFrags sets how many fragments may be held in all
// (dpctl/ipf-set-max-nfrags); above MaxFragsBound it is refused.
func (t *Tracker) SetIPFMaxFrags(n uint32) error {
	if n > MaxFragsBound {
		return ErrIPFRange
	}
	r := &t.frags
	r.mu.Lock()
	r.family(false)
	r.maxFrags = int(n)
	r.mu.Unlock()
	return nil
}

// IPFStatus returns the reassembler's settings and counters.
func (t *Tracker) IPFStatus() IPFStatus {
	r := &t.frags
	r.mu.Lock()
	defer r.mu.Unlock()
	r.family(false)
	st := IPFStatus{MaxFrags: r.maxFrags, NFrags: r.n}
	for i, p := range []*IPFFamilyStatus{&st.V4, &st.V6} {
		f := &r.fam[i]
		*p = IPFFamilyStatus{Enabled: !f.disabled, MinFragSize: f.minSize, IPFCounters: f.IPFCounters}
	}
	return st
}

// IPFLists describes the held fragment lists as OVS's ipf-get-status -m
// does, one "(src=..,dst=..,...,state=..)" each. govs keys lists without
// the recirculation id (a datagram's fragments are reassembled at its
// first ct action), shown as 0.
func (t *Tracker) IPFLists() []string {
	r := &t.frags
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.lists))
	for k, l := range r.lists {
		var src, dst netip.Addr
		typ := 0x800
		if k.v6 {
			src, dst, typ = netip.AddrFrom16(k.src), netip.AddrFrom16(k.dst), 0x86dd
		} else {
			src, dst = netip.AddrFrom4([4]byte(k.src[:4])), netip.AddrFrom4([4]byte(k.dst[:4]))
		}
		first, last := false, false
		for _, f := range l.frags {
			first = first || f.off == 0
			last = last || f.last
		}
		state := "other frag"
		switch {
		case first && last:
			state = "first/last frag"
		case first:
			state = "first frag"
		case last:
			state = "last frag"
		}
		out = append(out, fmt.Sprintf("(src=%s,dst=%s,recirc_id=0,ip_id=%d,dl_type=0x%x,zone=%d,nw_proto=%d,num_fragments=%d,state=%s)",
			src, dst, k.id, typ, k.zone, k.proto, len(l.frags), state))
	}
	slices.Sort(out)
	return out
}

// fragInfo parses a fragment's IP header: its key, the payload offset in
// the datagram and in the frame, and whether more follow. ok is false for
// a frame that is not an IP fragment.
func fragInfo(b []byte, zone uint16) (k fragKey, f fragment, ok bool) {
	if len(b) < 14 {
		return k, f, false
	}
	off := 12
	typ := binary.BigEndian.Uint16(b[off:])
	if typ == 0x8100 || typ == 0x88a8 {
		if len(b) < 18 {
			return k, f, false
		}
		off += 4
		typ = binary.BigEndian.Uint16(b[off:])
	}
	l3 := off + 2
	k.zone = zone
	switch typ {
	case 0x0800:
		if len(b) < l3+20 || b[l3]>>4 != 4 {
			return k, f, false
		}
		h := b[l3:]
		ihl := int(h[0]&15) * 4
		tot := int(binary.BigEndian.Uint16(h[2:]))
		fo := binary.BigEndian.Uint16(h[6:])
		if fo&0x3fff == 0 || ihl < 20 || tot < ihl || l3+tot > len(b) {
			return k, f, false
		}
		copy(k.src[:4], h[12:16])
		copy(k.dst[:4], h[16:20])
		k.id, k.proto = uint32(binary.BigEndian.Uint16(h[4:])), h[9]
		f = fragment{off: int(fo&0x1fff) * 8, data: l3 + ihl, n: tot - ihl, last: fo&0x2000 == 0, hdrEnd: l3 + ihl, l3n: tot}
		return k, f, true
	case 0x86dd:
		// Only a fragment header right after the IPv6 header.
		if len(b) < l3+48 || b[l3]>>4 != 6 || b[l3+6] != IPProtoFragment {
			return k, f, false
		}
		h := b[l3:]
		plen := int(binary.BigEndian.Uint16(h[4:]))
		if plen < 8 || l3+40+plen > len(b) {
			return k, f, false
		}
		k.v6 = true
		copy(k.src[:], h[8:24])
		copy(k.dst[:], h[24:40])
		fh := h[40:48]
		k.proto, k.id = fh[0], binary.BigEndian.Uint32(fh[4:])
		fo := binary.BigEndian.Uint16(fh[2:])
		f = fragment{off: int(fo &^ 7), data: l3 + 48, n: plen - 8, last: fo&1 == 0, hdrEnd: l3 + 40, nextHdrOff: l3 + 6, l3n: 40 + plen}
		return k, f, true
	}
	return k, f, false
}

// IPProtoFragment is IPv6's fragment header.
const IPProtoFragment = 44

// IsFragment reports whether the frame b is an IPv4 or IPv6 fragment.
func IsFragment(b []byte) bool {
	_, _, ok := fragInfo(b, 0)
	return ok
}

// Defrag takes a fragment frame of zone. held reports whether the
// reassembler took it (it keeps a copy); a fragment it does not take goes
// to tracking as it is, which finds it invalid, as OVS's conntrack does
// with what its ipf.c leaves: fragments of a disabled family, too small,
// overlapping a held one, malformed, or over the limits. Until a taken
// fragment's datagram is whole Defrag returns nil; then it returns the
// datagram's fragments in offset order (the copies) and the reassembled
// frame.
func (t *Tracker) Defrag(now int64, b []byte, zone uint16, inPort uint32) (frags [][]byte, whole []byte, held bool) {
	k, f, ok := fragInfo(b, zone)
	if !ok {
		return nil, nil, false
	}
	r := &t.frags
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lists == nil {
		r.lists = map[fragKey]*fragList{}
	}
	fam := r.family(k.v6)
	if r.fam[0].disabled && r.fam[1].disabled {
		return nil, nil, false
	}
	// As in OVS, the size is checked (and counted) before whether the
	// family is enabled.
	if !f.last && f.l3n < fam.minSize {
		fam.TooSmall++
		return nil, nil, false
	}
	if fam.disabled {
		return nil, nil, false
	}
	if f.off+f.n > maxDatagram || (!f.last && f.n%8 != 0) || r.n >= r.maxFrags {
		return nil, nil, false
	}
	// A list that expired but was not sent on yet still takes fragments,
	// as in OVS.
	l := r.lists[k]
	if l == nil {
		l = &fragList{total: -1, expires: now + fragListTimeout}
		if e := &r.nextExp[b2i(k.v6)]; r.n == 0 || l.expires < e.Load() {
			e.Store(l.expires)
		}
		r.lists[k] = l
	}
	if len(l.frags) >= fam.maxList || (f.last && l.total >= 0) {
		return nil, nil, false
	}
	for _, o := range l.frags {
		if f.off < o.off+o.n && o.off < f.off+f.n {
			fam.Overlap++ // the fragment is refused, the list goes on, as in OVS
			return nil, nil, false
		}
	}
	f.frame, f.port = slices.Clone(b), inPort
	l.frags = append(l.frags, f)
	r.n++
	r.held.Store(int32(r.n))
	fam.Accepted++
	if f.last {
		l.total = f.off + f.n
	}
	if l.total < 0 {
		return nil, nil, true
	}
	have := 0
	for _, o := range l.frags {
		have += o.n
	}
	if have != l.total {
		return nil, nil, true
	}
	// Whole only if the fragments are contiguous: one beyond the last
	// fragment's end may make up the count; the list then waits, as
	// OVS's ipf_list_complete leaves it, until it expires.
	sorted := slices.SortedFunc(slices.Values(l.frags), func(a, b fragment) int { return a.off - b.off })
	end := 0
	for _, o := range sorted {
		if o.off != end {
			return nil, nil, true
		}
		end += o.n
	}
	r.drop(k, l)
	fam.Completed += uint64(len(l.frags))
	l.frags = sorted
	first := &l.frags[0]
	whole = make([]byte, 0, first.hdrEnd+l.total+8)
	whole = append(whole, first.frame[:first.hdrEnd]...)
	for _, o := range l.frags {
		whole = append(whole, o.frame[o.data:o.data+o.n]...)
	}
	l3 := vlanL3(whole)
	if !k.v6 {
		// The first fragment's header with the whole length, no flags.
		h := whole[l3:]
		ihl := int(h[0]&15) * 4
		binary.BigEndian.PutUint16(h[2:], uint16(ihl+l.total))
		binary.BigEndian.PutUint16(h[6:], 0)
		h[10], h[11] = 0, 0
		binary.BigEndian.PutUint16(h[10:], ^fold(sum(0, h[:ihl])))
	} else {
		h := whole[l3:]
		h[6] = k.proto // the fragment header is left out
		binary.BigEndian.PutUint16(h[4:], uint16(l.total))
	}
	for _, o := range l.frags {
		frags = append(frags, o.frame)
	}
	return frags, whole, true
}

// vlanL3 is the offset of the IP header in an Ethernet frame with at most
// one VLAN tag.
func vlanL3(b []byte) int {
	if t := binary.BigEndian.Uint16(b[12:]); t == 0x8100 || t == 0x88a8 {
		return 18
	}
	return 14
}

func (r *reassembler) drop(k fragKey, l *fragList) {
	r.n -= len(l.frags)
	r.held.Store(int32(r.n))
	delete(r.lists, k)
}

// HeldFragment is a fragment the reassembler gives back: a copy of its
// frame and the port it came in on.
type HeldFragment struct {
	Frame  []byte
	InPort uint32
}

// HoldsFragments reports whether the reassembler holds any fragment.
func (t *Tracker) HoldsFragments() bool { return t.frags.held.Load() != 0 }

// ExpiredFragments returns, in arrival order, the fragments of the IPv4
// (or, if v6, IPv6) datagrams that did not arrive whole in time, and
// forgets them. As OVS's ipf_send_expired_frags, a ct action of packets of
// that family sends them on with its packets, as invalid.
func (t *Tracker) ExpiredFragments(now int64, v6 bool) []HeldFragment {
	r := &t.frags
	next := &r.nextExp[b2i(v6)]
	if r.held.Load() == 0 || now < next.Load() {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []HeldFragment
	soonest := int64(1<<63 - 1)
	for k, l := range r.lists {
		switch {
		case k.v6 != v6:
		case l.expires <= now:
			for _, f := range l.frags {
				out = append(out, HeldFragment{f.frame, f.port})
			}
			r.family(v6).Expired += uint64(len(l.frags))
			r.drop(k, l)
		default:
			soonest = min(soonest, l.expires)
		}
	}
	next.Store(soonest)
	return out
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// sweep purges the datagrams that expired fragPurgeDelay ago and that no
// packet of their family came to send on.
func (r *reassembler) sweep(now int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, l := range r.lists {
		if l.expires+fragPurgeDelay <= now {
			r.family(k.v6).Purged += uint64(len(l.frags))
			r.drop(k, l)
		}
	}
}

// NATFragment applies to fragment frame b the translation that tracking
// its reassembled datagram with a gave md: addresses to every fragment,
// ports too to the first, whose transport checksum covers the datagram.
func (t *Tracker) NATFragment(b []byte, md *Meta, a *Action) {
	c := md.conn
	if c == nil || a.NAT == nil || c.nat == 0 {
		return
	}
	k, f, ok := fragInfo(b, md.Zone)
	if !ok {
		return
	}
	p := parsed{key: key{src: k.src, dst: k.dst, proto: k.proto, v6: k.v6}, l3: vlanL3(b), l4: f.data, end: f.data + f.n}
	if !k.v6 {
		p.ipv4HdrLen = f.data - p.l3
	}
	if f.off == 0 && (k.proto == protoTCP && f.n >= 20 || k.proto == protoUDP && f.n >= 8 || k.proto == protoICMPv6 && k.v6 && f.n >= 4) {
		p.l4Valid = true
	}
	var dummy Meta
	t.natPacket(b, &p, c, md.State&StateReply != 0, &dummy, false)
}
