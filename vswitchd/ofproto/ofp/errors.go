package ofp

import "fmt"

// Errno is one of the OpenFlow errors govs sends (OVS's enum ofperr, with
// its names); TypeCode maps it to the version's ofp_error_msg numbers.
type Errno uint8

const (
	HelloIncompatible  Errno = iota + 1 // OFPHFC_INCOMPATIBLE
	BadVersion                          // OFPBRC_BAD_VERSION
	BadType                             // OFPBRC_BAD_TYPE
	BadStat                             // OFPBRC_BAD_STAT (OFPBRC_BAD_MULTIPART)
	BadVendor                           // OFPBRC_BAD_VENDOR (BAD_EXPERIMENTER)
	BadSubtype                          // OFPBRC_BAD_SUBTYPE (BAD_EXP_TYPE)
	EPerm                               // OFPBRC_EPERM
	BadLen                              // OFPBRC_BAD_LEN
	RoleStale                           // OFPRRFC_STALE (OpenFlow 1.2+)
	RoleBadRole                         // OFPRRFC_BAD_ROLE (OpenFlow 1.2+)
	TableFeaturesEPerm                  // OFPTFFC_EPERM (OpenFlow 1.3+)
	BadTableID                          // OFPBRC_BAD_TABLE_ID
	MustBeZero                          // NXBRC_MUST_BE_ZERO
	IsSlave                             // OFPBRC_IS_SECONDARY (IS_SLAVE)

	BadActionType       // OFPBAC_BAD_TYPE
	BadActionLen        // OFPBAC_BAD_LEN
	BadActionVendor     // OFPBAC_BAD_VENDOR
	BadActionVendorType // OFPBAC_BAD_VENDOR_TYPE
	BadOutPort          // OFPBAC_BAD_OUT_PORT
	BadActionArgument   // OFPBAC_BAD_ARGUMENT
	BadOutGroup         // OFPBAC_BAD_OUT_GROUP
	BadSetType          // OFPBAC_BAD_SET_TYPE
	BadSetLen           // OFPBAC_BAD_SET_LEN
	BadSetArgument      // OFPBAC_BAD_SET_ARGUMENT
	ActionMustBeZero    // NXBAC_MUST_BE_ZERO
	MatchInconsistent   // OFPBAC_MATCH_INCONSISTENT
	UnsupportedOrder    // OFPBAC_UNSUPPORTED_ORDER (NXBRC_UNENCODABLE_ERROR in 1.0)

	UnknownInst    // OFPBIC_UNKNOWN_INST
	UnsupInst      // OFPBIC_UNSUP_INST
	InstBadTableID // OFPBIC_BAD_TABLE_ID
	DupInst        // OFPBIC_DUP_INST
	InstBadLen     // OFPBIC_BAD_LEN
	InstBadVendor  // OFPBIC_BAD_EXPERIMENTER
	InvalidMeter   // OFPMMFC_INVALID_METER

	BadMatchType // OFPBMC_BAD_TYPE
	BadMatchLen  // OFPBMC_BAD_LEN
	BadField     // OFPBMC_BAD_FIELD
	BadValue     // OFPBMC_BAD_VALUE
	BadWildcards // OFPBMC_BAD_WILDCARDS
	BadPrereq    // OFPBMC_BAD_PREREQ
	DupField     // OFPBMC_DUP_FIELD
	BadMask      // OFPBMC_BAD_MASK

	FlowModTableFull  // OFPFMFC_TABLE_FULL
	FlowModBadTableID // OFPFMFC_BAD_TABLE_ID
	FlowModOverlap    // OFPFMFC_OVERLAP
	FlowModBadCommand // OFPFMFC_BAD_COMMAND
	FlowModBadFlags   // OFPFMFC_BAD_FLAGS

	BadAsyncProp      // OFPBPC_BAD_TYPE (OpenFlow 1.4+)
	BadAsyncLen       // OFPBPC_BAD_LEN (OpenFlow 1.4+)
	BadAsyncMask      // OFPACFC_UNSUPPORTED (OpenFlow 1.4+)
	NXRStale          // NXR_STALE: a continuation not from this bridge
	PortModBadPort    // OFPPMFC_BAD_PORT
	PortModBadHWAddr  // OFPPMFC_BAD_HW_ADDR
	PortModBadConfig  // OFPPMFC_BAD_CONFIG (OpenFlow 1.1+)
	BufferUnknown     // OFPBRC_BUFFER_UNKNOWN
	BadPort           // OFPBRC_BAD_PORT
	BadConjunction    // NXBAC_BAD_CONJUNCTION
	NXMInvalid        // NXBRC_NXM_INVALID
	QueueBadPort      // OFPQOFC_BAD_PORT
	QueueBadQueue     // OFPQOFC_BAD_QUEUE
	NXSTNotConfigured // NXST_NOT_CONFIGURED: a protocol the switch does not run
	BadPropValue      // OFPBPC_BAD_VALUE
	TableModBadTable  // OFPTMFC_BAD_TABLE
	TableModBadConfig // OFPTMFC_BAD_CONFIG
	TableModEPerm     // OFPTMFC_EPERM
)

