// Package ofptext parses the flow, match and action syntax of OVS 3.1's
// ovs-ofctl(8) (OVS's parse_ofp_str, mf_parse_field and ofpacts_parse)
// into the codec's types, for govs' ovs-ofctl and ovs-vswitchd's
// commands that take flows and actions (ofproto/trace-packet-out). Its
// printer is the codec's (ofp.FormatMatch, ofp.FormatActions).
package ofptext

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// The flow syntax of ovs-ofctl(8), for the match fields and actions
// govs' switch supports. Errors carry OVS's texts.

// warn is where the warnings OVS logs while it parses go (SetWarn).
var warn atomic.Pointer[func(module, msg string)]

// SetWarn has the warnings OVS logs while it parses (module, message),
// as the ofp_port module's about a port number out of range, go to f;
// they go nowhere by default.
func SetWarn(f func(module, msg string)) { warn.Store(&f) }

// Warn logs a parse warning through the function SetWarn gave.
func Warn(module, msg string) {
	if f := warn.Load(); f != nil {
		(*f)(module, msg)
	}
}

// logErr is where the errors OVS logs while it parses go (SetErr).
var logErr atomic.Pointer[func(module, msg string)]

// SetErr has the errors OVS logs (at ERR) while it parses go to f, as
// SetWarn the warnings; they go nowhere by default.
func SetErr(f func(module, msg string)) { logErr.Store(&f) }

// LogErr logs a parse error through the function SetErr gave.
func LogErr(module, msg string) {
	if f := logErr.Load(); f != nil {
		(*f)(module, msg)
	}
}

// Flow is a parsed flow: what a flow mod or a flow statistics
// request needs.
type Flow struct {
	Match              ofp.Match
	Priority           uint16
	Table              uint8 // 0xff unless given
	TableSet           bool
	Cookie, CookieMask uint64
	CookieSet          bool
	Idle, Hard         uint16
	Importance         uint16
	Flags              uint16
	OutPort            uint32
	OutGroup           uint32
	Actions            []ofp.Action
	HasActions         bool
	// Usable are the protocols that can carry the flow, as OVS's
	// parse_ofp_str computes them (ovs-ofctl parse-flow prints them);
	// 0 when no protocol can.
	Usable Protocols
}

// Commands the parser knows the rules of (they differ in what they
// accept).
const (
	ParseAdd = iota
	ParseModify
	ParseDelete
	ParseDump
	ParseDeleteStrict
	ParseModifyStrict
)

// PortResolver turns a port name into its number (--names and
// in_port=NAME); nil resolves only numbers and reserved names.
type PortResolver func(name string) (uint32, bool)

// SplitKV splits s into its first "key", "key=value", "key:value" or
// "key(value)" and the rest, as ofputil_parse_key_value: pairs are
// separated by commas or white space; a value after '=' or ':' ends at
// either, outside parentheses; one in parentheses ends at the matching
// ')', unless ")->" follows ("check_pkt_larger(1500)->reg0[0]"), when it
// goes on, as after ':', and keeps the ")->...".
func SplitKV(s string) (key, value, rest string, ok bool) {
	s = strings.TrimLeft(s, ", \t\r\n")
	if s == "" {
		return "", "", "", false
	}
	i := strings.IndexAny(s, "=:(, \t\r\n")
	if i < 0 {
		return s, "", "", true
	}
	key = s[:i]
	var delims string
	switch s[i] {
	case '(':
		delims = ")"
	case '=', ':':
		delims = ", \t\r\n"
	default:
		return key, "", s[i+1:], true
	}
	s = s[i+1:]
	n := kvValueLen(s, delims)
	if delims == ")" && strings.HasPrefix(s[n:], ")->") {
		n += kvValueLen(s[n:], ", \t\r\n")
	}
	if n < len(s) {
		return key, s[:n], s[n+1:], true
	}
	return key, s, "", true
}

// kvValueLen is OVS's parse_value: the length of s up to the first byte
// of delims, a parenthesised part (nested or not, closed or not) taken
// whole.
func kvValueLen(s, delims string) int {
	n := 0
	for n < len(s) && strings.IndexByte(delims, s[n]) < 0 {
		if s[n] != '(' {
			n++
			continue
		}
		for level := 0; n < len(s); {
			switch s[n] {
			case '(':
				level++
			case ')':
				level--
			}
			n++
			if level == 0 {
				break
			}
		}
	}
	return n
}

// fieldAliasPairs are OVS's fields with two names (meta-flow.h's
// "aka"): the name OVS gives first, then the other. OVS's mf_from_name
// takes either; so do govs' parsers of flows, ovs-ofctl's (here) and
// ofproto/trace's.
var fieldAliasPairs = [...][2]string{{"tun_id", "tunnel_id"}, {"eth_src", "dl_src"}, {"eth_dst", "dl_dst"},
	{"eth_type", "dl_type"}, {"ip_src", "nw_src"}, {"ip_dst", "nw_dst"}, {"nw_proto", "ip_proto"}, {"nw_ecn", "ip_ecn"},
	{"ip_frag", "nw_frag"}, {"tcp_src", "tp_src"}, {"tcp_dst", "tp_dst"}}

// FieldAlias returns the other name of a field that has two, "" for
// any other name.
func FieldAlias(name string) string {
	for _, p := range fieldAliasPairs {
		switch name {
		case p[0]:
			return p[1]
		case p[1]:
			return p[0]
		}
	}
	return ""
}

// fieldByName returns the codec's field by either of OVS's names.
func fieldByName(name string) *ofp.Field {
	if fd := ofp.FieldByName(name); fd != nil {
		return fd
	}
	if other := FieldAlias(name); other != "" {
		return ofp.FieldByName(other)
	}
	return nil
}

// ignoredKeys are what dump-flows prints and parse_ofp_str skips, so
// that its output can be fed back.
var ignoredKeys = map[string]bool{"duration": true, "n_packets": true, "n_bytes": true, "idle_age": true, "hard_age": true}

var flagKeys = map[string]uint16{"send_flow_rem": ofp.FlagSendFlowRem, "check_overlap": ofp.FlagCheckOverlap,
	"reset_counts": ofp.FlagResetCounts, "no_packet_counts": ofp.FlagNoPktCounts, "no_byte_counts": ofp.FlagNoBytCounts}

// ParseFlow parses a flow as parse_ofp_str for command cmd.
func ParseFlow(s string, cmd int, ports PortResolver) (*Flow, error) {
	fs := &Flow{Priority: 32768, Table: 0xff, OutPort: ofp.PortAny, OutGroup: ofp.GroupAny, Usable: ProtoAny}
	if cmd == ParseAdd || cmd == ParseModify || cmd == ParseModifyStrict {
		i := strings.Index(s, "action")
		if i < 0 {
			return nil, errors.New("must specify an action")
		}
		eq := strings.IndexByte(s[i:], '=')
		if eq < 0 {
			return nil, errors.New("must specify an action")
		}
		// "actions=" with nothing after it is no action, as "drop". The
		// actions are parsed once: a second parse logged its warnings
		// twice.
		parse := ParseActions
		if strings.TrimSpace(s[i+eq+1:]) == "" {
			parse = ParseApplyActions
		}
		acts, err := parse(s[i+eq+1:], ports)
		if err != nil {
			return nil, err
		}
		fs.Actions, fs.HasActions = acts, true
		s = s[:i]
	}
	for {
		key, value, rest, ok := SplitKV(s)
		if !ok {
			break
		}
		s = rest
		if err := fs.parseItem(key, value, cmd, ports); err != nil {
			return nil, err
		}
	}
	// Only NXM and OXM match IPv6's L3 and L4 fields.
	if mk := &fs.Match.Mask; fs.Match.Flow.EthType == flow.EthTypeIPv6 && (mk.NwProto != 0 || mk.NwTOS != 0 || mk.TpSrc != 0 || mk.TpDst != 0) {
		fs.Usable &= ProtoNXMOXM
	}
	if fs.HasActions {
		fs.Usable &= actionsUsable(fs.Actions)
		if Inconsistent(fs.Actions, fs.Match.Flow.Key) {
			fs.Usable &= ProtoOF10Any
		}
	}
	return fs, nil
}

