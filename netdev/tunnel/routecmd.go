package tunnel

import (
	"errors"
	"fmt"
	"net/netip"
)

// The ovs/route/* unixctl commands, with OVS 3.1's usage strings, argument
// counts, output and error texts. Each takes the arguments after the
// command name.

const (
	RouteAddUsage    = "ip_addr/prefix_len out_br_name [gw] [pkt_mark=mark]"
	RouteDelUsage    = "ip_addr/prefix_len [pkt_mark=mark]"
	RouteLookupUsage = "ip_addr [pkt_mark=mark]"
)

// AddCmd is ovs/route/add (2 to 4 arguments).
func (r *Router) AddCmd(args []string) (string, error) {
	dst, plen, v6, err := ParseCIDR(args[0])
	if err != nil {
		return "", errors.New("Invalid parameters")
	}
	var mark uint32
	gw := netip.IPv6Unspecified()
	if len(args) > 2 {
		m, ok := scanMark(args[2])
		g, err := netip.ParseAddr(args[2])
		switch {
		case ok:
			mark = m
		case err == nil && g.Zone() == "" && !v6 && g.Is4():
			gw = to16(g)
		case err == nil && g.Zone() == "" && v6 && g.Is6():
			gw = g
		case v6:
			return "", errors.New("Invalid pkt_mark or IPv6 gateway")
		default:
			return "", errors.New("Invalid pkt_mark or gateway")
		}
	}
	mark, err = optMark(args, 3, mark)
	if err != nil {
		return "", err
	}
	if err := r.InsertUser(mark, dst, plen, args[1], gw); err != nil {
		return "", errors.New("Error while inserting route.")
	}
	return "OK\n", nil
}

// DelCmd is ovs/route/del (1 or 2 arguments).
func (r *Router) DelCmd(args []string) (string, error) {
	dst, plen, _, err := ParseCIDR(args[0])
	if err != nil {
		return "", errors.New("Invalid parameters")
	}
	mark, err := optMark(args, 1, 0)
	if err != nil {
		return "", err
	}
	if !r.DeleteUser(mark, dst, plen) {
		return "", errors.New("Not found")
	}
	return "OK\n", nil
}

// LookupCmd is ovs/route/lookup (1 or 2 arguments).
func (r *Router) LookupCmd(args []string) (string, error) {
	dst, plen, _, err := ParseCIDR(args[0])
	if err != nil || plen != 128 {
		return "", errors.New("Invalid parameters")
	}
	mark, err := optMark(args, 1, 0)
	if err != nil {
		return "", err
	}
	rt, ok := r.Lookup(mark, dst)
	if !ok {
		return "", errors.New("Not found")
	}
	return fmt.Sprintf("src %s\ngateway %s\ndev %s\n", formatMapped(rt.Src), formatMapped(rt.GW), rt.Dev), nil
}

// ShowCmd is ovs/route/show (no arguments).
func (r *Router) ShowCmd([]string) (string, error) { return r.Show(), nil }

// optMark parses the optional "pkt_mark=N" at args[i], def if absent.
func optMark(args []string, i int, def uint32) (uint32, error) {
	if len(args) <= i {
		return def, nil
	}
	m, ok := scanMark(args[i])
	if !ok {
		return 0, errors.New("Invalid pkt_mark")
	}
	return m, nil
}
