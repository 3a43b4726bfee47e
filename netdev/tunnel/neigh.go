package tunnel

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Neighbour cache ageing, as OVS's tnl-neigh-cache.c: entries live 900 s
// unless refreshed, and tnl/neigh/aging accepts 1..3600 s.
const (
	DefaultNeighAging = 900 * time.Second
	MaxNeighAging     = 3600 * time.Second
)

// NeighEntry is one learned (or set) neighbour: IP (16-byte form) to MAC,
// on the bridge it was seen on.
type NeighEntry struct {
	IP      netip.Addr
	MAC     net.HardwareAddr
	Bridge  string
	Expires time.Time
}

type neighKey struct {
	ip     netip.Addr
	bridge string
}

// NeighCache maps tunnel next hops to MAC addresses, learned from ARP and
// IPv6 neighbour discovery seen on underlay bridges. Safe for concurrent
// use.
type NeighCache struct {
	now func() time.Time

	mu      sync.Mutex
	aging   time.Duration
	entries map[neighKey]*NeighEntry
}

// NewNeighCache returns an empty cache reading the time from now (nil:
// time.Now).
func NewNeighCache(now func() time.Time) *NeighCache {
	if now == nil {
		now = time.Now
	}
	return &NeighCache{now: now, aging: DefaultNeighAging, entries: make(map[neighKey]*NeighEntry)}
}

// Set records ip at mac on bridge, refreshing an entry that already says
// so and replacing one that does not (tnl_neigh_set__).
func (c *NeighCache) Set(bridge string, ip netip.Addr, mac net.HardwareAddr) {
	k := neighKey{to16(ip), bridge}
	c.mu.Lock()
	defer c.mu.Unlock()
	exp := c.now().Add(c.aging)
	if e, ok := c.entries[k]; ok && slices.Equal(e.MAC, mac) {
		e.Expires = exp
		return
	}
	c.entries[k] = &NeighEntry{IP: k.ip, MAC: slices.Clone(mac), Bridge: bridge, Expires: exp}
}

// Lookup returns the MAC of ip on bridge; a hit keeps the entry alive for
// another ageing period, as OVS's lookup does.
func (c *NeighCache) Lookup(bridge string, ip netip.Addr) (net.HardwareAddr, bool) {
	k := neighKey{to16(ip), bridge}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if !ok {
		return nil, false
	}
	now := c.now()
	if !now.Before(e.Expires) {
		delete(c.entries, k)
		return nil, false
	}
	e.Expires = now.Add(c.aging)
	return slices.Clone(e.MAC), true
}

// Expire drops the entries whose time is up (tnl_neigh_cache_run).
func (c *NeighCache) Expire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expireLocked()
}

func (c *NeighCache) expireLocked() {
	now := c.now()
	for k, e := range c.entries {
		if !now.Before(e.Expires) {
			delete(c.entries, k)
		}
	}
}

// ExpireEvery calls Expire every d until ctx ends.
func (c *NeighCache) ExpireEvery(ctx context.Context, d time.Duration) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.Expire()
		}
	}
}

// Flush empties the cache.
func (c *NeighCache) Flush() {
	c.mu.Lock()
	clear(c.entries)
	c.mu.Unlock()
}

// Aging returns the ageing period.
func (c *NeighCache) Aging() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.aging
}

// SetAging changes the ageing period; entries that would outlive the new
// period from now are cut to it.
func (c *NeighCache) SetAging(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.aging = d
	limit := c.now().Add(d)
	for _, e := range c.entries {
		if e.Expires.After(limit) {
			e.Expires = limit
		}
	}
}

// Entries returns the live entries, IPv4 first, then by address and
// bridge (OVS lists them in hash order).
func (c *NeighCache) Entries() []NeighEntry {
	c.mu.Lock()
	c.expireLocked()
	out := make([]NeighEntry, 0, len(c.entries))
	for _, e := range c.entries {
		out = append(out, *e)
	}
	c.mu.Unlock()
	slices.SortFunc(out, func(a, b NeighEntry) int {
		return cmp.Or(cmp.Compare(v6(a.IP), v6(b.IP)), a.IP.Compare(b.IP), strings.Compare(a.Bridge, b.Bridge))
	})
	return out
}