func (fs *Flow) parseItem(key, value string, cmd int, ports PortResolver) error {
	if p, ok := ofp.Protocols[key]; ok {
		fs.Match.Flow.EthType, fs.Match.Mask.EthType = p.EthType, 0xffff
		if p.NwProto != 0 {
			fs.Match.Flow.NwProto, fs.Match.Mask.NwProto = p.NwProto, 0xff
		}
		return nil
	}
	if bit, ok := flagKeys[key]; ok && (cmd == ParseAdd || cmd == ParseModify || cmd == ParseModifyStrict) {
		fs.Flags |= bit
		switch bit {
		case ofp.FlagResetCounts:
			fs.Usable &= ProtoOF12Up
		case ofp.FlagNoPktCounts, ofp.FlagNoBytCounts:
			fs.Usable &= ProtoOF13Up
		}
		return nil
	}
	if ignoredKeys[key] {
		return nil
	}
	if value == "" {
		return fmt.Errorf("field %s missing value", key)
	}
	// Which settings each command takes (OVS's F_* per command); the
	// others are unknown keywords to it.
	withPriority := cmd == ParseAdd || cmd == ParseModify || cmd == ParseModifyStrict || cmd == ParseDeleteStrict
	withMods := cmd == ParseAdd || cmd == ParseModify || cmd == ParseModifyStrict
	withOut := cmd == ParseDelete || cmd == ParseDeleteStrict || cmd == ParseDump
	switch {
	case key == "priority" && !withPriority, (key == "idle_timeout" || key == "hard_timeout") && !withMods,
		key == "importance" && cmd != ParseAdd, (key == "out_port" || key == "out_group") && !withOut:
		return fmt.Errorf("unknown keyword %s", key)
	}
	switch key {
	case "table":
		// ofputil_table_from_string: decimal, with its warnings.
		n, ok := parseTable(value)
		if !ok {
			return fmt.Errorf("unknown table \"%s\"", value)
		}
		if n == 255 && cmd != ParseDelete && cmd != ParseDeleteStrict && cmd != ParseDump {
			return fmt.Errorf("invalid table \"%s\"", value)
		}
		fs.Table, fs.TableSet = uint8(n), true
		if n != 0xff {
			fs.Usable &= ProtoTID
		}
		return nil
	case "priority":
		n, err := strconv.ParseUint(value, 0, 16)
		if err != nil {
			return fmt.Errorf("invalid priority \"%s\"", value)
		}
		fs.Priority = uint16(n)
		return nil
	case "idle_timeout", "hard_timeout", "importance":
		n, err := strconv.ParseUint(value, 0, 16)
		if err != nil {
			return fmt.Errorf("invalid %s \"%s\"", key, value)
		}
		switch key {
		case "idle_timeout":
			fs.Idle = uint16(n)
		case "hard_timeout":
			fs.Hard = uint16(n)
		default:
			fs.Importance = uint16(n)
		}
		return nil
	case "cookie":
		v, m, hasMask := strings.Cut(value, "/")
		c, err := strconv.ParseUint(v, 0, 64)
		if err != nil {
			return fmt.Errorf("invalid cookie \"%s\"", value)
		}
		fs.Cookie, fs.CookieMask, fs.CookieSet = c, ^uint64(0), true
		if hasMask {
			if cmd == ParseAdd {
				return errors.New("flow additions cannot use a cookie mask")
			}
			if fs.CookieMask, err = strconv.ParseUint(m, 0, 64); err != nil {
				return fmt.Errorf("invalid cookie mask \"%s\"", m)
			}
			if fs.CookieMask != 0 {
				fs.Usable &= ProtoNXMOF11Up
			}
		} else if cmd != ParseAdd && cmd != ParseModify && cmd != ParseModifyStrict {
			// A cookie without a mask filters exactly only in add and
			// modify (where it also sets); OVS requires the mask here.
			return errors.New("cannot set cookie")
		}
		return nil
	case "out_port":
		p, err := ParsePort(value, ports)
		if err != nil {
			return err
		}
		fs.OutPort = p
		return nil
	case "out_group":
		n, err := strconv.ParseUint(value, 0, 32)
		if err != nil {
			return fmt.Errorf("invalid out_group \"%s\"", value)
		}
		fs.OutGroup = uint32(n)
		fs.Usable &= ProtoOF11Up
		return nil
	}
	if fd := tunMetadataField(key, false); fd != nil {
		// OVS's tun_metadata_set_match without a TLV map: as long as
		// the value (and mask) need, once each.
		v, m, err := parseValue(fd, value, ports)
		if err != nil {
			return err
		}
		e := ofp.TunMetadataMatch(ofp.TunMetadataIndex(fd), v, m)
		for _, o := range fs.Match.TunMD {
			if o.Idx == e.Idx {
				return fmt.Errorf("field %s set multiple times", key)
			}
		}
		fs.Match.TunMD = append(fs.Match.TunMD, e)
		fs.Usable &= ProtoNXMOXM
		return nil
	}
	var msk []byte
	if err := parseField(&fs.Match, key, value, ports, &msk); err != nil {
		return err
	}
	fs.Usable &= matchUsable(key, msk)
	return nil
}

// matchUsable is what a match on field key with mask msk (as given;
// nil for the fields parseField parses itself) leaves usable.
func matchUsable(key string, msk []byte) Protocols {
	switch key {
	case "in_port", "dl_vlan", "dl_vlan_pcp", "ip_dscp":
		return ProtoAny
	case "nw_frag", "ip_frag", "ct_state", "tcp_flags":
		return ProtoNXMOXM
	}
	return fieldUsable(FieldOf(key), msk)
}

// FieldOf returns the codec's field for an OVS field name or alias.
func FieldOf(name string) *ofp.Field {
	if name == "in_port" {
		return ofp.FieldByName("in_port_oxm")
	}
	if fd := tunMetadataField(name, false); fd != nil {
		return fd
	}
	return fieldByName(name)
}

// tunMetadataField is tun_metadata<N> by its name or, with nxm, its NXM
// name (NXM_NX_TUN_METADATA<N>, any case), as OVS's ovs-ofctl knows it
// without a TLV map: all of its 124 bytes (ofp.SetTunMetadata fits a
// set to its value).
func tunMetadataField(name string, nxm bool) *ofp.Field {
	const nxmName = "NXM_NX_TUN_METADATA"
	n, ok := strings.CutPrefix(name, "tun_metadata")
	if !ok && nxm && len(name) > len(nxmName) && strings.EqualFold(name[:len(nxmName)], nxmName) {
		n, ok = name[len(nxmName):], true
	}
	idx, err := strconv.Atoi(n)
	if !ok || err != nil || idx < 0 || idx >= ofp.TLVMaxFields || strconv.Itoa(idx) != n {
		return nil
	}
	return ofp.TunMetadataField(idx, ofp.TLVMaxOptLen)
}

// port11Offset is what OpenFlow 1.1 adds to OpenFlow 1.0's reserved
// port numbers (OVS's OFPP11_OFFSET).
const port11Offset = 0xffff0000

// deprecatedPortWarned: OVS warns once (VLOG_WARN_ONCE) of a reserved
// port given by its OpenFlow 1.0 number.
var deprecatedPortWarned atomic.Bool

