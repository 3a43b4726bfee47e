package tunnel

import (
	"context"
	"net/netip"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// KernelAddrs lists a kernel network device's addresses.
func KernelAddrs(dev string) ([]netip.Prefix, error) {
	link, err := netlink.LinkByName(dev)
	if err != nil {
		return nil, err
	}
	addrs, err := netlink.AddrList(link, netlink.FAMILY_ALL)
	if err != nil {
		return nil, err
	}
	out := make([]netip.Prefix, 0, len(addrs))
	for _, a := range addrs {
		ip, ok := netip.AddrFromSlice(a.IP)
		if !ok {
			continue
		}
		ones, _ := a.Mask.Size()
		out = append(out, netip.PrefixFrom(ip.Unmap(), ones))
	}
	return out, nil
}

// Logger is the vlog module logger the synchroniser writes to.
type Logger interface {
	Warnf(format string, args ...any)
}

// relevant reports whether OVS's route-table.c keeps a kernel route:
// unicast or local, with a scope, an output interface, in the main,
// default or local table.
func relevant(rt *netlink.Route) bool {
	if rt.Type != unix.RTN_UNICAST && rt.Type != unix.RTN_LOCAL {
		return false
	}
	if rt.Scope == netlink.SCOPE_NOWHERE || rt.LinkIndex <= 0 {
		return false
	}
	switch rt.Table {
	case unix.RT_TABLE_UNSPEC, unix.RT_TABLE_DEFAULT, unix.RT_TABLE_MAIN, unix.RT_TABLE_LOCAL:
		return true
	}
	return false
}

// Reload replaces the kernel's routes in r by a fresh dump
// (route_table_reset): user routes stay.
func Reload(r *Router) error {
	routes, err := netlink.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE)
	if err != nil {
		return err
	}
	names := map[int]string{}
	// One address dump per device, not per route.
	type devAddrs struct {
		p   []netip.Prefix
		err error
	}
	seen := map[string]devAddrs{}
	addrs := func(dev string) ([]netip.Prefix, error) {
		a, ok := seen[dev]
		if !ok {
			a.p, a.err = r.addrs(dev)
			seen[dev] = a
		}
		return a.p, a.err
	}
	r.FlushCached()
	for i := range routes {
		rt := &routes[i]
		if !relevant(rt) {
			continue
		}
		name, ok := names[rt.LinkIndex]
		if !ok {
			if l, err := netlink.LinkByIndex(rt.LinkIndex); err == nil {
				name = l.Attrs().Name
			}
			names[rt.LinkIndex] = name
		}
		if name == "" {
			continue
		}
		dst, plen := netip.IPv6Unspecified(), 0
		if rt.Dst != nil {
			ip, ok := netip.AddrFromSlice(rt.Dst.IP)
			if !ok {
				continue
			}
			ones, _ := rt.Dst.Mask.Size()
			dst, plen = to16(ip), ones
			if ip.Unmap().Is4() {
				plen += 96
			}
		} else if rt.Family == unix.AF_INET {
			dst, plen = netip.AddrFrom16([16]byte{10: 0xff, 11: 0xff}), 96
		}
		gw := netip.IPv6Unspecified()
		if g, ok := netip.AddrFromSlice(rt.Gw); ok {
			gw = to16(g)
		}
		// A route whose device has no usable source is left out, as OVS
		// does (it logs that at debug level only).
		local := rt.Type == unix.RTN_LOCAL
		_ = r.insert(addrs, 0, kernelPriority(plen, local), local, dst, plen, name, gw)
	}
	return nil
}

// Sync keeps r's kernel routes in step until ctx ends: a dump now and a
// new one after every route, address or link change notification
// (coalesced), as OVS re-reads the table on any change.
func Sync(ctx context.Context, r *Router, log Logger) {
	changed := make(chan struct{}, 1)
	kick := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	subscribe(ctx, log, kick)
	if err := Reload(r); err != nil {
		log.Warnf("failed to reset routing table: %v", err)
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-changed:
				if err := Reload(r); err != nil {
					log.Warnf("failed to reset routing table: %v", err)
				}
			}
		}
	}()
}

// subscribe calls kick on every route, address and link notification,
// resubscribing (and kicking) after a failure.
func subscribe(ctx context.Context, log Logger, kick func()) {
	go func() {
		for ctx.Err() == nil {
			done := make(chan struct{})
			routes := make(chan netlink.RouteUpdate, 64)
			addrs := make(chan netlink.AddrUpdate, 64)
			links := make(chan netlink.LinkUpdate, 64)
			onErr := func(err error) {
				if ctx.Err() == nil {
					log.Warnf("route notifications: %v", err)
				}
			}
			err := netlink.RouteSubscribeWithOptions(routes, done, netlink.RouteSubscribeOptions{ErrorCallback: onErr})
			if err == nil {
				err = netlink.AddrSubscribeWithOptions(addrs, done, netlink.AddrSubscribeOptions{ErrorCallback: onErr})
			}
			if err == nil {
				err = netlink.LinkSubscribeWithOptions(links, done, netlink.LinkSubscribeOptions{ErrorCallback: onErr})
			}
			if err != nil {
				log.Warnf("subscribing to route notifications: %v", err)
				close(done)
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Second):
				}
				continue
			}
			kick()
		pump:
			for {
				select {
				case <-ctx.Done():
					break pump
				case _, ok := <-routes:
					if !ok {
						break pump
					}
				case _, ok := <-addrs:
					if !ok {
						break pump
					}
				case _, ok := <-links:
					if !ok {
						break pump
					}
				}
				kick()
			}
			close(done)
		}
	}()
}
