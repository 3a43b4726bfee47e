package datapath

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/govs/govs/datapath/conntrack"
)

// The dpctl/ conntrack commands, with OVS 3.1's outputs and error texts
// (lib/dpctl.c, lib/ct-dpif.c), as ovs-vswitchd's netdev datapath answers
// them. Errors that OVS reports through dpctl_error end in the errno's
// text, as there.

// Command is a unixctl command of the datapath, for the daemon to
// register: name, usage, argument bounds and handler.
type Command struct {
	Name, Usage string
	Min, Max    int
	Fn          func([]string) (string, error)
}

// CtCommands lists the conntrack commands.
func (dp *Datapath) CtCommands() []Command {
	return []Command{
		{"dpctl/dump-conntrack", "[-m] [-s] [dp] [zone=N]", 0, 4, dp.DumpConntrackCommand},
		{"dpctl/flush-conntrack", "[dp] [zone=N] [ct-orig-tuple] [ct-reply-tuple]", 0, 4, dp.FlushConntrackCommand},
		{"dpctl/ct-stats-show", "[dp] [zone=N]", 0, 3, dp.CtStatsShowCommand},
		{"dpctl/ct-bkts", "[dp] [gt=N]", 0, 2, dp.CtBktsCommand},
		{"dpctl/ct-set-maxconns", "[dp] maxconns", 1, 2, dp.CtSetMaxconnsCommand},
		{"dpctl/ct-get-maxconns", "[dp]", 0, 1, dp.CtGetMaxconnsCommand},
		{"dpctl/ct-get-nconns", "[dp]", 0, 1, dp.CtGetNconnsCommand},
		{"dpctl/ct-set-limits", "[dp] [default=L] [zone=N,limit=L]...", 1, 1 << 20, dp.CtSetLimitsCommand},
		{"dpctl/ct-del-limits", "[dp] zone=N1[,N2]...", 1, 2, dp.CtDelLimitsCommand},
		{"dpctl/ct-get-limits", "[dp] [zone=N1[,N2]...]", 0, 2, dp.CtGetLimitsCommand},
		{"dpctl/ct-enable-tcp-seq-chk", "[dp]", 0, 1, dp.ctSeqChk(true)},
		{"dpctl/ct-disable-tcp-seq-chk", "[dp]", 0, 1, dp.ctSeqChk(false)},
		{"dpctl/ct-get-tcp-seq-chk", "[dp]", 0, 1, dp.CtGetTCPSeqChkCommand},
	}
}

// dpctlOptions strips the options OVS's dpctl unixctl handler takes before
// the arguments: -m/--more (verbose), -s/--statistics, and the others it
// accepts and these commands ignore.
func dpctlOptions(args []string) (verbose, stats bool, rest []string, err error) {
	o, rest, err := dpctlOpts(args)
	return o.verbose, o.stats, rest, err
}

// dpctlOpt are the options dpctl_unixctl_handler takes before a
// command's arguments; names is 1 for --names, 0 for --no-names, -1 for
// neither.
type dpctlOpt struct {
	verbose, stats bool
	names          int
}

// dpctlOpts is dpctlOptions with --names and --no-names.
func dpctlOpts(args []string) (o dpctlOpt, rest []string, err error) {
	o.names = -1
	for len(args) > 0 {
		a := args[0]
		switch {
		case strings.HasPrefix(a, "--"):
			switch a {
			case "--statistics":
				o.stats = true
			case "--more":
				o.verbose = true
			case "--names":
				o.names = 1
			case "--no-names":
				o.names = 0
			case "--clear", "--may-create":
			default:
				return dpctlOpt{}, nil, errors.New("Unrecognized option " + a)
			}
		case len(a) > 1 && a[0] == '-':
			for _, c := range a[1:] {
				switch c {
				case 'm':
					o.verbose = true
				case 's':
					o.stats = true
				default:
					return dpctlOpt{}, nil, fmt.Errorf("Unrecognized option -%c", c)
				}
			}
		default:
			return o, args, nil
		}
		args = args[1:]
	}
	return o, args, nil
}