var errnoNames = [...]string{HelloIncompatible: "OFPHFC_INCOMPATIBLE", BadVersion: "OFPBRC_BAD_VERSION",
	BadType: "OFPBRC_BAD_TYPE", BadStat: "OFPBRC_BAD_STAT", BadVendor: "OFPBRC_BAD_VENDOR",
	BadSubtype: "OFPBRC_BAD_SUBTYPE", EPerm: "OFPBRC_EPERM", BadLen: "OFPBRC_BAD_LEN",
	RoleStale: "OFPRRFC_STALE", RoleBadRole: "OFPRRFC_BAD_ROLE", TableFeaturesEPerm: "OFPTFFC_EPERM",
	BadTableID: "OFPBRC_BAD_TABLE_ID", MustBeZero: "NXBRC_MUST_BE_ZERO", IsSlave: "OFPBRC_IS_SECONDARY",
	BadActionType: "OFPBAC_BAD_TYPE", BadActionLen: "OFPBAC_BAD_LEN", BadActionVendor: "OFPBAC_BAD_VENDOR",
	BadActionVendorType: "OFPBAC_BAD_VENDOR_TYPE", BadOutPort: "OFPBAC_BAD_OUT_PORT",
	BadActionArgument: "OFPBAC_BAD_ARGUMENT", BadOutGroup: "OFPBAC_BAD_OUT_GROUP", BadSetType: "OFPBAC_BAD_SET_TYPE",
	BadSetLen: "OFPBAC_BAD_SET_LEN", BadSetArgument: "OFPBAC_BAD_SET_ARGUMENT", ActionMustBeZero: "NXBAC_MUST_BE_ZERO",
	MatchInconsistent: "OFPBAC_MATCH_INCONSISTENT", UnsupportedOrder: "OFPBAC_UNSUPPORTED_ORDER",
	UnknownInst: "OFPBIC_UNKNOWN_INST", UnsupInst: "OFPBIC_UNSUP_INST", InstBadTableID: "OFPBIC_BAD_TABLE_ID",
	DupInst: "OFPBIC_DUP_INST", InstBadLen: "OFPBIC_BAD_LEN", InstBadVendor: "OFPBIC_BAD_EXPERIMENTER",
	InvalidMeter: "OFPMMFC_INVALID_METER",
	BadMatchType: "OFPBMC_BAD_TYPE", BadMatchLen: "OFPBMC_BAD_LEN", BadField: "OFPBMC_BAD_FIELD",
	BadValue: "OFPBMC_BAD_VALUE", BadWildcards: "OFPBMC_BAD_WILDCARDS", BadPrereq: "OFPBMC_BAD_PREREQ",
	DupField: "OFPBMC_DUP_FIELD", BadMask: "OFPBMC_BAD_MASK",
	FlowModTableFull: "OFPFMFC_TABLE_FULL", FlowModBadTableID: "OFPFMFC_BAD_TABLE_ID", FlowModOverlap: "OFPFMFC_OVERLAP",
	FlowModBadCommand: "OFPFMFC_BAD_COMMAND", FlowModBadFlags: "OFPFMFC_BAD_FLAGS",
	BadAsyncProp: "OFPBPC_BAD_TYPE", BadAsyncLen: "OFPBPC_BAD_LEN", BadAsyncMask: "OFPACFC_UNSUPPORTED", NXRStale: "NXR_STALE",
	QueueBadPort: "OFPQOFC_BAD_PORT", QueueBadQueue: "OFPQOFC_BAD_QUEUE",
	PortModBadPort: "OFPPMFC_BAD_PORT", PortModBadHWAddr: "OFPPMFC_BAD_HW_ADDR", PortModBadConfig: "OFPPMFC_BAD_CONFIG",
	BufferUnknown: "OFPBRC_BUFFER_UNKNOWN", BadPort: "OFPBRC_BAD_PORT", BadConjunction: "NXBAC_BAD_CONJUNCTION",
	NXMInvalid: "NXBRC_NXM_INVALID", NXSTNotConfigured: "NXST_NOT_CONFIGURED",
	BadPropValue: "OFPBPC_BAD_VALUE", TableModBadTable: "OFPTMFC_BAD_TABLE", TableModBadConfig: "OFPTMFC_BAD_CONFIG",
	TableModEPerm: "OFPTMFC_EPERM"}

