package ofptext

import (
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// Parsers of the Nicira actions with their own argument syntax, with
// OVS 3.1's texts for what they refuse: learn (lib/learn.c), multipath
// (lib/multipath.c), bundle and bundle_load (lib/bundle.c),
// check_pkt_larger, fin_timeout and dec_ttl (lib/ofp-actions.c).

// nxParsers parse the arguments of the actions named (parseAction's
// key).
var nxParsers = map[string]func(arg string, ports PortResolver) (ofp.Action, error){
	"dec_ttl":          func(arg string, _ PortResolver) (ofp.Action, error) { return parseDecTTL(arg) },
	"fin_timeout":      func(arg string, _ PortResolver) (ofp.Action, error) { return parseFinTimeout(arg) },
	"check_pkt_larger": func(arg string, _ PortResolver) (ofp.Action, error) { return parseCheckPktLarger(arg) },
	"learn": func(arg string, ports PortResolver) (ofp.Action, error) {
		l, err := parseLearn(arg, ports)
		return ofp.Action{Type: ofp.ActLearn, Learn: l}, err
	},
	"multipath": func(arg string, _ PortResolver) (ofp.Action, error) {
		m, err := parseMultipath(arg)
		return ofp.Action{Type: ofp.ActMultipath, Multipath: m}, err
	},
	"bundle": func(arg string, ports PortResolver) (ofp.Action, error) {
		bd, err := parseBundle(arg, false, ports)
		return ofp.Action{Type: ofp.ActBundle, Bundle: bd}, err
	},
	"bundle_load": func(arg string, ports PortResolver) (ofp.Action, error) {
		bd, err := parseBundle(arg, true, ports)
		return ofp.Action{Type: ofp.ActBundle, Bundle: bd}, err
	},
}

// parseSubfield parses a field range at the start of s as
// mf_parse_subfield__: a field's NXM/OXM or OVS name, then "[]",
// "[BIT]", "[START..END]" or nothing (the whole field). It returns what
// follows.
func parseSubfield(s string) (ofp.FieldRef, string, error) {
	n := strings.IndexAny(s, "[-")
	if n < 0 {
		n = len(s)
	}
	name := s[:n]
	fd := ofp.FieldByNXMName(name)
	if fd == nil {
		fd = tunMetadataField(name, true)
	}
	if fd == nil {
		fd = fieldByName(name)
	}
	if fd == nil {
		return ofp.FieldRef{}, "", fmt.Errorf("%s: unknown field `%s'", s, name)
	}
	start, end := 0, fd.Bits()-1
	rest := s[n:]
	if strings.HasPrefix(rest, "[") {
		close := strings.IndexByte(rest, ']')
		inner := ""
		if close > 0 {
			inner = rest[1:close]
		}
		lo, hi, isRange := strings.Cut(inner, "..")
		a, err1 := scanInt(lo)
		b, err2 := scanInt(hi)
		switch {
		case close < 0:
			return ofp.FieldRef{}, "", fmt.Errorf("%s: syntax error expecting [] or [<bit>] or [<start>..<end>]", s)
		case inner == "":
		case isRange && err1 == nil && err2 == nil:
			start, end = a, b
		case !isRange && err1 == nil:
			start, end = a, a
		default:
			return ofp.FieldRef{}, "", fmt.Errorf("%s: syntax error expecting [] or [<bit>] or [<start>..<end>]", s)
		}
		rest = rest[close+1:]
	}
	switch {
	case start > end:
		return ofp.FieldRef{}, "", fmt.Errorf("%s: starting bit %d is after ending bit %d", s, start, end)
	case start >= fd.Bits():
		return ofp.FieldRef{}, "", fmt.Errorf("%s: starting bit %d is not valid because field is only %d bits wide", s, start, fd.Bits())
	case end >= fd.Bits():
		return ofp.FieldRef{}, "", fmt.Errorf("%s: ending bit %d is not valid because field is only %d bits wide", s, end, fd.Bits())
	}
	return ofp.FieldRef{Field: fd, Ofs: start, NBits: end - start + 1}, rest, nil
}

// scanInt is C's "%d" of ovs_scan: optional sign and decimal digits.
func scanInt(s string) (int, error) {
	s = strings.TrimSpace(s)
	return strconv.Atoi(s)
}

// parseRef parses a whole string as a field range (mf_parse_subfield).
func parseRef(s string) (ofp.FieldRef, error) {
	ref, rest, err := parseSubfield(s)
	if err == nil && rest != "" {
		err = errors.New("unexpected input following field syntax")
	}
	return ref, err
}

// atoi is C's atoi: leading white space, a sign and the digits that
// follow, 0 for none.
func atoi(s string) int {
	s = strings.TrimLeft(s, " \t\n\r\f\v")
	i := 0
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		i++
	}
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	n, _ := strconv.ParseInt(s[:i], 10, 64)
	return int(int32(n))
}