// strToUint10 is OVS's str_to_uint in base 10: C's strtoll over the
// whole string (leading white space and a sign taken), within an
// unsigned int.
func strToUint10(s string) (uint64, bool) {
	t := strings.TrimLeft(s, " \t\n\v\f\r")
	neg := false
	if t != "" && (t[0] == '+' || t[0] == '-') {
		neg, t = t[0] == '-', t[1:]
	}
	if t == "" || strings.Trim(t, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseUint(t, 10, 64)
	if err != nil || n > math.MaxUint32 || neg && n != 0 {
		return 0, false
	}
	return n, true
}

// ParsePort parses a port as ofputil_port_from_string: a number, a
// reserved name (any case) or a port's name.
func ParsePort(s string, ports PortResolver) (uint32, error) {
	if strings.HasPrefix(s, "-") {
		Warn("ofp_port", fmt.Sprintf("Negative value %s is not a valid port number.", s))
		return 0, fmt.Errorf("%s: invalid or unknown port", s)
	}
	// str_to_uint in base 10, then OpenFlow 1.0's reserved numbers
	// (0xff00 and up) as their OpenFlow 1.1 ones, with OVS's warnings.
	if n, ok := strToUint10(s); ok {
		switch {
		case n < 0xff00:
			return uint32(n), nil
		case n < 0xfff7:
			Warn("ofp_port", fmt.Sprintf("port %d is a reserved OF1.0 port number that will be translated to %d "+
				"when talking to an OF1.1 or later controller", n, n+port11Offset))
			return uint32(n + port11Offset), nil
		case n <= 0xffff:
			p := uint32(n + port11Offset)
			if deprecatedPortWarned.CompareAndSwap(false, true) {
				Warn("ofp_port", fmt.Sprintf("referring to port %s as %d is deprecated for compatibility with "+
					"OpenFlow 1.1 and later", ofp.PortNames(nil).Port(p), n))
			}
			return p, nil
		case n < ofp.PortMax:
			Warn("ofp_port", fmt.Sprintf("port %d is outside the supported range 0 through ffff or 0xffffff00 through 0xffffffff", n))
			return 0, fmt.Errorf("%s: invalid or unknown port", s)
		}
		return uint32(n), nil
	}
	if p, ok := ofp.ReservedPort(s); ok {
		return p, nil
	}
	name := s
	if len(s) >= 2 && s[0] == '"' {
		if u, err := strconv.Unquote(s); err == nil {
			name = u
		}
	}
	if ports != nil {
		if p, ok := ports(name); ok {
			return p, nil
		}
	}
	return 0, fmt.Errorf("%s: invalid or unknown port", s)
}

// parseField parses one "field=value[/mask]" match item; *mask is the
// mask given (all ones for none) of a field the codec parses.
func parseField(m *ofp.Match, key, value string, ports PortResolver, mask *[]byte) error {
	k, mk := &m.Flow, &m.Mask
	switch key {
	case "in_port":
		p, err := ParsePort(value, ports)
		if err != nil {
			return fmt.Errorf("%s for in_port", err)
		}
		k.InPort, mk.InPort = p, ^uint32(0)
		return nil
	case "dl_vlan":
		n, err := unmaskedInt(value, 2, key)
		if err != nil {
			return err
		}
		if n == 0xffff {
			k.VLANTCI, mk.VLANTCI = 0, 0xffff
			return nil
		}
		k.VLANTCI = k.VLANTCI&^(flow.VLANVIDMask|flow.VLANPresent) | uint16(n)&flow.VLANVIDMask | flow.VLANPresent
		mk.VLANTCI |= flow.VLANVIDMask | flow.VLANPresent
		return nil
	case "dl_vlan_pcp":
		n, err := unmaskedInt(value, 1, key)
		if err != nil {
			return err
		}
		k.VLANTCI = k.VLANTCI&^(flow.VLANPCPMask|flow.VLANPresent) | uint16(n&7)<<13 | flow.VLANPresent
		mk.VLANTCI |= flow.VLANPCPMask | flow.VLANPresent
		return nil
	case "ip_dscp":
		n, err := unmaskedInt(value, 1, key)
		if err != nil {
			return err
		}
		k.NwTOS = k.NwTOS&3 | uint8(n<<2)
		mk.NwTOS |= 0xfc
		return nil
	case "nw_frag", "ip_frag":
		frags := map[string][2]uint8{"no": {0, 3}, "yes": {1, 1}, "first": {1, 3}, "later": {3, 3}, "not_later": {0, 2}}
		f, ok := frags[value]
		if !ok {
			return fmt.Errorf("%s: unknown fragment type (valid types are \"no\", \"yes\", \"first\", \"later\", \"not_later\"", value)
		}
		k.NwFrag, mk.NwFrag = f[0], f[1]
		return nil
	case "ct_state":
		v, msk, err := parseFlags(value, ofp.CTStateNames[:], 0xff, "ct_state")
		if err != nil {
			return err
		}
		k.CtState, mk.CtState = uint8(v), uint8(msk)
		return nil
	case "tcp_flags":
		v, msk, err := parseFlags(value, ofp.TCPFlagNames[:9], 0x0fff, "TCP")
		if err != nil {
			return err
		}
		k.TCPFlags, mk.TCPFlags = uint16(v&msk), uint16(msk)
		return nil
	}
	fd := FieldOf(key)
	if fd == nil {
		return fmt.Errorf("unknown keyword %s", key)
	}
	var val, msk []byte
	var err error
	if fd.ID == ofp.FieldTunFlags {
		// OVS's mf_from_tun_flags_string: "oam" (FLOW_TNL_PUB_F_OAM),
		// the only public flag, or a number.
		var v, m uint32
		if v, m, err = parseFlags(value, []string{"oam"}, 1, "tunnel"); err != nil {
			return err
		}
		val, msk = binary.BigEndian.AppendUint16(nil, uint16(v&m)), binary.BigEndian.AppendUint16(nil, uint16(m))
	} else if val, msk, err = parseValue(fd, value, ports); err != nil {
		return err
	}
	*mask = msk
	if !fd.Maskable && !allOnes(msk) {
		return fmt.Errorf("%s: invalid mask for field %s", value, fd.MFName())
	}
	if fd.Len == 1 && (fd.ID == ofp.FieldICMPType || fd.ID == ofp.FieldICMPCode || fd.ID == ofp.FieldICMPv6Type ||
		fd.ID == ofp.FieldICMPv6Code) {
		// OVS keeps ICMP type and code in the 16-bit transport ports,
		// all of which an exact match covers.
		if msk[0] != 0xff {
			return fmt.Errorf("%s: invalid mask for field %s", value, fd.MFName())
		}
		if fd.ID == ofp.FieldICMPType || fd.ID == ofp.FieldICMPv6Type {
			k.TpSrc, mk.TpSrc = uint16(val[0]), 0xffff
		} else {
			k.TpDst, mk.TpDst = uint16(val[0]), 0xffff
		}
		return nil
	}
	fd.SetMask(&m.Mask, msk)
	fd.SetMasked(&m.Flow, val, msk)
	return nil
}

func allOnes(b []byte) bool {
	for _, c := range b {
		if c != 0xff {
			return false
		}
	}
	return true
}

// parseFlags parses "+a-b" or "a|b" or a number[/mask] as OVS's
// parse_flags; full is the mask of a value with no "+"/"-".
func parseFlags(s string, names []string, full uint32, field string) (v, m uint32, err error) {
	if s == "" {
		return 0, 0, fmt.Errorf("%s: missing value", field)
	}
	if c := s[0]; c >= '0' && c <= '9' {
		// OVS's parse_flags: a number, or number/mask, of allowed bits
		// only; anything else is an unknown flag.
		vs, ms, hasMask := strings.Cut(s, "/")
		n, err := strconv.ParseUint(vs, 0, 32)
		mask := uint64(full)
		if err == nil && hasMask {
			mask, err = strconv.ParseUint(ms, 0, 32)
		}
		if err != nil || uint32(n)&^full != 0 || uint32(mask)&^full != 0 {
			return 0, 0, fmt.Errorf("%s: unknown %s flag(s)", s, field)
		}
		return uint32(n), uint32(mask), nil
	}
	lookup := func(name string) (uint32, error) {
		for i, n := range names {
			if n == name {
				return 1 << i, nil
			}
		}
		return 0, fmt.Errorf("%s: unknown %s flag(s)", name, field)
	}
	if s[0] == '+' || s[0] == '-' {
		for s != "" {
			sign := s[0]
			if sign != '+' && sign != '-' {
				return 0, 0, fmt.Errorf("%s: %s must be preceded by '+' (for SET) or '-' (NOT SET)", s, field)
			}
			s = s[1:]
			end := strings.IndexAny(s, "+-")
			if end < 0 {
				end = len(s)
			}
			bit, err := lookup(s[:end])
			if err != nil {
				return 0, 0, err
			}
			if m&bit != 0 {
				return 0, 0, fmt.Errorf("%s: Each %s flag can be specified only once", s[:end], field)
			}
			m |= bit
			if sign == '+' {
				v |= bit
			}
			s = s[end:]
		}
		return v, m, nil
	}
	for _, name := range strings.Split(s, "|") {
		bit, err := lookup(name)
		if err != nil {
			return 0, 0, err
		}
		v |= bit
	}
	return v, full, nil
}

// parseValue parses a field's value and optional mask into big-endian
// bytes of the field's length, as mf_parse.
func parseValue(fd *ofp.Field, s string, ports PortResolver) (value, mask []byte, err error) {
	n := fd.Len
	vs, ms, hasMask := strings.Cut(s, "/")
	switch fd.Name {
	case "eth_src", "eth_dst", "arp_sha", "arp_tha", "nd_sll", "nd_tll":
		v, err := parseMAC(vs)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: invalid Ethernet address", s)
		}
		m := [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
		if hasMask {
			if m, err = parseMAC(ms); err != nil {
				return nil, nil, fmt.Errorf("%s: invalid Ethernet address", s)
			}
		}
		return v[:], m[:], nil
	case "ip_src", "ip_dst", "arp_spa", "arp_tpa", "tun_src", "tun_dst", "ct_nw_src", "ct_nw_dst":
		a, err := netip.ParseAddr(vs)
		if err != nil || !a.Is4() {
			return nil, nil, fmt.Errorf("%s: invalid IP address", s)
		}
		v := a.As4()
		m := [4]byte{0xff, 0xff, 0xff, 0xff}
		if hasMask {
			if plen, err := strconv.Atoi(ms); err == nil {
				if plen < 0 || plen > 32 {
					return nil, nil, fmt.Errorf("%s: IPv4 network prefix bits not between 0 and 32, inclusive", s)
				}
				binary.BigEndian.PutUint32(m[:], ^uint32(0)<<(32-plen))
				if plen == 0 {
					m = [4]byte{}
				}
			} else if ma, err := netip.ParseAddr(ms); err == nil && ma.Is4() {
				m = ma.As4()
			} else {
				return nil, nil, fmt.Errorf("%s: invalid IP address", s)
			}
		}
		return v[:], m[:], nil
	case "ipv6_src", "ipv6_dst", "ct_ipv6_src", "ct_ipv6_dst", "tun_ipv6_src", "tun_ipv6_dst", "nd_target":
		a, err := netip.ParseAddr(vs)
		if err != nil || !a.Is6() {
			return nil, nil, fmt.Errorf("%s: invalid IPv6 address", s)
		}
		v := a.As16()
		var m [16]byte
		for i := range m {
			m[i] = 0xff
		}
		if hasMask {
			if plen, err := strconv.Atoi(ms); err == nil {
				if plen < 0 || plen > 128 {
					return nil, nil, fmt.Errorf("%s: IPv6 network prefix bits not between 0 and 128", s)
				}
				m = [16]byte{}
				for i := 0; i < plen; i++ {
					m[i/8] |= 0x80 >> (i % 8)
				}
			} else if ma, err := netip.ParseAddr(ms); err == nil && ma.Is6() {
				m = ma.As16()
			} else {
				return nil, nil, fmt.Errorf("%s: invalid IPv6 address", s)
			}
		}
		return v[:], m[:], nil
	case "in_port_oxm":
		p, err := ParsePort(s, ports)
		if err != nil {
			return nil, nil, err
		}
		return binary.BigEndian.AppendUint32(nil, p), []byte{0xff, 0xff, 0xff, 0xff}, nil
	}
	v, err := parseInt(vs, s, n, fd.Name)
	if err != nil {
		return nil, nil, err
	}
	m := make([]byte, n)
	for i := range m {
		m[i] = 0xff
	}
	if hasMask {
		if m, err = parseInt(ms, s, n, fd.Name); err != nil {
			if strings.Contains(err.Error(), "bad syntax") {
				return nil, nil, fmt.Errorf("%s: bad syntax for %s mask", s, fd.Name)
			}
			return nil, nil, fmt.Errorf("%s: mask too large for %d-byte field %s", s, n, fd.Name)
		}
	}
	for i := range v {
		v[i] &= m[i]
	}
	return v, m, nil
}

// unmaskedInt parses the value of a field that takes no mask (dl_vlan,
// dl_vlan_pcp, ip_dscp) as OVS's mf_parse: an integer of n bytes, then a
// mask refused; the caller drops the bits beyond the field.
func unmaskedInt(value string, n int, field string) (uint64, error) {
	vs, _, hasMask := strings.Cut(value, "/")
	b, err := parseInt(vs, value, n, field)
	if err != nil {
		return 0, err
	}
	if hasMask {
		return 0, fmt.Errorf("%s: invalid mask for field %s", value, field)
	}
	return new(big.Int).SetBytes(b).Uint64(), nil
}

// parseInt parses a decimal or 0x-hexadecimal integer s into n
// big-endian bytes, with OVS's texts (naming shown, the whole value as
// given, mask included) when it is not one or does not fit (a negative
// number is a huge one to OVS's strtoull).
func parseInt(s, shown string, n int, field string) ([]byte, error) {
	z, ok := new(big.Int).SetString(strings.TrimPrefix(s, "-"), 0)
	switch {
	case !ok:
		return nil, fmt.Errorf("%s: bad syntax for %s value", shown, field)
	case strings.HasPrefix(s, "-") || z.BitLen() > 8*n:
		return nil, fmt.Errorf("%s: value too large for %d-byte field %s", shown, n, field)
	}
	return z.FillBytes(make([]byte, n)), nil
}

func parseMAC(s string) ([6]byte, error) {
	var m [6]byte
	parts := strings.Split(s, ":")
	if len(parts) != 6 {
		return m, errors.New("bad MAC")
	}
	for i, p := range parts {
		if len(p) == 0 || len(p) > 2 {
			return m, errors.New("bad MAC")
		}
		b, err := strconv.ParseUint(p, 16, 8)
		if err != nil {
			return m, err
		}
		m[i] = byte(b)
	}
	return m, nil
}

// ParseActions parses a flow's action list, instructions allowed, as
// ofpacts_parse_instructions.
func ParseActions(s string, ports PortResolver) ([]ofp.Action, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("must specify an action")
	}
	return parseActionList(s, ports, true, 0)
}

