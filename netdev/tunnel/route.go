// Package tunnel holds what native tunnelling needs besides the datapath:
// govs' own routing table (OVS's lib/ovs-router.c), kept in step with the
// kernel's routes, and the tunnel neighbour cache (lib/tnl-neigh-cache.c).
package tunnel

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// AddrFunc lists the addresses (with their prefix lengths) of the network
// device named dev, as OVS's netdev_get_addr_list.
type AddrFunc func(dev string) ([]netip.Prefix, error)

// Route is one entry of the table. Addresses are kept in 16-byte form
// (IPv4 as v4-mapped IPv6) and Plen counts bits of that form, as OVS does.
type Route struct {
	Dst      netip.Addr // network address, host bits cleared
	Plen     int        // 0..128
	Mark     uint32     // pkt_mark the route applies to
	Dev      string     // output device (a bridge for user routes)
	GW       netip.Addr // gateway, IPv6Unspecified when none
	Src      netip.Addr // source address for packets routed here
	Priority int        // plen for kernel routes, plen+32 user, plen+64 local
	Local    bool       // the kernel's RTN_LOCAL
}

// cached reports whether the route came from the kernel (OVS's test in
// ovs_router_flush and ovs/route/show).
func (r *Route) cached() bool { return r.Priority == r.Plen || r.Local }

type routeKey struct {
	dst      netip.Addr
	plen     int
	mark     uint32
	priority int
}

// ErrNoSource is returned when no address of the output device lies in
// the route's destination (or gateway) network.
var ErrNoSource = errors.New("source address not available")

// Router is the routing table tunnels consult for their outer headers.
// It is safe for concurrent use.
type Router struct {
	addrs AddrFunc

	mu     sync.RWMutex
	routes map[routeKey]*Route
}

// NewRouter returns an empty table that selects source addresses with
// addrs.
func NewRouter(addrs AddrFunc) *Router {
	return &Router{addrs: addrs, routes: make(map[routeKey]*Route)}
}

// to16 returns a in 16-byte form.
func to16(a netip.Addr) netip.Addr { return netip.AddrFrom16(a.As16()) }

// mask16 clears the bits of a beyond plen.
func mask16(a netip.Addr, plen int) netip.Addr {
	p, _ := to16(a).Prefix(plen)
	return p.Addr()
}

// sourceFor picks the address of dev in the longest prefix that holds dst
// (ovs_router_get_netdev_source_address); an IPv4 dst only considers IPv4
// addresses.
func sourceFor(addrs AddrFunc, dst netip.Addr, dev string) (netip.Addr, error) {
	pfxs, err := addrs(dev)
	if err != nil {
		return netip.Addr{}, err
	}
	v4 := dst.Is4In6()
	best, bestLen := netip.Addr{}, -1
	for _, p := range pfxs {
		a := to16(p.Addr())
		bits := p.Bits()
		if p.Addr().Is4() {
			bits += 96
		} else if v4 {
			continue
		}
		if v4 && !a.Is4In6() {
			continue
		}
		if mask16(a, bits) == mask16(dst, bits) && bits > bestLen {
			best, bestLen = a, bits
		}
	}
	if bestLen < 0 {
		return netip.Addr{}, ErrNoSource
	}
	return best, nil
}

// insert adds or replaces the route for (dst/plen, mark, priority).
func (r *Router) insert(addrs AddrFunc, mark uint32, priority int, local bool, dst netip.Addr, plen int, dev string, gw netip.Addr) error {
	dst = to16(dst)
	if !gw.IsValid() {
		gw = netip.IPv6Unspecified()
	}
	gw = to16(gw)
	src, err := sourceFor(addrs, dst, dev)
	if err != nil && !gw.IsUnspecified() {
		src, err = sourceFor(addrs, gw, dev)
	}
	if err != nil {
		return err
	}
	rt := &Route{Dst: mask16(dst, plen), Plen: plen, Mark: mark, Dev: dev, GW: gw, Src: src, Priority: priority, Local: local}
	r.mu.Lock()
	r.routes[routeKey{rt.Dst, plen, mark, priority}] = rt
	r.mu.Unlock()
	return nil
}

// InsertKernel adds a route learned from the kernel (ovs_router_insert):
// priority plen, or plen+64 for a local route.
func (r *Router) InsertKernel(mark uint32, dst netip.Addr, plen int, local bool, dev string, gw netip.Addr) error {
	return r.insert(r.addrs, mark, kernelPriority(plen, local), local, dst, plen, dev, gw)
}

// kernelPriority is a kernel route's priority: longest prefix first, local
// routes before all others.
func kernelPriority(plen int, local bool) int {
	if local {
		return plen + 64
	}
	return plen
}

// InsertUser adds a route as ovs/route/add does: priority plen+32, so it
// wins over a kernel route for the same prefix.
func (r *Router) InsertUser(mark uint32, dst netip.Addr, plen int, dev string, gw netip.Addr) error {
	return r.insert(r.addrs, mark, plen+32, false, dst, plen, dev, gw)
}

// DeleteUser removes the user route for dst/plen and mark, reporting
// whether there was one.
func (r *Router) DeleteUser(mark uint32, dst netip.Addr, plen int) bool {
	k := routeKey{mask16(dst, plen), plen, mark, plen + 32}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.routes[k]; !ok {
		return false
	}
	delete(r.routes, k)
	return true
}

// FlushCached removes every route learned from the kernel, keeping the
// user's (ovs_router_flush).
func (r *Router) FlushCached() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, rt := range r.routes {
		if rt.cached() {
			delete(r.routes, k)
		}
	}
}