// strtoull is C's strtoull with base 0, 0 when s holds no number.
func strtoull(s string) uint64 {
	s = strings.TrimLeft(s, " \t\n\r\f\v")
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimLeft(s, "+-")
	base, digits := 10, "0123456789"
	switch {
	case len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X") && strings.ContainsRune("0123456789abcdefABCDEF", rune(s[2])):
		base, digits, s = 16, "0123456789abcdefABCDEF", s[2:]
	case strings.HasPrefix(s, "0"):
		base, digits = 8, "01234567"
	}
	i := 0
	for i < len(s) && strings.IndexByte(digits, s[i]) >= 0 {
		i++
	}
	n, err := strconv.ParseUint(s[:i], base, 64)
	if err != nil && i > 0 {
		n = ^uint64(0)
	}
	if neg {
		n = -n
	}
	return n
}

// parseIntString is OVS's parse_int_string: 0x and hexadecimal digits
// (white space between them skipped), or else C's strtoull in base 0
// (decimal, or octal after a 0), of at most n bytes; it returns the
// number and what follows it.
func parseIntString(s string, n int) (*big.Int, string, bool) {
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		var digits []byte
		i := 2
		for {
			for i < len(s) && strings.IndexByte(" \t\r\n", s[i]) >= 0 {
				i++
			}
			if i == len(s) || !isHexDigit(s[i]) {
				break
			}
			if len(digits) > 0 || s[i] != '0' {
				digits = append(digits, s[i])
			}
			i++
		}
		if (len(digits)+1)/2 > n {
			return nil, s, false
		}
		z, _ := new(big.Int).SetString("0"+string(digits), 16)
		return z, s[i:], true
	}
	t := strings.TrimLeft(s, " \t\n\v\f\r")
	base, digits := 10, "0123456789"
	if strings.HasPrefix(t, "0") {
		base, digits = 8, "01234567"
	}
	i := 0
	for i < len(t) && strings.IndexByte(digits, t[i]) >= 0 {
		i++
	}
	z, ok := new(big.Int).SetString(t[:i], base)
	if !ok || z.BitLen() > 64 || z.BitLen() > 8*n {
		return nil, s, false
	}
	return z, t[i:], true
}

// lowBytes is the low ceil(nbits/8) bytes of z, big-endian.
func lowBytes(z *big.Int, nbits int) []byte {
	n := (nbits + 7) / 8
	b := z.FillBytes(make([]byte, max(n, (z.BitLen()+7)/8)))
	return b[len(b)-n:]
}

// parseLearn parses learn(...)'s arguments as learn_parse.
func parseLearn(arg string, ports PortResolver) (*ofp.Learn, error) {
	orig := arg
	l := &ofp.Learn{Priority: 0x8000, Table: 1}
	var dstMatch ofp.Match
	for rest := arg; ; {
		name, value, r, ok := SplitKV(rest)
		if !ok {
			break
		}
		rest = r
		switch name {
		case "table":
			t, err := strconv.ParseUint(value, 10, 8)
			if err != nil {
				return nil, fmt.Errorf("unknown table \"%s\"", value)
			}
			if t == 255 {
				return nil, fmt.Errorf("%s: table id 255 not valid for `learn' action", orig)
			}
			l.Table = uint8(t)
		case "priority":
			l.Priority = uint16(atoi(value))
		case "idle_timeout":
			l.IdleTimeout = uint16(atoi(value))
		case "hard_timeout":
			l.HardTimeout = uint16(atoi(value))
		case "fin_idle_timeout":
			l.FinIdleTimeout = uint16(atoi(value))
		case "fin_hard_timeout":
			l.FinHardTimeout = uint16(atoi(value))
		case "cookie":
			l.Cookie = strtoull(value)
		case "send_flow_rem":
			l.Flags |= ofp.LearnSendFlowRem
		case "delete_learned":
			l.Flags |= ofp.LearnDeleteLearned
		case "limit":
			l.Limit = uint32(atoi(value))
		case "result_dst":
			l.Flags |= ofp.LearnWriteResult
			ref, err := parseRef(value)
			if err != nil {
				return nil, err
			}
			if !ref.Field.Writable {
				return nil, fmt.Errorf("%s is read-only", value)
			}
			if ref.NBits != 1 {
				return nil, errors.New("result_dst in 'learn' action must be a single bit")
			}
			l.ResultDst = ref
		default:
			spec, err := parseLearnSpec(orig, name, value, ports, &dstMatch)
			if err != nil {
				return nil, err
			}
			l.Specs = append(l.Specs, spec)
		}
	}
	return l, nil
}