// ParseApplyActions parses an action list where instructions are not
// allowed, a packet-out's, as ofpacts_parse_actions: "drop" or nothing
// at all is no action.
func ParseApplyActions(s string, ports PortResolver) ([]ofp.Action, error) {
	return parseActionList(s, ports, false, 0)
}

// parseActionList parses an action list as ofpacts_parse: with
// instructions allowed, or not (a packet-out's, or nested in clone,
// write_actions or ct's exec).
func parseActionList(s string, ports PortResolver, instructions bool, outer ofp.ActionType) ([]ofp.Action, error) {
	s = strings.TrimSpace(s)
	var acts []ofp.Action
	drop := false
	// Actions are separated by commas or white space, as by
	// ofpacts_parse__'s ofputil_parse_key_value.
	for rest := s; ; {
		key, arg, r, ok := SplitKV(rest)
		if !ok {
			break
		}
		rest = r
		if key == "drop" {
			drop = true
			continue
		}
		a, err := parseAction(key, arg, ports)
		if err != nil {
			return nil, err
		}
		acts = append(acts, a...)
	}
	if drop && len(acts) > 0 {
		return nil, errors.New("\"drop\" must not be accompanied by any other action or instruction")
	}
	if err := verifyActions(acts, instructions, outer); err != nil {
		return nil, err
	}
	return acts, nil
}

// The instructions in the order OpenFlow 1.1+ requires them (OVS's enum
// ovs_instruction_type), an action being part of apply_actions.
const (
	instMeter = iota
	instApply
	instClear
	instWrite
	instWriteMetadata
	instGoto
)

var instNames = [...]string{"meter", "apply_actions", "clear_actions", "write_actions", "write_metadata", "goto_table"}

func instructionOf(t ofp.ActionType) int {
	switch t {
	case ofp.ActMeter:
		return instMeter // (an OpenFlow 1.1 parse: meter is an instruction)
	case ofp.ActClearActions:
		return instClear
	case ofp.ActWriteActions:
		return instWrite
	case ofp.ActWriteMetadata:
		return instWriteMetadata
	case ofp.ActGotoTable:
		return instGoto
	}
	return instApply
}