// errnoExtra names the errors defined next to their messages: group.go's
// from 200, meter.go's from 230.
var errnoExtra = map[Errno]string{}

func (e Errno) String() string {
	if int(e) < len(errnoNames) && errnoNames[e] != "" {
		return errnoNames[e]
	}
	if n, ok := errnoExtra[e]; ok {
		return n
	}
	return fmt.Sprintf("ofperr(%d)", uint8(e))
}

// errCode is one error's numbers in one version: a standard
// ofp_error_msg type and code when vendor is 0, else a vendor
// (experimenter) error.
type errCode struct {
	vendor    uint32
	typ, code uint16
}

// errCodes are the numbers of each error in versions 1.0 to 1.5, as
// Debian's `ovs-ofctl print-error` reports them (lib/ofp-errors.h).
var errCodes = map[Errno][6]errCode{}

func allVersions(typ, code uint16) [6]errCode {
	c := errCode{typ: typ, code: code}
	return [6]errCode{c, c, c, c, c, c}
}

func init() {
	nx := func(typ, code uint16) errCode { return errCode{vendor: NiciraVendor, typ: typ, code: code} }
	std := func(typ, code uint16) errCode { return errCode{typ: typ, code: code} }
	for e, c := range map[Errno][6]errCode{
		HelloIncompatible: allVersions(0, 0), BadVersion: allVersions(1, 0), BadType: allVersions(1, 1),
		BadStat: allVersions(1, 2), BadVendor: allVersions(1, 3), BadSubtype: allVersions(1, 4),
		EPerm: allVersions(1, 5), BadLen: allVersions(1, 6),
		RoleStale: allVersions(11, 0), RoleBadRole: allVersions(11, 2), TableFeaturesEPerm: allVersions(13, 5),
		BadTableID:          {nx(1, 512), std(1, 9), std(1, 9), std(1, 9), std(1, 9), std(1, 9)},
		MustBeZero:          {nx(1, 515), nx(1, 515), nx(4, 0), nx(4, 0), nx(4, 0), nx(4, 0)},
		IsSlave:             {std(1, 5), std(1, 5), std(1, 10), std(1, 10), std(1, 10), std(1, 10)},
		BadActionType:       allVersions(2, 0),
		BadActionLen:        allVersions(2, 1),
		BadActionVendor:     allVersions(2, 2),
		BadActionVendorType: allVersions(2, 3),
		BadOutPort:          allVersions(2, 4),
		BadActionArgument:   allVersions(2, 5),
		BadOutGroup:         {nx(2, 9), std(2, 9), std(2, 9), std(2, 9), std(2, 9), std(2, 9)},
		BadSetType:          {nx(1, 523), nx(1, 523), std(2, 13), std(2, 13), std(2, 13), std(2, 13)},
		BadSetLen:           {nx(1, 524), nx(1, 524), std(2, 14), std(2, 14), std(2, 14), std(2, 14)},
		BadSetArgument:      {nx(1, 525), nx(1, 525), std(2, 15), std(2, 15), std(2, 15), std(2, 15)},
		ActionMustBeZero:    {nx(2, 256), nx(2, 256), nx(11, 0), nx(11, 0), nx(11, 0), nx(11, 0)},
		MatchInconsistent:   {nx(1, 522), std(2, 10), std(2, 10), std(2, 10), std(2, 10), std(2, 10)},
		UnsupportedOrder:    {nx(1, 521), std(2, 11), std(2, 11), std(2, 11), std(2, 11), std(2, 11)},
		UnknownInst:         {nx(2, 257), std(3, 0), std(3, 0), std(3, 0), std(3, 0), std(3, 0)},
		UnsupInst:           {nx(2, 257), std(3, 1), std(3, 1), std(3, 1), std(3, 1), std(3, 1)},
		InstBadTableID:      {nx(2, 257), std(3, 2), std(3, 2), std(3, 2), std(3, 2), std(3, 2)},
		DupInst:             {nx(2, 257), nx(3, 256), {vendor: 0x4f4e4600, typ: 2600}, {vendor: 0x4f4e4600, typ: 2600}, std(3, 9), std(3, 9)},
		InstBadLen:          {nx(2, 257), std(3, 1), std(3, 7), std(3, 7), std(3, 7), std(3, 7)},
		InstBadVendor:       {nx(2, 257), std(3, 5), std(3, 5), std(3, 5), std(3, 5), std(3, 5)},
		InvalidMeter:        {nx(2, 257), std(3, 1), std(3, 1), std(12, 2), std(12, 2), std(12, 2)},
		BadMatchType:        {nx(1, 260), std(4, 0), std(4, 0), std(4, 0), std(4, 0), std(4, 0)},
		BadMatchLen:         {std(1, 6), std(4, 1), std(4, 1), std(4, 1), std(4, 1), std(4, 1)},
		BadField:            {nx(0, 263), std(4, 6), std(4, 6), std(4, 6), std(4, 6), std(4, 6)},
		BadValue:            {nx(1, 258), std(4, 7), std(4, 7), std(4, 7), std(4, 7), std(4, 7)},
		BadWildcards:        {nx(1, 262), std(4, 5), std(4, 5), std(4, 5), std(4, 5), std(4, 5)},
		BadPrereq:           {nx(1, 260), nx(1, 260), std(4, 9), std(4, 9), std(4, 9), std(4, 9)},
		DupField:            {nx(1, 261), nx(1, 261), std(4, 10), std(4, 10), std(4, 10), std(4, 10)},
		BadMask:             {nx(1, 259), nx(1, 259), std(4, 8), std(4, 8), std(4, 8), std(4, 8)},
		FlowModTableFull:    {std(3, 0), std(5, 1), std(5, 1), std(5, 1), std(5, 1), std(5, 1)},
		FlowModBadTableID:   {nx(1, 512), std(5, 2), std(5, 2), std(5, 2), std(5, 2), std(5, 2)},
		FlowModOverlap:      {std(3, 1), std(5, 3), std(5, 3), std(5, 3), std(5, 3), std(5, 3)},
		FlowModBadCommand:   {std(3, 4), std(5, 6), std(5, 6), std(5, 6), std(5, 6), std(5, 6)},
		FlowModBadFlags:     {nx(3, 258), nx(5, 258), std(5, 7), std(5, 7), std(5, 7), std(5, 7)},
		BadAsyncProp:        {nx(13, 2), nx(13, 2), nx(25, 0), std(13, 2), std(14, 0), std(14, 0)},
		BadAsyncLen:         {nx(13, 3), nx(13, 3), nx(26, 0), std(13, 3), std(14, 1), std(14, 1)},
		NXRStale:            {nx(1, 534), nx(1, 534), nx(35, 0), nx(35, 0), nx(35, 0), nx(35, 0)},
		BadAsyncMask:        {std(15, 1), std(15, 1), std(15, 1), {vendor: 0x4f4e4600, typ: 2371}, std(15, 1), std(15, 1)}, // 1.4+ and ONF 1.3 only
		PortModBadPort:      {std(4, 0), std(7, 0), std(7, 0), std(7, 0), std(7, 0), std(7, 0)},
		PortModBadHWAddr:    {std(4, 1), std(7, 1), std(7, 1), std(7, 1), std(7, 1), std(7, 1)},
		PortModBadConfig:    {std(4, 2), std(7, 2), std(7, 2), std(7, 2), std(7, 2), std(7, 2)},
		BufferUnknown:       {std(1, 8), std(1, 8), std(1, 8), std(1, 8), std(1, 8), std(1, 8)},
		BadPort:             {nx(1, 514), nx(1, 514), std(1, 11), std(1, 11), std(1, 11), std(1, 11)},
		BadConjunction:      {nx(2, 526), nx(2, 526), nx(15, 0), nx(15, 0), nx(15, 0), nx(15, 0)},
		NXMInvalid:          {nx(1, 256), nx(1, 256), nx(2, 0), nx(2, 0), nx(2, 0), nx(2, 0)},
		QueueBadPort:        {std(5, 0), std(9, 0), std(9, 0), std(9, 0), std(9, 0), std(9, 0)},
		QueueBadQueue:       {std(5, 1), std(9, 1), std(9, 1), std(9, 1), std(9, 1), std(9, 1)},
		NXSTNotConfigured:   {nx(1, 535), nx(1, 535), nx(36, 0), nx(36, 0), nx(36, 0), nx(36, 0)},
		BadPropValue:        {nx(13, 4), nx(13, 4), nx(27, 0), std(13, 4), std(14, 2), std(14, 2)},
		TableModBadTable:    allVersions(8, 0),
		TableModBadConfig:   allVersions(8, 1),
		TableModEPerm:       allVersions(8, 2),
	} {
		errCodes[e] = c
	}
}