// Snoop learns from one Ethernet frame received on bridge, as OVS's
// tnl_neigh_snoop: an ARP reply or gratuitous ARP maps the sender's IP to
// its hardware address; a neighbour advertisement with a target
// link-layer address option maps the target to it. It reports whether
// the frame taught anything. VLAN tags are skipped.
func (c *NeighCache) Snoop(bridge string, frame []byte) bool {
	ip, mac, ok := ParseNeighFrame(frame)
	if !ok {
		return false
	}
	c.Set(bridge, ip, mac)
	return true
}

// ParseNeighFrame extracts what Snoop learns from frame: no I/O.
func ParseNeighFrame(frame []byte) (netip.Addr, net.HardwareAddr, bool) {
	if len(frame) < 14 {
		return netip.Addr{}, nil, false
	}
	off := 12
	etype := binary.BigEndian.Uint16(frame[off:])
	for etype == 0x8100 || etype == 0x88a8 {
		off += 4
		if len(frame) < off+2 {
			return netip.Addr{}, nil, false
		}
		etype = binary.BigEndian.Uint16(frame[off:])
	}
	p := frame[off+2:]
	switch etype {
	case 0x0806:
		return parseARP(p)
	case 0x86dd:
		return parseNA(p)
	}
	return netip.Addr{}, nil, false
}

// parseARP takes an Ethernet/IPv4 ARP reply, or a gratuitous request or
// reply (sender IP = target IP), with a non-zero sender MAC.
func parseARP(p []byte) (netip.Addr, net.HardwareAddr, bool) {
	if len(p) < 28 || binary.BigEndian.Uint16(p[0:]) != 1 || binary.BigEndian.Uint16(p[2:]) != 0x0800 ||
		p[4] != 6 || p[5] != 4 {
		return netip.Addr{}, nil, false
	}
	op := binary.BigEndian.Uint16(p[6:])
	sha := net.HardwareAddr(p[8:14])
	spa := netip.AddrFrom4([4]byte(p[14:18]))
	tpa := netip.AddrFrom4([4]byte(p[24:28]))
	garp := spa == tpa && (op == 1 || op == 2)
	if (op != 2 && !garp) || isZeroMAC(sha) {
		return netip.Addr{}, nil, false
	}
	return spa, slices.Clone(sha), true
}

// parseNA takes an ICMPv6 neighbour advertisement (no extension headers)
// carrying a non-zero target link-layer address option.
func parseNA(p []byte) (netip.Addr, net.HardwareAddr, bool) {
	const ipv6Len, naLen = 40, 24
	if len(p) < ipv6Len+naLen || p[0]>>4 != 6 || p[6] != 58 {
		return netip.Addr{}, nil, false
	}
	plen := int(binary.BigEndian.Uint16(p[4:]))
	icmp := p[ipv6Len:]
	if plen < naLen || plen > len(icmp) {
		return netip.Addr{}, nil, false
	}
	icmp = icmp[:plen]
	if icmp[0] != 136 || icmp[1] != 0 {
		return netip.Addr{}, nil, false
	}
	target := netip.AddrFrom16([16]byte(icmp[8:24]))
	var tll net.HardwareAddr
	for opts := icmp[naLen:]; len(opts) > 0; {
		if len(opts) < 8 || opts[1] == 0 || int(opts[1])*8 > len(opts) {
			return netip.Addr{}, nil, false // malformed: OVS zeroes the fields
		}
		n := int(opts[1]) * 8
		if opts[0] == 2 && n == 8 {
			tll = net.HardwareAddr(opts[2:8])
		}
		opts = opts[n:]
	}
	if tll == nil || isZeroMAC(tll) {
		return netip.Addr{}, nil, false
	}
	return target, slices.Clone(tll), true
}

func isZeroMAC(m net.HardwareAddr) bool {
	for _, b := range m {
		if b != 0 {
			return false
		}
	}
	return true
}

// The tnl/neigh/* and tnl/arp/* unixctl commands, as OVS 3.1.

const NeighSetUsage = "BRIDGE IP MAC"