// parseLearnSpec parses one of learn's specs as learn_parse_spec: a
// match field (from a field or an immediate), load:SRC->DST or
// output:SRC. dst accumulates the immediates matched so far.
func parseLearnSpec(orig, name, value string, ports PortResolver, dst *ofp.Match) (ofp.LearnSpec, error) {
	if d, err := parseRef(name); err == nil {
		spec := ofp.LearnSpec{Kind: ofp.LearnMatch, NBits: d.NBits, Dst: d}
		if value == "" {
			spec.Src = d
			return spec, nil
		}
		src, serr := parseRef(value)
		if serr == nil {
			if src.NBits != d.NBits {
				return spec, fmt.Errorf("%s: bit widths of %s (%d) and %s (%d) differ", orig, name, src.NBits, value, d.NBits)
			}
			spec.Src = src
			return spec, nil
		}
		// An immediate: the whole field's value, or an integer that fits
		// the bits.
		full := d.Ofs == 0 && d.NBits == d.Field.Bits()
		var imm []byte
		var immErr error
		if full {
			v, m, err := parseValue(d.Field, value, ports)
			switch {
			case err != nil:
				immErr = err
			case !allOnes(m):
				immErr = fmt.Errorf("%s: wildcards not allowed here", value)
			default:
				imm = v
			}
		} else {
			z, tail, ok := parseIntString(value, d.Field.Len)
			switch {
			case !ok || tail != "":
				immErr = fmt.Errorf("%s: cannot parse integer value", orig)
			case z.BitLen() > d.NBits:
				immErr = fmt.Errorf("%s: value %s does not fit into %d bits", orig,
					ofp.FormatFieldValue(d.Field, z.FillBytes(make([]byte, d.Field.Len)), nil, nil), d.NBits)
			default:
				imm = z.FillBytes(make([]byte, d.Field.Len))
			}
		}
		if immErr != nil {
			return spec, fmt.Errorf("%s: %s value %s cannot be parsed as a subfield (%v) or an immediate value (%v)",
				orig, name, value, serr, immErr)
		}
		spec.Imm = imm[len(imm)-(d.NBits+7)/8:]
		v, m := spec.Value(nil)
		d.Field.SetMasked(&dst.Flow, v, m)
		d.Field.SetMask(&dst.Mask, m)
		return spec, nil
	}
	switch name {
	case "load":
		arrow := strings.Index(value, "->")
		switch {
		case arrow == 0:
			return ofp.LearnSpec{}, fmt.Errorf("%s: missing source before `->' in `%s'", name, value)
		case arrow < 0:
			return ofp.LearnSpec{}, fmt.Errorf("%s: missing `->' in `%s'", name, value)
		}
		if z, tail, ok := parseIntString(value, 128); ok && tail != value {
			if !strings.HasPrefix(tail, "->") {
				return ofp.LearnSpec{}, fmt.Errorf("%s: garbage before `->' in `%s'", name, value)
			}
			d, err := parseRef(value[arrow+2:])
			if err != nil {
				return ofp.LearnSpec{}, err
			}
			if z.BitLen() > d.NBits {
				return ofp.LearnSpec{}, fmt.Errorf("%s: value does not fit into %d bits", value, d.NBits)
			}
			return ofp.LearnSpec{Kind: ofp.LearnLoad, NBits: d.NBits, Imm: lowBytes(z, d.NBits), Dst: d}, nil
		}
		m, err := parseMove(value)
		if err != nil {
			return ofp.LearnSpec{}, err
		}
		return ofp.LearnSpec{Kind: ofp.LearnLoad, NBits: m.Src.NBits, Src: m.Src, Dst: m.Dst}, nil
	case "output":
		src, err := parseRef(value)
		if err != nil {
			return ofp.LearnSpec{}, err
		}
		return ofp.LearnSpec{Kind: ofp.LearnOutput, NBits: src.NBits, Src: src}, nil
	}
	return ofp.LearnSpec{}, fmt.Errorf("%s: unknown keyword %s", orig, name)
}