// dpErr is OVS's dpctl_error: "ovs-vswitchd: " and the message, with the
// errno's text.
func dpErr(msg, errno string) error { return fmt.Errorf("ovs-vswitchd: %s (%s)", msg, errno) }

const einval = "Invalid argument"

// scanU parses a leading decimal number as C's %u does in ovs_scan (the
// rest of the argument is ignored); bits bounds it.
func scanU(s string, bits int) (uint64, bool) {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	if n == 0 {
		return 0, false
	}
	v, err := strconv.ParseUint(s[:n], 10, bits)
	return v, err == nil
}

// zoneArg parses "zone=N".
func zoneArg(a string) (uint16, bool) {
	if !strings.HasPrefix(a, "zone=") {
		return 0, false
	}
	v, ok := scanU(a[5:], 16)
	return uint16(v), ok
}

// dpArg checks the optional datapath argument: with more than max-1
// arguments, the first names the datapath.
func dpArg(args []string, max int) ([]string, error) {
	if len(args) >= max {
		if err := checkDPName(args[0]); err != nil {
			return nil, err
		}
		return args[1:], nil
	}
	return args, nil
}

// DumpConntrackCommand is `dpctl/dump-conntrack [-m] [-s] [dp] [zone=N]`.
func (dp *Datapath) DumpConntrackCommand(args []string) (string, error) {
	verbose, stats, args, err := dpctlOptions(args)
	if err != nil {
		return "", err
	}
	zone := -1
	if n := len(args); n > 0 {
		if z, ok := zoneArg(args[n-1]); ok {
			zone, args = int(z), args[:n-1]
		}
	}
	if len(args) > 1 {
		return "", errors.New("ovs-vswitchd: datapath not found (Invalid argument)")
	}
	if len(args) == 1 {
		if err := checkDPName(args[0]); err != nil {
			return "", err
		}
	}
	var b strings.Builder
	for _, e := range dp.ct.Dump(zone) {
		b.WriteString(e.Format(verbose, stats))
		b.WriteByte('\n')
	}
	return b.String(), nil
}

// FlushConntrackCommand is `dpctl/flush-conntrack [dp] [zone=N]
// [ct-orig-tuple] [ct-reply-tuple]`: every connection, a zone's, or the
// one whose original direction is the tuple (in zone N, else 0).
func (dp *Datapath) FlushConntrackCommand(args []string) (string, error) {
	_, _, args, err := dpctlOptions(args)
	if err != nil {
		return "", err
	}
	// As OVS 3.1's: with four arguments the first names the datapath,
	// which is opened, and then parsed again as the rest are.
	if len(args) == 4 {
		if err := checkDPName(args[0]); err != nil {
			return "", fmt.Errorf("%v\novs-vswitchd: Cannot open dpif (Invalid argument)", err)
		}
	}
	zone := -1
	if len(args) > 0 && strings.HasPrefix(args[0], "zone=") {
		z, ok := zoneArg(args[0])
		if !ok {
			// OVS 3.1 takes a zone over 65535 modulo 65536; govs
			// refuses it.
			return "", dpErr("failed to parse zone", einval)
		}
		zone, args = int(z), args[1:]
	}
	var tuples [2]conntrack.TupleMatch
	// As OVS 3.1's, the two tuples share one protocol.
	var proto *uint8
	for i := 0; i < 2 && len(args) > 0; i++ {
		if tuples[i], err = parseCtTuple(args[0], &proto); err != nil {
			return "", err
		}
		args = args[1:]
	}
	if len(args) > 0 {
		return "", dpErr("invalid arguments", einval)
	}
	if tuples[0].Has == 0 && tuples[1].Has == 0 {
		dp.ct.Flush(zone)
		return "", nil
	}
	z := uint16(max(zone, 0))
	const five = conntrack.MatchSrc | conntrack.MatchDst | conntrack.MatchProto | conntrack.MatchSrcPort | conntrack.MatchDstPort
	if tuples[0].Has == five && tuples[1].Has == 0 {
		// A whole original tuple alone names one connection, which must
		// exist.
		if !dp.ct.FlushTuple(z, tuples[0].Tuple) {
			return "", dpErr("failed to flush conntrack", "No such file or directory")
		}
		return "", nil
	}
	// Otherwise every connection that both match, of the zone if one
	// was given, of every zone if not; there may be none.
	dp.ct.FlushMatch(zone, tuples[0], tuples[1])
	return "", nil
}

