package ofp

import "encoding/binary"

// maxConjClauses is the most clauses a conjunction may have (OVS's
// decode_NXAST_RAW_CONJUNCTION).
const maxConjClauses = 64

// decodeConjunction decodes NXAST_CONJUNCTION (nx_action_conjunction:
// clause, n_clauses, id), refusing what OVS refuses: fewer than 2 or more
// than 64 clauses, or a clause beyond them.
func decodeConjunction(b []byte) (Action, *Error) {
	if err := fixedLen(b, 16); err != nil {
		return Action{}, err
	}
	clause, n := b[10], b[11]
	if n < 2 || n > maxConjClauses || clause >= n {
		return Action{}, actErr(BadConjunction, "conjunction(id,k/n) needs 1 <= k <= n and 2 <= n <= 64")
	}
	return Action{Type: ActConjunction, ID: binary.BigEndian.Uint32(b[12:]), Clause: clause, NClauses: n}, nil
}

func appendConjunction(b []byte, a *Action) []byte {
	b = nxActionHeader(b, 16, nxastConjunction)
	b = put8(b, a.Clause)
	b = put8(b, a.NClauses)
	return put32(b, a.ID)
}

// CheckConjunction refuses, as OVS's ofpacts_verify, conjunction actions
// mixed with any action but note.
func CheckConjunction(acts []Action) *Error {
	conj, other := false, false
	for i := range acts {
		switch acts[i].Type {
		case ActConjunction:
			conj = true
		case ActNote:
		default:
			other = true
		}
	}
	if conj && other {
		return &Error{Errno: BadConjunction, Detail: "\"conjunction\" actions may be used along with \"note\" but not any other kind of action"}
	}
	return nil
}