// parseMove parses "SRC->DST" as nxm_parse_reg_move.
func parseMove(arg string) (ofp.Action, error) {
	src, rest, err := parseSubfield(arg)
	if err != nil {
		return ofp.Action{}, err
	}
	if !strings.HasPrefix(rest, "->") {
		return ofp.Action{}, fmt.Errorf("%s: missing `->' following source", arg)
	}
	dst, rest, err := parseSubfield(rest[2:])
	if err != nil {
		return ofp.Action{}, err
	}
	if rest != "" {
		return ofp.Action{}, fmt.Errorf("%s: trailing garbage following destination", arg)
	}
	if src.NBits != dst.NBits {
		return ofp.Action{}, fmt.Errorf("%s: source field is %d bits wide but destination is %d bits wide", arg, src.NBits, dst.NBits)
	}
	return ofp.Action{Type: ofp.ActMove, Src: src, Dst: dst}, nil
}

// hashFields are the names multipath and bundle take (lower case).
var hashFields = map[string]ofp.HashFields{"eth_src": ofp.HashEthSrc, "symmetric_l4": ofp.HashSymmetricL4,
	"symmetric_l3l4": ofp.HashSymmetricL3L4, "symmetric_l3l4+udp": ofp.HashSymmetricL3L4UDP, "nw_src": ofp.HashNwSrc,
	"nw_dst": ofp.HashNwDst, "symmetric_l3": ofp.HashSymmetricL3}

// strtok splits s at runs of any of seps, as strtok_r.
func strtok(s, seps string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(seps, r) })
}

// parseMultipath parses multipath(...)'s arguments as multipath_parse.
func parseMultipath(arg string) (*ofp.Multipath, error) {
	tok := strtok(arg, ", ")
	if len(tok) < 6 {
		return nil, fmt.Errorf("%s: not enough arguments to multipath action", arg)
	}
	fields, ok := hashFields[strings.ToLower(tok[0])]
	if !ok {
		return nil, fmt.Errorf("%s: unknown fields `%s'", arg, tok[0])
	}
	m := &ofp.Multipath{Fields: fields, Basis: uint16(atoi(tok[1]))}
	switch strings.ToLower(tok[2]) {
	case "modulo_n":
		m.Algorithm = ofp.MultipathModuloN
	case "hash_threshold":
		m.Algorithm = ofp.MultipathHashThreshold
	case "hrw":
		m.Algorithm = ofp.MultipathHRW
	case "iter_hash":
		m.Algorithm = ofp.MultipathIterHash
	default:
		return nil, fmt.Errorf("%s: unknown algorithm `%s'", arg, tok[2])
	}
	n := atoi(tok[3])
	if n < 1 || n > 65536 {
		return nil, fmt.Errorf("%s: n_links %d is not in valid range 1 to 65536", arg, n)
	}
	m.MaxLink = uint16(n - 1)
	m.Arg = uint32(atoi(tok[4]))
	dst, err := parseRef(tok[5])
	if err != nil {
		return nil, err
	}
	if dst.NBits < 16 && n > 1<<dst.NBits {
		return nil, fmt.Errorf("%s: %d-bit destination field has %d possible values, less than specified n_links %d",
			arg, dst.NBits, 1<<dst.NBits, n)
	}
	m.Dst = dst
	return m, nil
}

