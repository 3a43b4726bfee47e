package main

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/govs/govs/internal/daemon"
	"github.com/govs/govs/netdev"
)

// registerDummyCommands adds the netdev-dummy/* commands of
// --enable-dummy, with OVS's usage strings, replies and errors
// (lib/netdev-dummy.c).
// changed is called when a port's state changed, for the write-back.
func registerDummyCommands(u *daemon.UnixctlServer, changed func()) {
	if u == nil {
		return
	}
	u.Register("netdev-dummy/receive", "name [--qid queue_id] packet|flow [--len packet_len]", 2, 1<<20,
		func(args []string) (string, error) { return "", netdev.DummyReceive(args) })
	u.Register("netdev-dummy/set-admin-state", "[netdev] up|down", 1, 2, func(args []string) (string, error) {
		var up bool
		switch strings.ToLower(args[len(args)-1]) {
		case "up":
			up = true
		case "down":
		default:
			return "", errors.New("Invalid Admin State")
		}
		if len(args) == 1 {
			for _, d := range netdev.Dummies() {
				d.SetAdminUp(up)
			}
			changed()
			return "OK", nil
		}
		d := netdev.LookupDummy(args[0])
		if d == nil {
			return "", errors.New("Unknown Dummy Interface")
		}
		d.SetAdminUp(up)
		changed()
		return "OK", nil
	})
	// govs' dummies take no stream or pstream option, so no connection
	// state is ever known.
	u.Register("netdev-dummy/conn-state", "[netdev]", 0, 1, func(args []string) (string, error) {
		if len(args) == 1 {
			return args[0] + ": unknown\n", nil
		}
		return "", nil
	})
	u.Register("netdev-dummy/ip4addr", "[netdev] ipaddr/mask-prefix-len", 2, 2, func(args []string) (string, error) {
		d := netdev.LookupDummy(args[0])
		if d == nil {
			return "", errors.New("Unknown Dummy Interface")
		}
		p, err := parseMaskedIP4(args[1])
		if err != nil {
			return "", err
		}
		d.SetAddr4(p)
		return "OK", nil
	})
	u.Register("netdev-dummy/ip6addr", "[netdev] ip6addr", 2, 2, func(args []string) (string, error) {
		d := netdev.LookupDummy(args[0])
		if d == nil {
			return "", errors.New("Unknown Dummy Interface")
		}
		s := args[1]
		if !strings.Contains(s, "/") {
			s += "/128"
		}
		p, err := netip.ParsePrefix(s)
		if err != nil || !p.Addr().Is6() || p.Addr().Is4In6() {
			return "", fmt.Errorf("%s: invalid IPv6 address", args[1])
		}
		d.SetAddr6(p)
		return "OK", nil
	})
}

// parseMaskedIP4 parses A.B.C.D, A.B.C.D/N or A.B.C.D/M.M.M.M, as OVS's
// ip_parse_masked.
func parseMaskedIP4(s string) (netip.Prefix, error) {
	bad := fmt.Errorf("%s: invalid IP address", s)
	addr, mask, masked := strings.Cut(s, "/")
	a, err := netip.ParseAddr(addr)
	if err != nil || !a.Is4() {
		return netip.Prefix{}, bad
	}
	bits := 32
	if masked {
		if m, err := netip.ParseAddr(mask); err == nil && m.Is4() {
			b := m.As4()
			v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
			bits = 0
			for v&0x80000000 != 0 {
				bits++
				v <<= 1
			}
			if v != 0 {
				return netip.Prefix{}, fmt.Errorf("%s: non-contiguous netmask", s)
			}
		} else if _, err := fmt.Sscanf(mask, "%d", &bits); err != nil || fmt.Sprint(bits) != mask {
			return netip.Prefix{}, bad
		} else if bits < 0 || bits > 32 {
			return netip.Prefix{}, fmt.Errorf("%s: IPv4 network prefix bits not between 0 and 32, inclusive", s)
		}
	}
	return netip.PrefixFrom(a, bits), nil
}