// ShowCmd is tnl/neigh/show and tnl/arp/show.
func (c *NeighCache) ShowCmd([]string) (string, error) {
	var b strings.Builder
	b.WriteString("IP                                            MAC                 Bridge\n")
	b.WriteString("==========================================================================\n")
	for _, e := range c.Entries() {
		fmt.Fprintf(&b, "%-46s%s   %s\n", formatMapped(e.IP), e.MAC, e.Bridge)
	}
	return b.String(), nil
}

// SetCmd is tnl/neigh/set and tnl/arp/set: BRIDGE IP MAC.
func (c *NeighCache) SetCmd(args []string) (string, error) {
	ip, err := netip.ParseAddr(args[1])
	if err != nil || ip.Zone() != "" {
		return "", errors.New("bad IP address")
	}
	mac, ok := parseMAC(args[2])
	if !ok {
		return "", errors.New("bad MAC address")
	}
	c.Set(args[0], ip, mac)
	return "OK\n", nil
}

// parseMAC parses six colon-separated groups of one or two hex digits.
func parseMAC(s string) (net.HardwareAddr, bool) {
	parts := strings.Split(s, ":")
	if len(parts) != 6 {
		return nil, false
	}
	mac := make(net.HardwareAddr, 6)
	for i, p := range parts {
		if len(p) < 1 || len(p) > 2 {
			return nil, false
		}
		v, err := strconv.ParseUint(p, 16, 8)
		if err != nil {
			return nil, false
		}
		mac[i] = byte(v)
	}
	return mac, true
}

// FlushCmd is tnl/neigh/flush and tnl/arp/flush.
func (c *NeighCache) FlushCmd([]string) (string, error) {
	c.Flush()
	return "OK\n", nil
}

// AgingCmd is tnl/neigh/aging and tnl/arp/aging [SECS].
func (c *NeighCache) AgingCmd(args []string) (string, error) {
	if len(args) == 0 {
		return fmt.Sprintf("%d\n", int64(c.Aging()/time.Second)), nil
	}
	n, err := strconv.ParseUint(args[0], 10, 32)
	if err != nil || n == 0 || time.Duration(n)*time.Second > MaxNeighAging {
		return "", errors.New("bad aging value")
	}
	c.SetAging(time.Duration(n) * time.Second)
	return "OK\n", nil
}

// NeighSolicitation returns the Ethernet frame of an IPv6 neighbour
// solicitation for target from src at smac, as OVS's compose_nd_ns: sent
// to target's solicited-node multicast address (and its MAC), hop limit
// 255, with a source link-layer address option.
func NeighSolicitation(smac net.HardwareAddr, src, target netip.Addr) []byte {
	const ipv6Len, nsLen, optLen = 40, 24, 8
	f := make([]byte, 14+ipv6Len+nsLen+optLen)
	t16, s16 := target.As16(), src.As16()
	sn := [16]byte{0: 0xff, 1: 0x02, 11: 0x01, 12: 0xff, 13: t16[13], 14: t16[14], 15: t16[15]}
	copy(f[0:6], []byte{0x33, 0x33, sn[12], sn[13], sn[14], sn[15]})
	copy(f[6:12], smac)
	binary.BigEndian.PutUint16(f[12:], 0x86dd)
	ip := f[14:]
	ip[0] = 0x60
	binary.BigEndian.PutUint16(ip[4:], nsLen+optLen)
	ip[6], ip[7] = 58, 255
	copy(ip[8:24], s16[:])
	copy(ip[24:40], sn[:])
	icmp := ip[ipv6Len:]
	icmp[0] = 135
	copy(icmp[8:24], t16[:])
	icmp[24], icmp[25] = 1, 1
	copy(icmp[26:32], smac)
	binary.BigEndian.PutUint16(icmp[2:], ^icmpv6Sum(ip[8:24], ip[24:40], icmp))
	return f
}

// icmpv6Sum is the ones' complement sum of the IPv6 pseudo-header and an
// ICMPv6 message (its checksum field as it stands).
func icmpv6Sum(src, dst, msg []byte) uint16 {
	s := uint32(len(msg)) + 58
	for _, b := range [][]byte{src, dst, msg} {
		for i := 0; i+1 < len(b); i += 2 {
			s += uint32(binary.BigEndian.Uint16(b[i:]))
		}
		if len(b)%2 == 1 {
			s += uint32(b[len(b)-1]) << 8
		}
	}
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return uint16(s)
}