// parseBundle parses bundle(...) and bundle_load(...)'s arguments as
// bundle_parse and bundle_parse_load.
func parseBundle(arg string, load bool, ports PortResolver) (*ofp.Bundle, error) {
	// fields, basis, algorithm, member type [, dst] are separated by
	// ", ", the member delimiter ends at ':' or ' ', and the members are
	// separated by ", []".
	rest := arg
	next := func(seps string) string {
		rest = strings.TrimLeft(rest, seps)
		i := strings.IndexAny(rest, seps)
		if i < 0 {
			t := rest
			rest = ""
			return t
		}
		t := rest[:i]
		rest = rest[i+1:]
		return t
	}
	fieldsS, basis, alg, memberType := next(", "), next(", "), next(", "), next(", ")
	dstS := ""
	if load {
		dstS = next(", ")
	}
	delim := next(": ")
	if delim == "" {
		return nil, fmt.Errorf("%s: not enough arguments to bundle action", arg)
	}
	if !strings.EqualFold(delim, "members") && !strings.EqualFold(delim, "slaves") {
		return nil, fmt.Errorf("%s: missing member delimiter, expected `members', got `%s'", arg, delim)
	}
	bd := &ofp.Bundle{Load: load}
	for _, m := range strtok(rest, ", []") {
		if len(bd.Members) >= 2048 { // BUNDLE_MAX_MEMBERS
			break
		}
		p, err := ParsePort(m, ports)
		if err != nil {
			return nil, fmt.Errorf("%s: bad port number", m)
		}
		bd.Members = append(bd.Members, uint16(p))
	}
	bd.Basis = uint16(atoi(basis))
	fields, ok := hashFields[strings.ToLower(fieldsS)]
	if !ok {
		return nil, fmt.Errorf("%s: unknown fields `%s'", arg, fieldsS)
	}
	bd.Fields = fields
	switch strings.ToLower(alg) {
	case "active_backup":
		bd.Algorithm = ofp.BundleActiveBackup
	case "hrw":
		bd.Algorithm = ofp.BundleHRW
	default:
		return nil, fmt.Errorf("%s: unknown algorithm `%s'", arg, alg)
	}
	if !strings.EqualFold(memberType, "ofport") {
		return nil, fmt.Errorf("%s: unknown member_type `%s'", arg, memberType)
	}
	if load {
		dst, err := parseRef(dstS)
		if err != nil {
			return nil, err
		}
		bd.Dst = dst
	}
	return bd, nil
}

// parseCheckPktLarger parses "LEN)->DST", what follows
// "check_pkt_larger(", as parse_CHECK_PKT_LARGER.
func parseCheckPktLarger(arg string) (ofp.Action, error) {
	value, key, ok := strings.Cut(arg, "->")
	if !ok {
		return ofp.Action{}, fmt.Errorf("%s: missing `->'", arg)
	}
	if key == "" {
		return ofp.Action{}, fmt.Errorf("%s: missing field name following `->'", arg)
	}
	value = strings.TrimSuffix(value, ")")
	dst, err := parseRef(key)
	if err != nil {
		return ofp.Action{}, err
	}
	if dst.NBits != 1 {
		return ofp.Action{}, errors.New("Only 1-bit destination field is allowed")
	}
	n, err := strconv.ParseUint(value, 0, 16)
	if err != nil {
		// OVS's str_to_u16 is given no name for the value.
		return ofp.Action{}, fmt.Errorf("invalid (null) \"%s\"", value)
	}
	return ofp.Action{Type: ofp.ActCheckPktLarger, PktLen: uint16(n), Dst: dst}, nil
}

// parseFinTimeout parses fin_timeout(...)'s arguments.
func parseFinTimeout(arg string) (ofp.Action, error) {
	f := &ofp.FinTimeout{}
	for rest := arg; ; {
		k, v, r, ok := SplitKV(rest)
		if !ok {
			break
		}
		rest = r
		n, err := strconv.ParseUint(v, 0, 16)
		switch k {
		case "idle_timeout":
			if err != nil {
				return ofp.Action{}, fmt.Errorf("invalid idle_timeout \"%s\"", v)
			}
			f.Idle = uint16(n)
		case "hard_timeout":
			if err != nil {
				return ofp.Action{}, fmt.Errorf("invalid hard_timeout \"%s\"", v)
			}
			f.Hard = uint16(n)
		default:
			return ofp.Action{}, fmt.Errorf("invalid key '%s' in 'fin_timeout' argument", k)
		}
	}
	return ofp.Action{Type: ofp.ActFinTimeout, Fin: f}, nil
}

// parseDecTTL parses dec_ttl(ID,...)'s controller ids.
func parseDecTTL(arg string) (ofp.Action, error) {
	a := ofp.Action{Type: ofp.ActDecTTL}
	if arg == "" {
		return a, nil
	}
	for _, id := range strtok(arg, ", ") {
		a.CntIDs = append(a.CntIDs, uint16(atoi(id)))
	}
	if len(a.CntIDs) == 0 {
		return a, errors.New("dec_ttl_cnt_ids: expected at least one controller id.")
	}
	return a, nil
}