// code returns e's numbers in version v.
func (e Errno) code(v Version) errCode {
	c, ok := errCodes[e]
	if !ok {
		return errCode{typ: 1, code: 5} // OFPBRC_EPERM
	}
	v = min(max(v, V10), V15)
	return c[v-V10]
}

// TypeCode returns the ofp_error_msg type and code of a standard error e
// in version v (lib/ofp-errors.h); a vendor error's are its vendor's.
func (e Errno) TypeCode(v Version) (typ, code uint16) {
	c := e.code(v)
	return c.typ, c.code
}

// Error is a request the codec or the switch refuses: the OFPT_ERROR to
// answer it with, and what it was.
type Error struct {
	Errno Errno
	// Name is the refused message's type as OVS names it, if known.
	Name string
	// Detail says what is wrong, for the log.
	Detail string
	// EchoAll: the OFPT_ERROR carries the whole request, not its first
	// 64 bytes (OVS's reply to a refused flow mod).
	EchoAll bool
	// tunMetadata is 1+n if what was refused is tun_metadata<n>.
	tunMetadata int
}

func (e *Error) Error() string {
	s := e.Errno.String()
	if e.Name != "" {
		s = e.Name + ": " + s
	}
	if e.Detail != "" {
		s += " (" + e.Detail + ")"
	}
	return s
}