// verifyActions checks an action list as OVS's ofpacts_verify: the
// instructions once each and in order, only apply_actions and meter
// where instructions are not allowed, and conjunctions with nothing but
// notes.
func verifyActions(acts []ofp.Action, instructions bool, outer ofp.ActionType) error {
	inst := instMeter
	for i := range acts {
		a := &acts[i]
		if a.Type == ofp.ActConjunction {
			for j := range acts {
				if b := &acts[j]; b.Type != ofp.ActConjunction && b.Type != ofp.ActNote {
					return fmt.Errorf("\"conjunction\" actions may be used along with \"note\" but not any other kind of action (such as the \"%s\" action used here)", actionName(b))
				}
			}
			return nil
		}
		if err := verifyNested(a, outer); err != nil {
			return err
		}
		next := instructionOf(a.Type)
		if i > 0 && (inst == instApply && next < inst || inst != instApply && next <= inst) {
			if next == inst {
				return fmt.Errorf("duplicate %s instruction not allowed, for OpenFlow 1.1+ compatibility", instNames[inst])
			}
			return fmt.Errorf("invalid instruction ordering: %s must appear before %s, for OpenFlow 1.1+ compatibility", instNames[next], instNames[inst])
		}
		if !instructions && next != instApply && next != instMeter {
			return fmt.Errorf("%s instruction not allowed here", instNames[next])
		}
		inst = next
	}
	return nil
}

// verifyNested checks a's place in a list nested in outer (0 at the top)
// as OVS's ofpacts_verify_nested, with its texts: ct_mark and ct_label
// are written, and nat is, only inside ct, which takes nothing else.
func verifyNested(a *ofp.Action, outer ofp.ActionType) error {
	var dst *ofp.Field
	switch a.Type {
	case ofp.ActSetField:
		dst = a.Field
	case ofp.ActMove:
		dst = a.Dst.Field
	}
	ctField := dst != nil && (dst.ID == ofp.FieldCtMark || dst.ID == ofp.FieldCtLabel)
	switch {
	case ctField && outer != ofp.ActCT:
		return errors.New("cannot set CT fields outside of ct action")
	case a.Type == ofp.ActNAT:
		if outer != ofp.ActCT {
			return errors.New(`Cannot have NAT action outside of "ct" action`)
		}
		return nil
	case outer == ofp.ActCT && dst == nil:
		return fmt.Errorf("ct action doesn't support nested action %s", actionName(a))
	case outer == ofp.ActCT && !ctField:
		return fmt.Errorf("ct action doesn't support nested modification of %s", dst.Name)
	}
	return nil
}

// actionName is OVS's ofpact_name of an action: its keyword as printed
// (OVS's names for the few printed otherwise).
func actionName(a *ofp.Action) string {
	text := ofp.FormatAction(a, ofp.V13, nil)
	if i := strings.IndexAny(text, ":("); i >= 0 {
		text = text[:i]
	}
	switch {
	case a.Type == ofp.ActOutputReg:
		return "output_reg"
	case a.Type == ofp.ActOutputTrunc:
		return "output_trunc"
	case a.Type == ofp.ActOutput || text == strings.ToUpper(text):
		return "output"
	case text == "load":
		return "set_field"
	}
	return text
}

// strtokRest is C's strtok_r(s, delims) then strtok_r(NULL, ""): the
// first token, and the rest after the delimiter that ends it ("" for
// none); ok is false when s holds only delimiters.
func strtokRest(s, delims string) (tok, rest string, ok bool) {
	s = strings.TrimLeft(s, delims)
	if s == "" {
		return "", "", false
	}
	i := strings.IndexAny(s, delims)
	if i < 0 {
		return s, "", true
	}
	return s[:i], s[i+1:], true
}

// strToU32 is OVS's str_to_u32: C's strtoul in base 0 (a sign and
// leading white space taken, the value truncated to 32 bits), with its
// error texts.
func strToU32(s string) (uint32, error) {
	if s == "" {
		return 0, errors.New("missing required numeric argument")
	}
	n, neg, ok := cNumber(s)
	if !ok {
		return 0, fmt.Errorf("invalid numeric format %s", s)
	}
	if neg {
		n = -n
	}
	return uint32(n), nil
}

// strToInt is OVS's str_to_int: C's strtol in base 0 over the whole
// string, within an int.
func strToInt(s string) (int64, bool) {
	n, neg, ok := cNumber(s)
	if !ok || n > math.MaxInt32+1 || n == math.MaxInt32+1 && !neg {
		return 0, false
	}
	if neg {
		return -int64(n), true
	}
	return int64(n), true
}

