package bridge

// PortState is where an interface is in its life in the running switch.
type PortState int

const (
	// StateNew: wanted by the database, not attempted yet.
	StateNew PortState = iota
	// StateAttached: open, in the datapath (patch ports: configured) and
	// known to its bridge's OpenFlow switch.
	StateAttached
	// StateMissing: the kernel interface does not exist (yet, or any
	// more), or is busy being torn down. It is attached again as soon as
	// it appears; an interface that was attached before keeps its
	// OpenFlow port number meanwhile.
	StateMissing
	// StateFailed: the configuration cannot be run (unknown type, bad
	// options, a name clash, a failed open). Retried at every
	// reconfiguration, since the cause may be elsewhere.
	StateFailed
)

func (s PortState) String() string {
	switch s {
	case StateNew:
		return "new"
	case StateAttached:
		return "attached"
	case StateMissing:
		return "missing"
	case StateFailed:
		return "failed"
	}
	return "unknown"
}