// Lookup returns the highest-priority route for dst under mark.
func (r *Router) Lookup(mark uint32, dst netip.Addr) (Route, bool) {
	dst = to16(dst)
	r.mu.RLock()
	defer r.mu.RUnlock()
	var best *Route
	for _, rt := range r.routes {
		if rt.Mark != mark || mask16(dst, rt.Plen) != rt.Dst {
			continue
		}
		if best == nil || rt.Priority > best.Priority || (rt.Priority == best.Priority && rt.Plen > best.Plen) {
			best = rt
		}
	}
	if best == nil {
		return Route{}, false
	}
	return *best, true
}

// Routes returns the table in ovs/route/show's order: OVS walks its
// classifier one subtable (prefix length) at a time, subtables by their
// highest priority; within one we sort by priority, then address (OVS's
// order there is its hash order).
func (r *Router) Routes() []Route {
	r.mu.RLock()
	out := make([]Route, 0, len(r.routes))
	maxPrio := map[int]int{}
	for _, rt := range r.routes {
		out = append(out, *rt)
		maxPrio[rt.Plen] = max(maxPrio[rt.Plen], rt.Priority)
	}
	r.mu.RUnlock()
	slices.SortFunc(out, func(a, b Route) int {
		return cmp.Or(
			cmp.Compare(maxPrio[b.Plen], maxPrio[a.Plen]),
			cmp.Compare(a.Plen, b.Plen),
			cmp.Compare(b.Priority, a.Priority),
			cmp.Compare(v6(a.Dst), v6(b.Dst)),
			a.Dst.Compare(b.Dst),
			cmp.Compare(a.Mark, b.Mark))
	})
	return out
}

func v6(a netip.Addr) int {
	if a.Is4In6() {
		return 0
	}
	return 1
}

// formatMapped prints a as OVS's ipv6_format_mapped: IPv4 for v4-mapped.
func formatMapped(a netip.Addr) string {
	if !a.IsValid() {
		return "::"
	}
	return a.Unmap().String()
}

// Show is ovs/route/show's text.
func (r *Router) Show() string {
	var b strings.Builder
	b.WriteString("Route Table:\n")
	for _, rt := range r.Routes() {
		if rt.cached() {
			b.WriteString("Cached: ")
		} else {
			b.WriteString("User: ")
		}
		plen := rt.Plen
		if rt.Dst.Is4In6() {
			plen -= 96
		}
		fmt.Fprintf(&b, "%s/%d", formatMapped(rt.Dst), plen)
		if rt.Mark != 0 {
			fmt.Fprintf(&b, " MARK %d", rt.Mark)
		}
		fmt.Fprintf(&b, " dev %s", rt.Dev)
		if !rt.GW.IsUnspecified() {
			fmt.Fprintf(&b, " GW %s", formatMapped(rt.GW))
		}
		fmt.Fprintf(&b, " SRC %s", formatMapped(rt.Src))
		if rt.Local {
			b.WriteString(" local")
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// ParseCIDR parses "IP[/LEN]" as OVS's ip_parse_cidr then ipv6_parse_cidr:
// an IPv4 address may carry a dotted netmask, a missing length means a
// host route. It returns the address in 16-byte form, the 16-byte prefix
// length and whether the address is IPv6.
func ParseCIDR(s string) (netip.Addr, int, bool, error) {
	addr, length, hasLen := strings.Cut(s, "/")
	a, err := netip.ParseAddr(addr)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, 0, false, fmt.Errorf("%s: invalid IP address", s)
	}
	a = a.Unmap()
	max := a.BitLen()
	plen := max
	if hasLen {
		n, err := strconv.Atoi(length)
		switch {
		case err == nil && n >= 0 && n <= max && length[0] != '+':
			plen = n
		case a.Is4():
			m, err := netip.ParseAddr(length)
			if err != nil || !m.Is4() {
				return netip.Addr{}, 0, false, fmt.Errorf("%s: invalid prefix length", s)
			}
			v := m.As4()
			mask := uint32(v[0])<<24 | uint32(v[1])<<16 | uint32(v[2])<<8 | uint32(v[3])
			ones := 0
			for mask&0x80000000 != 0 {
				mask <<= 1
				ones++
			}
			if mask != 0 {
				return netip.Addr{}, 0, false, fmt.Errorf("%s: non-contiguous netmask", s)
			}
			plen = ones
		default:
			return netip.Addr{}, 0, false, fmt.Errorf("%s: invalid prefix length", s)
		}
	}
	if a.Is4() {
		return to16(a), plen + 96, false, nil
	}
	return a, plen, true, nil
}

// scanMark parses "pkt_mark=N" as OVS's ovs_scan with %i: decimal, 0x hex
// or 0 octal, optionally signed, trailing text ignored.
func scanMark(s string) (uint32, bool) {
	rest, ok := strings.CutPrefix(s, "pkt_mark=")
	if !ok {
		return 0, false
	}
	neg := false
	if rest != "" && (rest[0] == '-' || rest[0] == '+') {
		neg = rest[0] == '-'
		rest = rest[1:]
	}
	base, digits := 10, "0123456789"
	switch {
	case len(rest) > 2 && (rest[:2] == "0x" || rest[:2] == "0X") && strings.ContainsRune("0123456789abcdefABCDEF", rune(rest[2])):
		base, digits, rest = 16, "0123456789abcdefABCDEF", rest[2:]
	case len(rest) > 1 && rest[0] == '0':
		base, digits = 8, "01234567"
	}
	n := 0
	for n < len(rest) && strings.IndexByte(digits, rest[n]) >= 0 {
		n++
	}
	if n == 0 {
		return 0, false
	}
	v, err := strconv.ParseUint(rest[:n], base, 64)
	if err != nil || v > 1<<32-1 {
		v = 1<<32 - 1 // C's strtol saturates; %i then truncates
	}
	if neg {
		v = -v
	}
	return uint32(v), true
}