func errorf(errno Errno, name, format string, args ...any) *Error {
	return &Error{Errno: errno, Name: name, Detail: fmt.Sprintf(format, args...)}
}

// maxErrorData is how much of a refused request an OFPT_ERROR echoes
// (OVS's ofperr_encode_reply: at most 64 bytes).
const maxErrorData = 64

// EncodeError returns the OFPT_ERROR answering request req (whose
// header gives version and xid) with e.
func EncodeError(v Version, xid uint32, e Errno, req []byte) []byte {
	if len(req) > maxErrorData {
		req = req[:maxErrorData]
	}
	return EncodeErrorData(v, xid, e, req)
}

// EncodeErrorData returns an OFPT_ERROR with arbitrary data (a HELLO
// failure carries text).
func EncodeErrorData(v Version, xid uint32, e Errno, data []byte) []byte {
	c := e.code(v)
	b := newMsg(v, TypeError, xid, 16+len(data))
	switch {
	case c.vendor == 0:
		b = put16(b, c.typ)
		b = put16(b, c.code)
	case v <= V11:
		// NXET_VENDOR, NXVC_VENDOR_ERROR, then nx_vendor_error.
		b = put16(b, 0xb0c2)
		b = put16(b, 0)
		b = put32(b, c.vendor)
		b = put16(b, c.typ)
		b = put16(b, c.code)
	default:
		// OFPET12_EXPERIMENTER: exp_type, experimenter.
		b = put16(b, 0xffff)
		b = put16(b, c.typ)
		b = put32(b, c.vendor)
	}
	return finish(append(b, data...))
}