// cNumber reads a whole string as C's strtoul in base 0 does: leading
// white space, a sign, then 0x for hexadecimal or 0 for octal digits.
func cNumber(s string) (n uint64, neg, ok bool) {
	t := strings.TrimLeft(s, " \t\n\v\f\r")
	if t != "" && (t[0] == '+' || t[0] == '-') {
		neg, t = t[0] == '-', t[1:]
	}
	base := 10
	switch {
	case len(t) > 2 && (t[:2] == "0x" || t[:2] == "0X") && isHexDigit(t[2]):
		base, t = 16, t[2:]
	case len(t) > 1 && t[0] == '0':
		base = 8
	}
	if t == "" || strings.ContainsAny(t, "_+-") {
		return 0, false, false
	}
	n, err := strconv.ParseUint(t, base, 64)
	return n, neg, err == nil
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func parseU(s string, bits int, what string) (uint64, error) {
	n, err := strconv.ParseUint(s, 0, bits)
	if err != nil {
		return 0, fmt.Errorf("invalid %s \"%s\"", what, s)
	}
	return n, nil
}

func parseAction(key, arg string, ports PortResolver) ([]ofp.Action, error) {
	one := func(a ofp.Action) ([]ofp.Action, error) { return []ofp.Action{a}, nil }
	name := key                // a port's name keeps its case
	key = strings.ToLower(key) // OVS's action names are case-insensitive
	if p, ok := nxParsers[key]; ok {
		a, err := p(arg, ports)
		if err != nil {
			return nil, err
		}
		return one(a)
	}
	switch key {
	case "output", "output_reg":
		if strings.Contains(arg, "port") && strings.Contains(arg, "max_len") {
			return parseOutputTrunc(arg, ports)
		}
		if strings.Contains(arg, "[") {
			ref, err := parseRef(arg)
			if err != nil {
				return nil, err
			}
			return one(ofp.Action{Type: ofp.ActOutputReg, Src: ref})
		}
		p, err := ParsePort(arg, ports)
		if err != nil {
			return nil, fmt.Errorf("%s: output to unknown port", arg)
		}
		return one(outputAction(p, 0))
	case "controller":
		return parseController(arg)
	case "resubmit":
		// OVS's parse_RESUBMIT: "PORT", "PORT,TABLE" or
		// "PORT,TABLE,ct"; what follows a third comma is not read.
		port, table, hasTable := arg, "", false
		if p, t, ok := strings.Cut(arg, ","); ok {
			port, table, hasTable = p, t, true
		}
		table, ct, _ := strings.Cut(table, ",")
		ct, _, _ = strings.Cut(ct, ",")
		a := ofp.Resubmit(ofp.PortInPort, 0xff, hasTable)
		if port != "" {
			p, err := ParsePort(port, ports)
			if err != nil {
				return nil, fmt.Errorf("%s: resubmit to unknown port", port)
			}
			a.Port = p
		}
		if table != "" {
			n, ok := parseTable(table)
			if !ok {
				return nil, fmt.Errorf("%s: resubmit to unknown table", table)
			}
			a.Table = n
		}
		if ct != "" {
			if ct != "ct" {
				return nil, fmt.Errorf("%s: unknown parameter", ct)
			}
			a.CTOrig = true
		}
		if port == "" && table == "" {
			return nil, errors.New("at least one \"in_port\" or \"table\" must be specified  on resubmit")
		}
		return one(a)
	case "goto_table":
		n, err := parseU(arg, 8, "table")
		if err != nil {
			return nil, err
		}
		return one(ofp.Action{Type: ofp.ActGotoTable, Table: uint8(n)})
	case "mod_vlan_vid", "set_vlan_vid":
		// set_vlan_vid and set_vlan_pcp change a tag and push none
		// (OVS's parse_SET_VLAN_VID, push_vlan_if_needed false).
		n, err := strconv.ParseUint(arg, 0, 16)
		if err != nil || n > 4095 {
			return nil, fmt.Errorf("%s: not a valid VLAN VID", arg)
		}
		return one(ofp.Action{Type: ofp.ActSetVLANVID, VLAN: uint16(n), NoPush: key == "set_vlan_vid"})
	case "mod_vlan_pcp", "set_vlan_pcp":
		n, err := strconv.ParseUint(arg, 0, 8)
		if err != nil || n > 7 {
			return nil, fmt.Errorf("%s: not a valid VLAN PCP", arg)
		}
		return one(ofp.Action{Type: ofp.ActSetVLANPCP, VLAN: uint16(n), NoPush: key == "set_vlan_pcp"})
	case "apply_actions":
		return nil, errors.New("apply_actions is the default instruction")
	case "strip_vlan", "pop_vlan":
		return one(ofp.Action{Type: ofp.ActPopVLAN})
	case "push_vlan":
		n, err := strconv.ParseUint(arg, 0, 16)
		if err != nil || n != 0x8100 && n != 0x88a8 {
			return nil, fmt.Errorf("%s: not a valid VLAN ethertype", arg)
		}
		return one(ofp.Action{Type: ofp.ActPushVLAN, VLAN: uint16(n)})
	case "mod_dl_src", "mod_dl_dst", "mod_nw_src", "mod_nw_dst", "mod_nw_tos", "mod_tp_src", "mod_tp_dst":
		field := map[string]string{"mod_dl_src": "eth_src", "mod_dl_dst": "eth_dst", "mod_nw_src": "ip_src",
			"mod_nw_dst": "ip_dst", "mod_nw_tos": "nw_tos", "mod_tp_src": "tcp_src", "mod_tp_dst": "tcp_dst"}[key]
		fd := ofp.FieldByName(field)
		switch key {
		case "mod_dl_src", "mod_dl_dst":
			// OVS's str_to_mac: what follows the address is ignored.
			mac, ok := scanMAC(arg)
			if !ok {
				return nil, fmt.Errorf("invalid mac address %s", arg)
			}
			return one(ofp.SetField(fd, mac[:], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, true))
		case "mod_nw_src", "mod_nw_dst":
			// OVS's str_to_ip, whose lookup_ip logs first.
			if a, err := netip.ParseAddr(arg); err != nil || !a.Is4() {
				LogErr("socket_util", fmt.Sprintf("\"%s\" is not a valid IP address", arg))
				return nil, fmt.Errorf("%s: could not convert to IP address", arg)
			}
		}
		v, m, err := parseValue(fd, arg, ports)
		if err != nil {
			return nil, err
		}
		if !allOnes(m) {
			return nil, fmt.Errorf("%s: invalid value for %s", arg, key)
		}
		if key == "mod_nw_tos" && v[0]&3 != 0 {
			return nil, fmt.Errorf("%s: not a valid TOS", arg)
		}
		return one(ofp.SetField(fd, v, m, true))
	case "mod_nw_ecn", "mod_nw_ttl":
		// OVS's parse_SET_IP_ECN and parse_SET_IP_TTL: str_to_u8, then
		// ECN's two bits.
		what, field := "ECN", ofp.FieldIPECN
		if key == "mod_nw_ttl" {
			what, field = "TTL", ofp.FieldIPTTL
		}
		n, ok := strToInt(arg)
		if !ok || n < 0 || n > 255 {
			return nil, fmt.Errorf("invalid %s \"%s\"", what, arg)
		}
		if field == ofp.FieldIPECN && n&^3 != 0 {
			return nil, fmt.Errorf("%s: not a valid ECN", arg)
		}
		return one(ofp.SetField(ofp.FieldByID(field), []byte{byte(n)}, []byte{0xff}, true))
	case "set_field":
		val, dst, ok := strings.Cut(arg, "->")
		if !ok {
			return nil, fmt.Errorf("%s: missing `->'", arg)
		}
		fd := FieldOf(dst)
		if fd == nil {
			return nil, fmt.Errorf("%s is not a valid OXM field name", dst)
		}
		if !fd.Writable {
			return nil, fmt.Errorf("%s is read-only", dst)
		}
		v, m, err := parseValue(fd, val, ports)
		if err != nil {
			return nil, err
		}
		if fd.ID == ofp.FieldVLANVID {
			v[0] |= 0x10 // set_field:N->vlan_vid sets OFPVID_PRESENT
		}
		if idx := ofp.TunMetadataIndex(fd); idx >= 0 {
			return one(ofp.SetTunMetadata(idx, v, m, false))
		}
		return one(ofp.SetField(fd, v, m, false))
	case "load":
		val, dst, ok := strings.Cut(arg, "->")
		if !ok {
			return nil, fmt.Errorf("%s: missing `->'", arg)
		}
		ref, err := parseRef(dst)
		if err != nil {
			return nil, err
		}
		// OVS's parse_reg_load: parse_int_string in the field's width
		// (what follows the number is not looked at), and the value
		// as the field shows one when it has more bits than the range.
		z, _, ok := parseIntString(val, ref.Field.Len)
		if !ok {
			return nil, fmt.Errorf("%s: cannot parse integer value", arg)
		}
		if z.BitLen() > ref.NBits {
			return nil, fmt.Errorf("%s: value %s does not fit into %d bits", arg,
				ofp.FormatFieldValue(ref.Field, z.FillBytes(make([]byte, ref.Field.Len)), nil, nil), ref.NBits)
		}
		mask := new(big.Int).Lsh(big.NewInt(1), uint(ref.NBits))
		mask.Sub(mask, big.NewInt(1))
		value := new(big.Int).Lsh(z, uint(ref.Ofs)).FillBytes(make([]byte, ref.Field.Len))
		maskb := mask.Lsh(mask, uint(ref.Ofs)).FillBytes(make([]byte, ref.Field.Len))
		if idx := ofp.TunMetadataIndex(ref.Field); idx >= 0 {
			return one(ofp.SetTunMetadata(idx, value, maskb, true))
		}
		return one(ofp.LoadAction(ref.Field, value, maskb))
	case "move":
		m, err := parseMove(arg)
		if err != nil {
			return nil, err
		}
		return one(m)
	case "push", "pop":
		ref, err := parseRef(arg)
		if err != nil {
			return nil, err
		}
		if key == "push" {
			return one(ofp.Action{Type: ofp.ActStackPush, Src: ref})
		}
		return one(ofp.Action{Type: ofp.ActStackPop, Dst: ref})
	case "set_tunnel", "set_tunnel64":
		// OVS's parse_set_tunnel, str_to_u64.
		if arg == "" {
			return nil, errors.New("missing required numeric argument")
		}
		id, err := strconv.ParseUint(arg, 0, 64)
		if err != nil {
			return nil, fmt.Errorf("invalid numeric format %s", arg)
		}
		return one(ofp.SetTunnel(id, key == "set_tunnel64"))
	case "write_metadata":
		vs, ms, hasMask := strings.Cut(arg, "/")
		v, err := parseU(vs, 64, "metadata")
		if err != nil {
			return nil, err
		}
		m := ^uint64(0)
		if hasMask {
			if m, err = parseU(ms, 64, "metadata mask"); err != nil {
				return nil, err
			}
		}
		return one(ofp.Action{Type: ofp.ActWriteMetadata, Metadata: v & m, MetadataMask: m})
	case "group", "meter":
		n, err := parseU(arg, 32, key)
		if err != nil {
			return nil, err
		}
		t := ofp.ActGroup
		if key == "meter" {
			t = ofp.ActMeter
		}
		return one(ofp.Action{Type: t, ID: uint32(n)})
	case "set_queue":
		// OVS's parse_SET_QUEUE.
		n, err := strToU32(arg)
		if err != nil {
			return nil, err
		}
		return one(ofp.Action{Type: ofp.ActSetQueue, ID: n})
	case "pop_queue":
		// OVS's parse_POP_QUEUE ignores an argument.
		return one(ofp.Action{Type: ofp.ActPopQueue})
	case "enqueue":
		// OVS's parse_ENQUEUE: "PORT:QUEUE" or "PORT,QUEUE" (strtok_r on
		// ":q,", then the rest).
		port, queue, ok := strtokRest(arg, ":q,")
		if !ok || queue == "" {
			return nil, errors.New(`"enqueue" syntax is "enqueue:PORT:QUEUE" or "enqueue(PORT,QUEUE)"`)
		}
		p, err := ParsePort(port, ports)
		if err != nil {
			return nil, fmt.Errorf("%s: enqueue to unknown port", port)
		}
		n, err := strToU32(queue)
		if err != nil {
			return nil, err
		}
		return one(ofp.Action{Type: ofp.ActEnqueue, Port: p, ID: n})
	case "ct_clear":
		return one(ofp.Action{Type: ofp.ActCTClear})
	case "exit":
		return one(ofp.Action{Type: ofp.ActExit})
	case "clear_actions":
		return one(ofp.Action{Type: ofp.ActClearActions})
	case "note":
		var data []byte
		for _, h := range strings.FieldsFunc(arg, func(r rune) bool { return r == '.' || r == ':' || r == ' ' }) {
			for len(h) > 0 {
				n := min(2, len(h))
				b, err := strconv.ParseUint(h[:n], 16, 8)
				if err != nil {
					return nil, fmt.Errorf("bad hex digit in `note' argument")
				}
				data = append(data, byte(b))
				h = h[n:]
			}
		}
		return one(ofp.Action{Type: ofp.ActNote, Data: data})
	case "clone", "write_actions":
		t := ofp.ActClone
		if key == "write_actions" {
			t = ofp.ActWriteActions
		}
		nested, err := parseActionList(arg, ports, false, t)
		if err != nil {
			return nil, err
		}
		return one(ofp.Action{Type: t, Nested: nested})
	case "conjunction":
		id, k, n, ok := scanConjunction(arg)
		switch {
		case !ok:
			return nil, errors.New("\"conjunction\" syntax is \"conjunction(id,i/n)\"")
		case n < 2:
			return nil, errors.New("conjunction must have at least 2 clauses")
		case n > 64:
			return nil, errors.New("conjunction must have at most 64 clauses")
		case k < 1:
			return nil, errors.New("clause index must be positive")
		case k > n:
			return nil, errors.New("clause index must be less than or equal to number of clauses")
		}
		return one(ofp.Action{Type: ofp.ActConjunction, ID: id, Clause: k - 1, NClauses: n})
	case "ct":
		return parseCT(arg, ports)
	case "nat":
		// Only inside ct's exec (verifyNested), where it is the ct's
		// nat, as OVS parses it.
		n, err := parseNAT(arg)
		if err != nil {
			return nil, err
		}
		return one(ofp.Action{Type: ofp.ActNAT, NAT: n})
	}
	// A port's name or number outputs to it; OVS ignores a value
	// given with it ("in_port=1" is output:IN_PORT).
	if p, err := ParsePort(name, ports); err == nil {
		return one(outputAction(p, 0))
	}
	return nil, fmt.Errorf("unknown action %s", key)
}

// parseTable is OVS's ofputil_table_from_string with no table map: a
// decimal number up to 255, with its warnings.
func parseTable(s string) (uint8, bool) {
	if strings.HasPrefix(s, "-") {
		Warn("ofp_table", fmt.Sprintf("Negative value %s is not a valid table number.", s))
		return 0, false
	}
	n, ok := strToUint10(s)
	if !ok {
		return 0, false
	}
	if n > 255 {
		Warn("ofp_table", fmt.Sprintf("table %d is outside the supported range 0 through 255", n))
		return 0, false
	}
	return uint8(n), true
}

func outputAction(p uint32, maxLen uint16) ofp.Action {
	if p == ofp.PortController {
		return ofp.Action{Type: ofp.ActController, Port: p, MaxLen: 0xffff, Reason: ofp.PacketInAction}
	}
	return ofp.Action{Type: ofp.ActOutput, Port: p, MaxLen: maxLen}
}

// parseOutputTrunc parses output(port=PORT,max_len=N) as OVS's
// parse_truncate_subfield: ports above the physical ones other than
// LOCAL and IN_PORT are refused, max_len is str_to_u32's.
func parseOutputTrunc(arg string, ports PortResolver) ([]ofp.Action, error) {
	a := ofp.Action{Type: ofp.ActOutputTrunc}
	for rest := arg; ; {
		k, v, r, ok := SplitKV(rest)
		if !ok {
			break
		}
		rest = r
		switch k {
		case "port":
			p, err := ParsePort(v, ports)
			if err != nil {
				return nil, fmt.Errorf("output to unknown truncate port: %s", v)
			}
			if p > ofp.PortMax && p != ofp.PortLocal && p != ofp.PortInPort {
				return nil, fmt.Errorf("output to unsupported truncate port: %s", v)
			}
			a.Port = p
		case "max_len":
			n, err := strToU32(v)
			if err != nil {
				return nil, err
			}
			if n < 14 {
				return nil, fmt.Errorf("max_len %d is less than the minimum value 14", n)
			}
			a.ID = n
		default:
			return nil, fmt.Errorf("invalid key '%s' in output_trunc argument", k)
		}
	}
	return []ofp.Action{a}, nil
}

// parseController parses "controller", "controller:MAX_LEN" or
// "controller(key=value,...)".
func parseController(arg string) ([]ofp.Action, error) {
	a := ofp.Action{Type: ofp.ActController, Port: ofp.PortController, MaxLen: 0xffff, Reason: ofp.PacketInAction}
	if arg == "" {
		return []ofp.Action{a}, nil
	}
	if n, err := strconv.ParseUint(arg, 0, 16); err == nil {
		a.MaxLen = uint16(n)
		return []ofp.Action{a}, nil
	}
	for rest := arg; ; {
		k, v, r, ok := SplitKV(rest)
		if !ok {
			break
		}
		rest = r
		switch k {
		case "max_len":
			n, err := parseU(v, 16, "max_len")
			if err != nil {
				return nil, err
			}
			a.MaxLen = uint16(n)
		case "reason":
			r, ok := ofp.PacketInReason(v)
			a.Reason = r
			if !ok {
				return nil, fmt.Errorf("unknown reason \"%s\"", v)
			}
		case "id":
			n, err := parseU(v, 16, "controller id")
			if err != nil {
				return nil, err
			}
			a.ControllerID = uint16(n)
		case "userdata":
			data, err := parseHexArg(v)
			if err != nil {
				return nil, errors.New("bad hex digit in `controller' action `userdata'")
			}
			a.Userdata = data
		case "pause":
			a.Pause = true
		case "meter_id":
			n, err := strconv.ParseUint(v, 0, 32)
			if err != nil {
				return nil, fmt.Errorf("invalid numeric format %s", v)
			}
			a.ID = uint32(n)
		default:
			return nil, fmt.Errorf("%s: govs' ovs-ofctl does not support this controller argument", k)
		}
	}
	return []ofp.Action{a}, nil
}

// parseCT parses ct(...)'s arguments: commit, force, table, zone, nat
// without a range, exec and alg.
func parseCT(arg string, ports PortResolver) ([]ofp.Action, error) {
	c := &ofp.CT{Table: ofp.CTNoTable}
	a := ofp.Action{Type: ofp.ActCT, CT: c}
	var nat *ofp.Action
	var exec []ofp.Action
	for s := arg; ; {
		key, value, rest, ok := SplitKV(s)
		if !ok {
			break
		}
		s = rest
		switch key {
		case "commit":
			c.Flags |= ofp.CTCommit
		case "force":
			c.Flags |= ofp.CTForce
		case "table":
			n, ok := parseTable(value)
			if !ok {
				return nil, fmt.Errorf("unknown table %s", value)
			}
			if n == ofp.CTNoTable {
				return nil, fmt.Errorf("invalid table %#x", n)
			}
			c.Table = n
		case "zone":
			// str_to_u16, else a field's bits.
			if n, ok := strToInt(value); ok && n >= 0 && n <= 0xffff {
				c.ZoneImm = uint16(n)
				break
			}
			ref, err := parseRef(value)
			if err != nil {
				return nil, err
			}
			c.ZoneSrc = ref
		case "alg":
			// str_to_connhelper: by name only.
			switch value {
			case "ftp":
				c.Alg = 21
			case "tftp":
				c.Alg = 69
			default:
				return nil, fmt.Errorf("invalid conntrack helper \"%s\"", value)
			}
		case "nat":
			n, err := parseNAT(value)
			if err != nil {
				return nil, err
			}
			nat = &ofp.Action{Type: ofp.ActNAT, NAT: n}
		case "exec":
			acts, err := parseActionList(value, ports, false, ofp.ActCT)
			if err != nil {
				return nil, err
			}
			exec = acts
		default:
			return nil, fmt.Errorf("invalid argument to \"ct\" action: `%s'", key)
		}
	}
	if c.Flags&ofp.CTForce != 0 && c.Flags&ofp.CTCommit == 0 {
		return nil, errors.New(`"force" flag requires "commit" flag.`)
	}
	if nat != nil {
		a.Nested = append(a.Nested, *nat)
	}
	a.Nested = append(a.Nested, exec...)
	return []ofp.Action{a}, nil
}

// parseNAT parses nat's arguments as OVS's parse_NAT: src or dst, with
// an optional =ADDR[-ADDR][:PORT[-PORT]] range, and persistent, hash or
// random.
func parseNAT(arg string) (*ofp.NAT, error) {
	n := &ofp.NAT{}
	for s := arg; ; {
		key, value, rest, ok := SplitKV(s)
		if !ok {
			break
		}
		s = rest
		switch key {
		case "src", "dst":
			if n.Flags&(ofp.NATSrc|ofp.NATDst) != 0 {
				return nil, errors.New("May only specify one of \"src\" or \"dst\".")
			}
			n.Flags |= map[string]uint16{"src": ofp.NATSrc, "dst": ofp.NATDst}[key]
			if value != "" {
				if err := parseNATRange(n, value); err != nil {
					return nil, err
				}
			}
		case "persistent":
			n.Flags |= ofp.NATPersistent
		case "hash":
			n.Flags |= ofp.NATHash
		case "random":
			n.Flags |= ofp.NATRandom
		default:
			return nil, fmt.Errorf("invalid key \"%s\" in \"nat\" argument", key)
		}
	}
	if n.Family == 0 && n.Flags&(ofp.NATPersistent|ofp.NATHash|ofp.NATRandom) != 0 {
		return nil, errors.New("Flags allowed only with range.")
	}
	if n.Flags&ofp.NATHash != 0 && n.Flags&ofp.NATRandom != 0 {
		return nil, errors.New("Both \"hash\" and \"random\" are not allowed.")
	}
	return n, nil
}

// parseNATRange parses ADDR[-ADDR][:PORT[-PORT]], an IPv6 address in
// brackets when a port follows.
func parseNATRange(n *ofp.NAT, s string) error {
	bad := fmt.Errorf("%s: invalid IP address(es)", s)
	addrs, ports := s, ""
	if strings.HasPrefix(s, "[") {
		// [v6]-[v6]:ports
		end := strings.LastIndex(s, "]")
		if end < 0 {
			return bad
		}
		addrs, ports = s[:end+1], strings.TrimPrefix(s[end+1:], ":")
		addrs = strings.NewReplacer("[", "", "]", "").Replace(addrs)
	} else if strings.Count(s, ":") == 1 {
		addrs, ports, _ = strings.Cut(s, ":")
	}
	lo, hi, hasHi := strings.Cut(addrs, "-")
	min, err := netip.ParseAddr(lo)
	if err != nil {
		return bad
	}
	n.Family = 4
	if min.Is6() {
		n.Family = 6
	}
	put := func(dst *[16]byte, a netip.Addr) {
		if a.Is4() {
			b := a.As4()
			copy(dst[:4], b[:])
		} else {
			*dst = a.As16()
		}
	}
	put(&n.MinAddr, min)
	if hasHi {
		max, err := netip.ParseAddr(hi)
		if err != nil || max.Is4() != min.Is4() || max.Less(min) {
			return bad
		}
		put(&n.MaxAddr, max)
	}
	if ports != "" {
		plo, phi, hasPhi := strings.Cut(ports, "-")
		p, err := strconv.ParseUint(plo, 10, 16)
		if err != nil || p == 0 {
			return fmt.Errorf("%s: invalid port(s)", ports)
		}
		n.MinPort = uint16(p)
		if hasPhi {
			q, err := strconv.ParseUint(phi, 10, 16)
			if err != nil || q < p {
				return fmt.Errorf("%s: invalid port(s)", ports)
			}
			n.MaxPort = uint16(q)
		}
	}
	return nil
}

// parseHexArg parses hex bytes, optionally separated by '.', as
// OVS's parse_hex_bytes does for userdata.
func parseHexArg(s string) ([]byte, error) {
	var data []byte
	for len(s) > 0 {
		if s[0] == '.' {
			s = s[1:]
			continue
		}
		if len(s) < 2 {
			return nil, fmt.Errorf("%s: hex digits expected", s)
		}
		b, err := strconv.ParseUint(s[:2], 16, 8)
		if err != nil {
			return nil, fmt.Errorf("%s: hex digits expected", s)
		}
		data = append(data, byte(b))
		s = s[2:]
	}
	return data, nil
}

// scanConjunction reads "id,i/n" as OVS's parse_CONJUNCTION scans it
// ("%i , %hhu / %hhu %n", the whole argument): white space around the
// separators, an id in C's base notation (0x.., 0..) that wraps to 32
// bits, clause numbers in decimal that wrap to 8 bits.
func scanConjunction(s string) (id uint32, k, n uint8, ok bool) {
	sc := cScanner{s: s}
	i, ok1 := sc.num(0)
	sc.lit(',')
	ki, ok2 := sc.num(10)
	sc.lit('/')
	ni, ok3 := sc.num(10)
	sc.space()
	if !ok1 || !ok2 || !ok3 || sc.bad || sc.s != "" {
		return 0, 0, 0, false
	}
	return uint32(i), uint8(ki), uint8(ni), true
}

// scanMAC reads an Ethernet address as OVS's str_to_mac scans it
// (ETH_ADDR_SCAN_FMT, "%hhx:%hhx:...:%hhx", with nothing required after).
func scanMAC(s string) (mac [6]byte, ok bool) {
	c := cScanner{s: s}
	for i := range mac {
		if i > 0 {
			if c.s == "" || c.s[0] != ':' {
				return mac, false
			}
			c.s = c.s[1:]
		}
		v, ok := c.num(16)
		if !ok {
			return mac, false
		}
		mac[i] = byte(v)
	}
	return mac, true
}

// cScanner reads text as scanf's conversions do.
type cScanner struct {
	s   string
	bad bool // a literal was missing
}

func (c *cScanner) space() { c.s = strings.TrimLeft(c.s, " \t\n\v\f\r") }

// lit reads white space (as scanf's " " directive) and the byte b.
func (c *cScanner) lit(b byte) {
	c.space()
	if c.s == "" || c.s[0] != b {
		c.bad = true
		return
	}
	c.s = c.s[1:]
}

// num reads an integer as scanf's %i (base 0), %u (10) or %x (16) does:
// white space, a sign, an 0x (for bases 0 and 16) or 0 (base 0) prefix,
// the digits strtoull takes (saturating), a minus negating in unsigned
// arithmetic; the caller truncates to the conversion's width.
func (c *cScanner) num(base int) (uint64, bool) {
	c.space()
	neg := false
	t := c.s
	if t != "" && (t[0] == '+' || t[0] == '-') {
		neg = t[0] == '-'
		t = t[1:]
	}
	hexPrefix := len(t) > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X') && isHex(t[2])
	switch {
	case (base == 0 || base == 16) && hexPrefix:
		base, t = 16, t[2:]
	case base == 0 && len(t) > 1 && t[0] == '0':
		base = 8
	case base == 0:
		base = 10
	}
	n := 0
	for n < len(t) && digitVal(t[n]) < base {
		n++
	}
	if n == 0 {
		return 0, false
	}
	v, err := strconv.ParseUint(t[:n], base, 64)
	if err != nil {
		v = ^uint64(0)
	}
	c.s = t[n:]
	if neg {
		v = -v
	}
	return v, true
}

func isHex(b byte) bool { return digitVal(b) < 16 }

func digitVal(b byte) int {
	switch {
	case b >= '0' && b <= '9':
		return int(b - '0')
	case b >= 'a' && b <= 'f':
		return int(b-'a') + 10
	case b >= 'A' && b <= 'F':
		return int(b-'A') + 10
	}
	return 99
}