// parseCtTuple parses a ct-tuple as OVS 3.1's ofp_ct_tuple_parse, fields
// not given left out of the match:
// ct_nw_src=,ct_nw_dst=,ct_ipv6_src=,ct_ipv6_dst=,ct_nw_proto=,ct_tp_src=,
// ct_tp_dst=,icmp_type=,icmp_code=,icmp_id=.
func parseCtTuple(s string, proto **uint8) (conntrack.TupleMatch, error) {
	var m conntrack.TupleMatch
	tu := &m.Tuple
	var icmpType, icmpCode uint8
	var hasICMP bool
	for _, f := range strings.Split(s, ",") {
		if f == "" {
			continue
		}
		key, val, ok := strings.Cut(f, "=")
		if !ok {
			return m, dpErr("field "+key+" missing value", einval)
		}
		bad := dpErr("failed to parse field "+key, einval)
		switch key {
		case "ct_nw_src", "ct_nw_dst", "ct_ipv6_src", "ct_ipv6_dst":
			a, err := netip.ParseAddr(val)
			v6 := strings.HasPrefix(key, "ct_ipv6")
			if err != nil || a.Is6() != v6 {
				return m, bad
			}
			tu.V6 = v6
			b := a.As16()
			if !v6 {
				v := a.As4()
				b = [16]byte{}
				copy(b[:], v[:])
			}
			if strings.HasSuffix(key, "src") {
				tu.Src, m.Has = b, m.Has|conntrack.MatchSrc
			} else {
				tu.Dst, m.Has = b, m.Has|conntrack.MatchDst
			}
		case "ct_nw_proto", "icmp_type", "icmp_code":
			v, err := strconv.ParseUint(val, 0, 8)
			if err != nil {
				return m, bad
			}
			switch key {
			case "ct_nw_proto":
				tu.Proto, m.Has = uint8(v), m.Has|conntrack.MatchProto
				p := uint8(v)
				*proto = &p
			case "icmp_type":
				icmpType, hasICMP = uint8(v), true
			default:
				icmpCode, hasICMP = uint8(v), true
			}
		case "ct_tp_src", "ct_tp_dst", "icmp_id":
			v, err := strconv.ParseUint(val, 0, 16)
			if err != nil {
				return m, bad
			}
			if key == "ct_tp_dst" {
				tu.DstPort, m.Has = uint16(v), m.Has|conntrack.MatchDstPort
			} else {
				tu.SrcPort, m.Has = uint16(v), m.Has|conntrack.MatchSrcPort
			}
		default:
			return m, dpErr("invalid conntrack tuple field: "+key, einval)
		}
	}
	if *proto != nil && m.Has&conntrack.MatchProto == 0 {
		tu.Proto, m.Has = **proto, m.Has|conntrack.MatchProto
	}
	if tu.Proto == 1 || tu.Proto == 58 {
		if hasICMP {
			tu.DstPort, m.Has = uint16(icmpType)<<8|uint16(icmpCode), m.Has|conntrack.MatchDstPort
		}
	} else if m.Has&(conntrack.MatchSrcPort|conntrack.MatchDstPort) != 0 && m.Has&conntrack.MatchProto == 0 {
		return m, dpErr("port is set without protocol", einval)
	}
	return m, nil
}

