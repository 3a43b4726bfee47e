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
	IsSlave                             // OFPBRC_IS_SLAVE
	BadAsyncProp                        // OFPBPC_BAD_TYPE (OpenFlow 1.4+)
	BadAsyncLen                         // OFPBPC_BAD_LEN (OpenFlow 1.4+)
	BadAsyncMask                        // OFPACFC_UNSUPPORTED (OpenFlow 1.4+)
	PortModBadPort                      // OFPPMFC_BAD_PORT
	PortModBadHWAddr                    // OFPPMFC_BAD_HW_ADDR
	PortModBadConfig                    // OFPPMFC_BAD_CONFIG (OpenFlow 1.1+)
)

var errnoNames = [...]string{HelloIncompatible: "OFPHFC_INCOMPATIBLE", BadVersion: "OFPBRC_BAD_VERSION",
	BadType: "OFPBRC_BAD_TYPE", BadStat: "OFPBRC_BAD_STAT", BadVendor: "OFPBRC_BAD_VENDOR",
	BadSubtype: "OFPBRC_BAD_SUBTYPE", EPerm: "OFPBRC_EPERM", BadLen: "OFPBRC_BAD_LEN",
	RoleStale: "OFPRRFC_STALE", RoleBadRole: "OFPRRFC_BAD_ROLE", TableFeaturesEPerm: "OFPTFFC_EPERM",
	IsSlave: "OFPBRC_IS_SLAVE", BadAsyncProp: "OFPBPC_BAD_TYPE", BadAsyncLen: "OFPBPC_BAD_LEN",
	BadAsyncMask: "OFPACFC_UNSUPPORTED", PortModBadPort: "OFPPMFC_BAD_PORT", PortModBadHWAddr: "OFPPMFC_BAD_HW_ADDR",
	PortModBadConfig: "OFPPMFC_BAD_CONFIG"}

func (e Errno) String() string {
	if int(e) < len(errnoNames) && errnoNames[e] != "" {
		return errnoNames[e]
	}
	return fmt.Sprintf("ofperr(%d)", uint8(e))
}

// Error types (ofp_error_type); the ones used here have the same numbers
// in every version.
const (
	errTypeHelloFailed = 0
	errTypeBadRequest  = 1
	errTypeRoleFailed  = 11 // OpenFlow 1.2+
	errTypeTableFeat   = 13 // OpenFlow 1.3+
	errTypeBadProperty = 14 // OpenFlow 1.4+
	errTypeAsyncConfig = 15 // OpenFlow 1.4+
)

// OFPET_PORT_MOD_FAILED is 4 in OpenFlow 1.0, 7 from 1.1.
func errTypePortMod(v Version) uint16 {
	if v == V10 {
		return 4
	}
	return 7
}

// TypeCode returns the ofp_error_msg type and code of e in version v
// (lib/ofp-errors.h).
func (e Errno) TypeCode(v Version) (typ, code uint16) {
	switch e {
	case HelloIncompatible:
		return errTypeHelloFailed, 0
	case BadVersion:
		return errTypeBadRequest, 0
	case BadType:
		return errTypeBadRequest, 1
	case BadStat:
		return errTypeBadRequest, 2
	case BadVendor:
		return errTypeBadRequest, 3
	case BadSubtype:
		return errTypeBadRequest, 4
	case EPerm:
		return errTypeBadRequest, 5
	case BadLen:
		return errTypeBadRequest, 6
	case RoleStale:
		return errTypeRoleFailed, 0
	case RoleBadRole:
		return errTypeRoleFailed, 2
	case TableFeaturesEPerm:
		return errTypeTableFeat, 5
	case IsSlave:
		// OF1.0-1.1(1,5), OF1.2+(1,10) (lib/ofp-errors.h).
		if v <= V11 {
			return errTypeBadRequest, 5
		}
		return errTypeBadRequest, 10
	case BadAsyncProp:
		return errTypeBadProperty, 0
	case BadAsyncLen:
		return errTypeBadProperty, 1
	case BadAsyncMask:
		return errTypeAsyncConfig, 1
	case PortModBadPort:
		return errTypePortMod(v), 0
	case PortModBadHWAddr:
		return errTypePortMod(v), 1
	case PortModBadConfig:
		return errTypePortMod(v), 2
	}
	return errTypeBadRequest, 5
}

// Error is a request the codec or the switch refuses: the OFPT_ERROR to
// answer it with, and what it was.
type Error struct {
	Errno Errno
	// Name is the refused message's type as OVS names it, if known.
	Name string
	// Detail says what is wrong, for the log.
	Detail string
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
	typ, code := e.TypeCode(v)
	b := newMsg(v, TypeError, xid, 4+len(data))
	b = put16(b, typ)
	b = put16(b, code)
	return finish(append(b, data...))
}