// CtStatsShowCommand is `dpctl/ct-stats-show [-m] [dp] [zone=N]
// [verbose]`: the connections by protocol and, verbose, TCP's by state.
func (dp *Datapath) CtStatsShowCommand(args []string) (string, error) {
	verbose, _, args, err := dpctlOptions(args)
	if err != nil {
		return "", err
	}
	zone := -1
	for last := -1; len(args) > 0 && last != len(args); {
		last = len(args)
		a := args[len(args)-1]
		if strings.HasPrefix(a, "verbose") {
			verbose, args = true, args[:len(args)-1]
		} else if z, ok := zoneArg(a); ok {
			zone, args = int(z), args[:len(args)-1]
		}
	}
	if _, err := dpArg(args, 1); err != nil {
		return "", err
	}
	names := conntrack.TCPStateNames()
	states := make([]int, len(names))
	byProto := map[string]int{}
	entries := dp.ct.Dump(zone)
	for _, e := range entries {
		switch p := conntrack.ProtoName(e.Orig.Proto); p {
		case "tcp":
			byProto["TCP"]++
			if i := slices.Index(names, e.TCPState); i >= 0 {
				states[i]++
			}
		case "udp", "udplite", "sctp", "icmp", "dccp", "igmp":
			byProto[strings.ToUpper(p)]++
		case "icmpv6":
			// Counted in the total only: OVS prints no ICMPv6 line.
		default:
			byProto["Other"]++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Connections Stats:\n    Total: %d\n", len(entries))
	for _, p := range []string{"TCP", "UDP", "UDPLITE", "SCTP", "ICMP", "DCCP", "IGMP", "Other"} {
		if byProto[p] == 0 {
			continue
		}
		fmt.Fprintf(&b, "  %s: %d\n", p, byProto[p])
		if p == "TCP" && verbose {
			b.WriteString("    Conn per TCP states:\n")
			for i, n := range states {
				if n > 0 {
					fmt.Fprintf(&b, "\t  [%s]=%d\n", names[i], n)
				}
			}
		}
	}
	return b.String(), nil
}

// CtBktsCommand is `dpctl/ct-bkts [dp] [gt=N]`: the userspace tracker has
// one bucket, as OVS's (a cmap).
func (dp *Datapath) CtBktsCommand(args []string) (string, error) {
	_, _, args, err := dpctlOptions(args)
	if err != nil {
		return "", err
	}
	gt := uint64(0)
	if n := len(args); n > 0 && strings.HasPrefix(args[n-1], "gt=") {
		if v, ok := scanU(args[n-1][3:], 16); ok {
			gt, args = v, args[:n-1]
		}
	}
	if _, err := dpArg(args, 1); err != nil {
		return "", err
	}
	n := dp.ct.NConns()
	var b strings.Builder
	fmt.Fprintf(&b, "Total Buckets: 1\nCurrent Connections: %d\n\n", n)
	if n > 0 {
		b.WriteString("+-----------+-----------------------------------------+\n")
		b.WriteString("|  Buckets  |         Connections per Buckets         |\n")
		b.WriteString("+-----------+-----------------------------------------+")
		fmt.Fprintf(&b, "\n %3d..%3d   | ", 0, 7)
		if uint64(n) > gt {
			fmt.Fprintf(&b, "%5d", n)
		} else {
			fmt.Fprintf(&b, "%5s", ".")
		}
		b.WriteString("\n\n")
	}
	return b.String(), nil
}

// CtSetMaxconnsCommand is `dpctl/ct-set-maxconns [dp] maxconns`.
func (dp *Datapath) CtSetMaxconnsCommand(args []string) (string, error) {
	_, _, args, err := dpctlOptions(args)
	if err != nil {
		return "", err
	}
	if len(args) == 0 {
		return "", dpErr("maxconns missing or malformed", einval)
	}
	if _, err := dpArg(args, 2); err != nil {
		return "", err
	}
	v, ok := scanU(args[len(args)-1], 32)
	if !ok {
		return "", dpErr("maxconns missing or malformed", einval)
	}
	dp.ct.SetMaxConns(uint32(v))
	return "setting maxconns successful\n", nil
}

// dpOnly makes a command that takes only the optional datapath argument
// and answers f's text.
func dpOnly(f func() string) func([]string) (string, error) {
	return func(args []string) (string, error) {
		_, _, args, err := dpctlOptions(args)
		if err != nil {
			return "", err
		}
		if _, err := dpArg(args, 1); err != nil {
			return "", err
		}
		return f(), nil
	}
}

// CtGetMaxconnsCommand is `dpctl/ct-get-maxconns [dp]`.
func (dp *Datapath) CtGetMaxconnsCommand(args []string) (string, error) {
	return dpOnly(func() string { return strconv.FormatUint(uint64(dp.ct.MaxConns()), 10) + "\n" })(args)
}

// CtGetNconnsCommand is `dpctl/ct-get-nconns [dp]`.
func (dp *Datapath) CtGetNconnsCommand(args []string) (string, error) {
	return dpOnly(func() string { return strconv.Itoa(dp.ct.NConns()) + "\n" })(args)
}

// limitsDPArg strips a datapath argument in front of the limits commands'
// key=value arguments.
func limitsDPArg(args []string) ([]string, error) {
	if len(args) > 0 && !strings.HasPrefix(args[0], "default=") && !strings.HasPrefix(args[0], "zone=") &&
		(strings.Contains(args[0], "@") || !strings.Contains(args[0], "=")) {
		if err := checkDPName(args[0]); err != nil {
			if strings.Contains(args[0], "@") {
				return nil, err
			}
			return args, nil // not a datapath: the command reports it
		}
		return args[1:], nil
	}
	return args, nil
}

// CtSetLimitsCommand is `dpctl/ct-set-limits [dp] [default=L]
// [zone=N,limit=L]...`.
func (dp *Datapath) CtSetLimitsCommand(args []string) (string, error) {
	_, _, args, err := dpctlOptions(args)
	if err != nil {
		return "", err
	}
	if args, err = limitsDPArg(args); err != nil {
		return "", err
	}
	var def *uint32
	if len(args) > 0 && strings.HasPrefix(args[0], "default=") {
		v, ok := scanU(args[0][8:], 32)
		if !ok {
			return "", dpErr("invalid default limit", einval)
		}
		d := uint32(v)
		def, args = &d, args[1:]
	}
	zones := map[uint16]uint32{}
	for _, a := range args {
		z, l, err := parseZoneLimit(a)
		if err != nil {
			return "", err
		}
		zones[z] = l
	}
	dp.ct.SetLimits(def, zones)
	return "", nil
}

// parseZoneLimit parses "zone=N,limit=L" as ct_dpif_parse_zone_limit_tuple.
func parseZoneLimit(s string) (zone uint16, limit uint32, err error) {
	var haveZone, haveLimit bool
	for _, f := range strings.Split(s, ",") {
		key, val, ok := strings.Cut(f, "=")
		if !ok {
			return 0, 0, dpErr("failed to parse zone limit", einval)
		}
		switch key {
		case "zone":
			v, err := strconv.ParseUint(val, 10, 16)
			if err != nil {
				return 0, 0, dpErr("failed to parse field zone", einval)
			}
			zone, haveZone = uint16(v), true
		case "limit":
			v, err := strconv.ParseUint(val, 10, 32)
			if err != nil {
				return 0, 0, dpErr("failed to parse field limit", einval)
			}
			limit, haveLimit = uint32(v), true
		default:
			return 0, 0, dpErr("invalid zone limit field: "+key, einval)
		}
	}
	if !haveZone || !haveLimit {
		return 0, 0, dpErr("failed to parse zone limit", einval)
	}
	return zone, limit, nil
}

// parseZones parses "zone=N1[,N2]..." as parse_ct_limit_zones.
func parseZones(s string) ([]uint16, error) {
	if !strings.HasPrefix(s, "zone=") {
		return nil, dpErr("invalid argument "+s, einval)
	}
	var zs []uint16
	for _, f := range strings.Split(s[5:], ",") {
		v, ok := scanU(f, 16)
		if !ok {
			return nil, dpErr("invalid zone", einval)
		}
		zs = append(zs, uint16(v))
	}
	return zs, nil
}

// CtDelLimitsCommand is `dpctl/ct-del-limits [dp] zone=N1[,N2]...`.
func (dp *Datapath) CtDelLimitsCommand(args []string) (string, error) {
	_, _, args, err := dpctlOptions(args)
	if err != nil {
		return "", err
	}
	if args, err = dpArg(args, 2); err != nil {
		return "", err
	}
	if len(args) == 0 {
		return "", dpErr("invalid argument ", einval)
	}
	zs, err := parseZones(args[0])
	if err != nil {
		return "", err
	}
	dp.ct.DelLimits(zs)
	return "", nil
}

// CtGetLimitsCommand is `dpctl/ct-get-limits [dp] [zone=N1[,N2]...]`.
func (dp *Datapath) CtGetLimitsCommand(args []string) (string, error) {
	_, _, args, err := dpctlOptions(args)
	if err != nil {
		return "", err
	}
	if args, err = dpArg(args, 2); err != nil {
		return "", err
	}
	var zs []uint16
	if len(args) > 0 {
		if zs, err = parseZones(args[0]); err != nil {
			return "", err
		}
	}
	def, limits := dp.ct.Limits(zs)
	var b strings.Builder
	fmt.Fprintf(&b, "default limit=%d", def)
	for _, l := range limits {
		fmt.Fprintf(&b, "\nzone=%d,limit=%d,count=%d", l.Zone, l.Limit, l.Count)
	}
	b.WriteByte('\n')
	return b.String(), nil
}

func (dp *Datapath) ctSeqChk(on bool) func([]string) (string, error) {
	return dpOnly(func() string {
		dp.ct.SetLiberal(!on)
		if on {
			return "enabling TCP sequence checking successful\n"
		}
		return "disabling TCP sequence checking successful\n"
	})
}

// CtGetTCPSeqChkCommand is `dpctl/ct-get-tcp-seq-chk [dp]`.
func (dp *Datapath) CtGetTCPSeqChkCommand(args []string) (string, error) {
	return dpOnly(func() string {
		if dp.ct.Liberal() {
			return "TCP sequence checking: disabled\n"
		}
		return "TCP sequence checking: enabled\n"
	})(args)
}

// Capabilities is what the Datapath table's capabilities column says of
// this datapath, with the 27 keys OVS 3.1's netdev datapath writes
// (ofproto-dpif.c, get_datapath_cap): "true" only for what govs's
// datapath does. ovn-controller reads it to choose what it may use.
func Capabilities() map[string]string {
	caps := map[string]string{
		"max_hash_alg":     "1", // hash(l4) and hash(sym_l4), as OVS's netdev datapath
		"max_mpls_depth":   "0",
		"max_vlan_headers": "1", // one tag parsed, as OVS's default vlan-limit
	}
	supported := map[string]bool{
		"ct_clear": true, "ct_label": true, "ct_mark": true, "ct_orig_tuple": true, "ct_orig_tuple6": true,
		"ct_state": true, "ct_state_nat": true, "ct_zone": true, "recirc": true, "ufid": true, "check_pkt_len": true, "ct_timeout": true,
	}
	for _, k := range []string{"add_mpls", "check_pkt_len", "clone", "ct_clear", "ct_eventmask", "ct_flush",
		"ct_label", "ct_mark", "ct_orig_tuple", "ct_orig_tuple6", "ct_state", "ct_state_nat", "ct_timeout",
		"ct_zero_snat", "ct_zone", "explicit_drop_action", "lb_output_action", "masked_set_action", "nd_ext",
		"recirc", "sample_nesting", "tnl_push_pop", "trunc", "ufid"} {
		caps[k] = strconv.FormatBool(supported[k])
	}
	return caps
}
