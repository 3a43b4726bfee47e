// Command ovs-ofctl administers OpenFlow switches as Open vSwitch 3.1's
// does, with the same output, error texts and exit statuses, for the
// commands and the flow syntax govs' switch supports:
//
//	ovs-ofctl [OPTIONS] show SWITCH
//	ovs-ofctl [OPTIONS] dump-flows SWITCH [FLOW]
//	ovs-ofctl [OPTIONS] add-flow SWITCH FLOW | add-flows SWITCH FILE
//	ovs-ofctl [OPTIONS] mod-flows SWITCH FLOW | del-flows SWITCH [FLOW]
//	ovs-ofctl --bundle add-flow(s)|mod-flows|del-flows ... (one atomic bundle)
//	ovs-ofctl [-O VERSIONS] parse-flow FLOW | parse-flows FILE (no switch:
//	what would be sent)
//
// SWITCH is a bridge name (its socket RUNDIR/BRIDGE.mgmt, RUNDIR from
// OVS_RUNDIR), a socket path, or unix:PATH / tcp:HOST:PORT. Other
// commands of OVS's ovs-ofctl are refused with a message. The OpenFlow
// codec is govs' switch's own (vswitchd/ofproto/ofp).
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/internal/daemon"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
	"github.com/govs/govs/vswitchd/ofproto/ofp/ofptext"
)

const program = "ovs-ofctl"

// logger is the program's vlog (console at OVS's defaults).
var logger = daemon.NewLogger(os.Stderr)

func logWarn(module, msg string) { logger.Module(module).Warnf("%s", msg) }
func logInfo(module, msg string) { logger.Module(module).Infof("%s", msg) }

// The flow parser's warnings and errors go to the program's log, as OVS's.
func init() {
	ofptext.SetWarn(logWarn)
	ofptext.SetErr(func(module, msg string) { logger.Module(module).Errorf("%s", msg) })
}

// fatal is an error that ends the program with "ovs-ofctl: MSG", exit 1.
type fatal struct{ msg string }

func (f fatal) Error() string { return f.msg }

func fatalf(format string, args ...any) error { return fatal{fmt.Sprintf(format, args...)} }

// ofctl is one run's options and state.
type ofctl struct {
	allowed   ofp.Versions
	strict    bool
	bundle    bool // --bundle: flow mods in one atomic, ordered bundle
	names     int  // -1: when stdout is a terminal
	showStats bool
	sortKeys  []sortKey
	// xid is the last transaction ID used: OVS's ovs-ofctl numbers its
	// messages across all its connections, and prints the numbers.
	xid uint32
	out *bufio.Writer
}

type sortKey struct {
	field string
	desc  bool
}

// command is one ovs-ofctl command: its argument counts and handler.
type command struct {
	min, max int
	run      func(o *ofctl, args []string) error
}

var commands = map[string]command{
	"show":            {1, 1, (*ofctl).show},
	"dump-flows":      {1, 2, (*ofctl).dumpFlows},
	"parse-flow":      {1, 1, (*ofctl).parseFlow},
	"parse-group":     {1, 1, (*ofctl).parseGroupCmd},
	"parse-flows":     {1, 1, (*ofctl).parseFlows},
	"add-flow":        {2, 2, func(o *ofctl, a []string) error { return o.flowMods(a[0], []string{a[1]}, ofptext.ParseAdd) }},
	"add-flows":       {2, 2, (*ofctl).addFlows},
	"dump-ports-desc": {1, 2, (*ofctl).dumpPortsDesc},
	"dump-ports":      {1, 2, (*ofctl).dumpPorts},
	"dump-aggregate":  {1, 2, (*ofctl).dumpAggregate},
	"queue-stats":     {1, 3, (*ofctl).queueStats},
	"mod-port":        {3, 3, (*ofctl).modPort},
	"packet-out":      {2, 1 << 20, (*ofctl).packetOut},
	"add-group":       {2, 2, func(o *ofctl, a []string) error { return o.groupMods(a[0], []string{a[1]}, ofp.GroupAdd) }},
	"mod-group":       {2, 2, func(o *ofctl, a []string) error { return o.groupMods(a[0], []string{a[1]}, ofp.GroupModify) }},
	"del-groups": {1, 2, func(o *ofctl, a []string) error {
		spec := "group_id=all"
		if len(a) == 2 {
			spec = a[1]
		}
		return o.groupMods(a[0], []string{spec}, ofp.GroupDelete)
	}},
	"dump-groups": {1, 2, (*ofctl).dumpGroups},
	"add-meter":   {2, 2, func(o *ofctl, a []string) error { return o.meterMod(a[0], a[1], ofp.MeterAdd) }},
	"mod-meter":   {2, 2, func(o *ofctl, a []string) error { return o.meterMod(a[0], a[1], ofp.MeterModify) }},
	"del-meters": {1, 2, func(o *ofctl, a []string) error {
		spec := "meter=all"
		if len(a) == 2 {
			spec = a[1]
		}
		return o.meterMod(a[0], spec, ofp.MeterDelete)
	}},
	"dump-meters": {1, 2, (*ofctl).dumpMeters},
	"mod-flows": {2, 2, func(o *ofctl, a []string) error {
		cmd := ofptext.ParseModify
		if o.strict {
			cmd = ofptext.ParseModifyStrict
		}
		return o.flowMods(a[0], []string{a[1]}, cmd)
	}},
	"del-flows": {1, 2, func(o *ofctl, a []string) error {
		spec, cmd := "", ofptext.ParseDelete
		if len(a) == 2 {
			spec = a[1]
		}
		if o.strict {
			cmd = ofptext.ParseDeleteStrict
		}
		return o.flowMods(a[0], []string{spec}, cmd)
	}},
}

// unsupported are OVS's ovs-ofctl commands govs' does not implement yet.
var unsupported = []string{"dump-desc", "dump-tables", "dump-table-features", "dump-table-desc", "mod-table",
	"queue-get-config",
	"replace-flows", "diff-flows", "add-groups", "insert-buckets",
	"remove-buckets", "dump-group-stats", "dump-group-features",
	"del-meter", "dump-meter", "meter-stats", "meter-features",
	"monitor", "snoop", "dump-flows-monitor", "get-frags", "set-frags", "ofp-parse", "ofp-parse-pcap",
	"ct-flush-zone", "ct-flush", "probe", "ping", "benchmark", "dump-ipfix-bridge", "dump-ipfix-flow",
	"bundle", "add-tlv-map", "del-tlv-map", "dump-tlv-map", "parse-flow", "parse-flows", "parse-actions",
	"encode-error-reply", "print-error", "ofp-print", "encode-hello", "dump-table-features", "set-l3-rx",
	"mod-flow", "del-flow", "strict"}

const usage = `ovs-ofctl: OpenFlow switch management utility
usage: ovs-ofctl [OPTIONS] COMMAND [ARG...]

For OpenFlow switches (govs' ovs-ofctl):
  show SWITCH                 show OpenFlow information
  dump-flows SWITCH           print all flow entries
  dump-flows SWITCH FLOW      print matching FLOWs
  add-flow SWITCH FLOW        add flow described by FLOW
  add-flows SWITCH FILE       add flows from FILE
  mod-flows SWITCH FLOW       modify actions of matching FLOWs
  del-flows SWITCH [FLOW]     delete matching FLOWs
  dump-ports SWITCH [PORT]    print port statistics
  dump-ports-desc SWITCH [PORT]  print port descriptions
  dump-aggregate SWITCH [FLOW]  print aggregate flow statistics
  queue-stats SWITCH [PORT [QUEUE]]  dump queue stats
  mod-port SWITCH IFACE ACT   modify port behavior
  packet-out SWITCH IN_PORT ACTIONS PACKET...
                              execute ACTIONS on PACKET
  packet-out SWITCH in_port=PORT,packet=HEX,actions=ACTIONS
  add-group SWITCH GROUP      add group described by GROUP
  mod-group SWITCH GROUP      modify specific group
  del-groups SWITCH [GROUP]   delete matching GROUPs
  dump-groups SWITCH [GROUP]  print group description
  add-meter SWITCH METER      add meter described by METER
  mod-meter SWITCH METER      modify specific METER
  del-meters SWITCH [METER]   delete meters matching METER
  dump-meters SWITCH [METER]  print METER configuration

Other options:
  --strict                    use strict match for flow commands
  --bundle                    use bundle for flow commands
  -O, --protocols             set allowed OpenFlow versions
                              (default: OpenFlow10)
  --names                     show port names instead of numbers
  --no-names                  show port numbers, but not names
  --no-stats                  do not print flow statistics
  --sort[=field]              sort in ascending order
  --rsort[=field]             sort in descending order
  -h, --help                  display this help message
  -V, --version               display version information
`

func main() {
	o := &ofctl{allowed: 1 << ofp.V10, names: -1, showStats: true, out: bufio.NewWriterSize(os.Stdout, 4096)}
	code := o.main(os.Args[1:])
	o.out.Flush()
	os.Exit(code)
}

func (o *ofctl) main(args []string) int {
	var help, showVersion bool
	flags := []daemon.Flag{
		{Long: "strict", Set: func(string) error { o.strict = true; return nil }},
		{Long: "bundle", Set: func(string) error { o.bundle = true; return nil }},
		{Long: "protocols", Short: 'O', Arg: daemon.RequiredArg, Set: o.setProtocols},
		{Long: "names", Set: func(string) error { o.names = 1; return nil }},
		{Long: "no-names", Set: func(string) error { o.names = 0; return nil }},
		{Long: "no-stats", Set: func(string) error { o.showStats = false; return nil }},
		{Long: "sort", Arg: daemon.OptionalArg, Set: func(v string) error { return o.addSort(v, false) }},
		{Long: "rsort", Arg: daemon.OptionalArg, Set: func(v string) error { return o.addSort(v, true) }},
		{Long: "help", Short: 'h', Set: func(string) error { help = true; return nil }},
		{Long: "version", Short: 'V', Set: func(string) error { showVersion = true; return nil }},
		{Long: "verbose", Short: 'v', Arg: daemon.OptionalArg, Set: func(v string) error {
			if err := logger.Set(v); err != nil {
				return fatalf("processing \"%s\": %v", v, err)
			}
			return nil
		}},
		{Long: "timeout", Short: 't', Arg: daemon.RequiredArg, Set: func(string) error { return nil }},
	}
	rest, err := daemon.Getopt(args, flags, true)
	if err != nil {
		var f fatal
		if errors.As(err, &f) {
			fmt.Fprintf(os.Stderr, "%s: %s\n", program, f.msg)
		} else {
			fmt.Fprintf(os.Stderr, "%s: %v\n", os.Args[0], err)
		}
		return 1
	}
	switch {
	case help:
		fmt.Print(usage)
		return 0
	case showVersion:
		fmt.Print(daemon.VersionText(program, "3.1.0"))
		return 0
	case len(rest) == 0:
		fmt.Fprintf(os.Stderr, "%s: missing command name; use --help for help\n", program)
		return 1
	}
	// As OVS's: --bundle needs OpenFlow 1.3+, and allows 1.4 if none.
	if o.bundle && o.allowed.Highest() < ofp.V13 {
		o.allowed |= 1 << ofp.V14
	}
	name, cargs := rest[0], rest[1:]
	if o.bundle && contains([]string{"add-group", "mod-group", "del-groups", "packet-out"}, name) {
		fmt.Fprintf(os.Stderr, "%s: '--bundle %s' is not supported by govs' ovs-ofctl yet (Open vSwitch's /usr/bin/ovs-ofctl has it)\n", program, name)
		return 1
	}
	cmd, ok := commands[name]
	switch {
	case !ok && contains(unsupported, name):
		fmt.Fprintf(os.Stderr, "%s: '%s' is not supported by govs' ovs-ofctl yet (Open vSwitch's /usr/bin/ovs-ofctl has it)\n", program, name)
		return 1
	case !ok:
		fmt.Fprintf(os.Stderr, "%s: unknown command '%s'; use --help for help\n", program, name)
		return 1
	case len(cargs) < cmd.min:
		fmt.Fprintf(os.Stderr, "%s: '%s' command requires at least %d arguments\n", program, name, cmd.min)
		return 1
	case len(cargs) > cmd.max:
		fmt.Fprintf(os.Stderr, "%s: '%s' command takes at most %d arguments\n", program, name, cmd.max)
		return 1
	}
	// Standard output is buffered as C's stdio buffers a pipe: errors on
	// standard error come out before it, as with OVS's ovs-ofctl.
	if err := cmd.run(o, cargs); err != nil {
		var f fatal
		if errors.As(err, &f) {
			fmt.Fprintf(os.Stderr, "%s: %s\n", program, f.msg)
		} else if !errors.Is(err, errReported) {
			fmt.Fprintf(os.Stderr, "%s: %v\n", program, err)
		}
		return 1
	}
	return 0
}

// errReported: the error was printed already (an OFPT_ERROR reply).
var errReported = errors.New("reported")

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// setProtocols parses -O's comma-separated versions.
func (o *ofctl) setProtocols(s string) error {
	var set ofp.Versions
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		found := false
		for v := ofp.V10; v <= ofp.V15; v++ {
			if strings.EqualFold(name, v.String()) {
				set |= 1 << v
				found = true
			}
		}
		if !found && name != "" {
			return fatalf("Unknown OpenFlow version: \"%s\"", name)
		}
	}
	if set == 0 {
		return fatalf("at least one OpenFlow version must be specified")
	}
	o.allowed = set
	return nil
}

func (o *ofctl) addSort(field string, desc bool) error {
	switch field {
	case "", "priority", "table", "cookie", "in_port", "duration", "idle_age", "hard_age", "n_packets", "n_bytes":
	default:
		if ofptext.FieldOf(field) == nil {
			return fatalf("%s: unknown field name", field)
		}
	}
	o.sortKeys = append(o.sortKeys, sortKey{field, desc})
	return nil
}

// showNames reports whether ports print as names (--names, or a
// terminal without --no-names).
func (o *ofctl) showNames() bool {
	if o.names >= 0 {
		return o.names == 1
	}
	fi, err := os.Stdout.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func (o *ofctl) nextXid() uint32 {
	o.xid++
	return o.xid
}

// vconn is an OpenFlow connection after version negotiation.
type vconn struct {
	c    net.Conn
	r    *bufio.Reader
	v    ofp.Version
	name string
}

// socketPath finds a target's socket as OVS's open_vconn: NAME:... is a
// vconn name, a socket path is used as is, else NAME is a bridge whose
// socket is RUNDIR/NAME.mgmt.
func socketPath(target string) (network, addr, name string, err error) {
	if strings.Contains(target, ":") {
		kind, rest, _ := strings.Cut(target, ":")
		switch kind {
		case "unix":
			return "unix", rest, target, nil
		case "tcp":
			return "tcp", rest, target, nil
		}
		return "", "", "", fatalf("%s: govs' ovs-ofctl connects only to unix: and tcp: targets", target)
	}
	if st, err := os.Stat(target); err == nil && st.Mode()&os.ModeSocket != 0 {
		return "unix", target, "unix:" + target, nil
	}
	p := daemon.Rundir() + "/" + target + ".mgmt"
	if st, err := os.Stat(p); err == nil && st.Mode()&os.ModeSocket != 0 {
		return "unix", p, "unix:" + p, nil
	}
	return "", "", "", fatalf("%s is not a bridge or a socket", target)
}

// open connects to target and negotiates a version.
func (o *ofctl) open(target string) (*vconn, error) {
	network, addr, name, err := socketPath(target)
	if err != nil {
		return nil, err
	}
	c, err := net.DialTimeout(network, addr, 30*time.Second)
	if err != nil {
		var en syscall.Errno
		if errors.As(err, &en) {
			return nil, fatalf("connecting to %s (%s)", name, daemon.Strerror(en))
		}
		return nil, fatalf("connecting to %s (%v)", name, err)
	}
	vc := &vconn{c: c, r: bufio.NewReader(c), name: name}
	if _, err := c.Write(ofp.EncodeHello(o.allowed, o.nextXid())); err != nil {
		c.Close()
		return nil, fatalf("%s: failed to connect to socket (%s)", target, daemon.Strerror(err))
	}
	msg, err := vc.read()
	if err != nil {
		c.Close()
		return nil, err
	}
	h := ofp.ParseHeader(msg)
	if h.Type != ofp.TypeHello {
		c.Close()
		return nil, fatalf("%s: failed to connect to socket (Protocol error)", target)
	}
	peer := helloVersions(msg)
	common := peer & o.allowed
	if common == 0 {
		c.Close()
		return nil, fatalf("%s: failed to connect to socket (Protocol error)", target)
	}
	vc.v = common.Highest()
	return vc, nil
}

// helloVersions is the version set a hello offers: its bitmap, else every
// version up to its header's.
func helloVersions(msg []byte) ofp.Versions {
	if m, err := ofp.Decode(msg); err == nil {
		if h, ok := m.(*ofp.Hello); ok {
			return h.Versions
		}
	}
	v := ofp.ParseHeader(msg).Version
	return ofp.Versions(1<<(v+1)-2) & ofp.AllVersions
}

func (vc *vconn) close() { vc.c.Close() }

// read returns the next message, answering echo requests.
func (vc *vconn) read() ([]byte, error) {
	for {
		var hdr [ofp.HeaderLen]byte
		if _, err := io.ReadFull(vc.r, hdr[:]); err != nil {
			return nil, fatalf("%s: connection failed (%s)", vc.name, eofText(err))
		}
		h := ofp.ParseHeader(hdr[:])
		if h.Length < ofp.HeaderLen {
			return nil, fatalf("%s: connection failed (Protocol error)", vc.name)
		}
		msg := make([]byte, h.Length)
		copy(msg, hdr[:])
		if _, err := io.ReadFull(vc.r, msg[ofp.HeaderLen:]); err != nil {
			return nil, fatalf("%s: connection failed (%s)", vc.name, eofText(err))
		}
		if h.Type == ofp.TypeEchoRequest {
			vc.c.Write(ofp.EncodeEchoReply(h.Version, h.Xid, msg[ofp.HeaderLen:]))
			continue
		}
		return msg, nil
	}
}

func eofText(err error) string {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "End of file"
	}
	return daemon.Strerror(err)
}

// transact sends req and returns the replies with its xid (several for
// a statistics reply in parts). An OFPT_ERROR reply is an error.
func (vc *vconn) transact(req []byte) ([][]byte, error) {
	xid := ofp.ParseHeader(req).Xid
	if _, err := vc.c.Write(req); err != nil {
		return nil, fatalf("%s: transaction error (%s)", vc.name, daemon.Strerror(err))
	}
	var replies [][]byte
	for {
		msg, err := vc.read()
		if err != nil {
			return nil, err
		}
		h := ofp.ParseHeader(msg)
		if h.Xid != xid {
			continue
		}
		if h.Type == ofp.TypeError {
			return nil, replyError{msg}
		}
		replies = append(replies, msg)
		if r, err := ofp.DecodeStatsReply(msg); err == nil && r.More {
			continue
		}
		return replies, nil
	}
}

// replyError is an OFPT_ERROR the switch answered a request with.
type replyError struct{ msg []byte }

func (e replyError) Error() string { return "OFPT_ERROR" }

// barrier sends msgs each followed by a barrier, as OVS's
// transact_noreply, and prints the errors they got.
func (o *ofctl) sendWithBarriers(vc *vconn, msgs [][]byte, names []string, describe []func() string) error {
	failed := false
	for i, m := range msgs {
		if _, err := vc.c.Write(m); err != nil {
			return fatalf("%s: transaction error (%s)", vc.name, daemon.Strerror(err))
		}
		bxid := o.nextXid()
		if _, err := vc.c.Write(ofp.EncodeBarrierRequest(vc.v, bxid)); err != nil {
			return fatalf("%s: transaction error (%s)", vc.name, daemon.Strerror(err))
		}
		for {
			reply, err := vc.read()
			if err != nil {
				return err
			}
			h := ofp.ParseHeader(reply)
			if h.Type == ofp.TypeError && h.Xid == ofp.ParseHeader(m).Xid {
				fmt.Fprint(os.Stderr, formatError(reply, names[i], describe[i]))
				failed = true
				continue
			}
			if h.Xid == bxid {
				break
			}
		}
	}
	if failed {
		return errReported
	}
	return nil
}

// formatError prints an OFPT_ERROR as ofp_print: its name, then the
// request it refers to (described by describe, named name).
func formatError(reply []byte, name string, describe func() string) string {
	h := ofp.ParseHeader(reply)
	errno, data, ok := ofp.DecodeErrorMsg(reply)
	text := "***unknown error***"
	if ok {
		text = errno.String()
	}
	s := msgHeader("OFPT_ERROR", h.Version, h.Xid) + " " + text + "\n"
	if len(data) >= ofp.HeaderLen {
		rh := ofp.ParseHeader(data)
		if int(rh.Length) == len(data) && describe != nil {
			s += msgHeader(name, rh.Version, rh.Xid) + describe() + "\n"
		} else if int(rh.Length) > len(data) {
			s += fmt.Sprintf("(***truncated to %d bytes from %d***)\n", len(data), rh.Length)
		}
	}
	return s
}

// fetchPorts gets the switch's ports on a connection of their own (as
// OVS's ovs-ofctl does to know their names): the features reply's in
// OpenFlow 1.0–1.2, else a PORT_DESC request's.
func (o *ofctl) fetchPorts(target string) ([]ofp.Port, error) {
	vc, err := o.open(target)
	if err != nil {
		return nil, err
	}
	defer vc.close()
	if vc.v <= ofp.V12 {
		replies, err := vc.transact(ofp.EncodeRequest(vc.v, ofp.TypeFeaturesReq, o.nextXid()))
		if err != nil {
			return nil, transactErr(vc, err)
		}
		f, err := ofp.DecodeFeaturesReply(replies[0])
		if err != nil {
			return nil, err
		}
		return f.Ports, nil
	}
	replies, err := vc.transact(ofp.EncodePortDescRequest(vc.v, o.nextXid(), ofp.PortAny))
	if err != nil {
		return nil, transactErr(vc, err)
	}
	var ports []ofp.Port
	for _, r := range replies {
		sr, err := ofp.DecodeStatsReply(r)
		if err != nil {
			return nil, err
		}
		p, err := ofp.DecodePorts(vc.v, sr.Body)
		if err != nil {
			return nil, err
		}
		ports = append(ports, p...)
	}
	return ports, nil
}

func transactErr(vc *vconn, err error) error {
	var re replyError
	if errors.As(err, &re) {
		errno, _, _ := ofp.DecodeErrorMsg(re.msg)
		return fatalf("%s: %s", vc.name, errno)
	}
	return err
}

// show prints the switch's features, ports and configuration.
func (o *ofctl) show(args []string) error {
	vc, err := o.open(args[0])
	if err != nil {
		return err
	}
	defer vc.close()
	replies, err := vc.transact(ofp.EncodeRequest(vc.v, ofp.TypeFeaturesReq, o.nextXid()))
	if err != nil {
		return transactErr(vc, err)
	}
	h := ofp.ParseHeader(replies[0])
	f, err := ofp.DecodeFeaturesReply(replies[0])
	if err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString(msgHeader("OFPT_FEATURES_REPLY", h.Version, h.Xid))
	fmt.Fprintf(&b, " dpid:%016x\n", f.DatapathID)
	fmt.Fprintf(&b, "n_tables:%d, n_buffers:%d\n", f.NTables, f.NBuffers)
	fmt.Fprintf(&b, "capabilities: %s\n", capabilities(vc.v, f.Capabilities))
	if vc.v == ofp.V10 {
		var acts []string
		for _, a := range actionNames10 {
			if f.Actions&(1<<a.bit) != 0 {
				acts = append(acts, a.name)
			}
		}
		fmt.Fprintf(&b, "actions: %s\n", strings.Join(acts, " "))
	}
	if vc.v <= ofp.V12 {
		printPorts(&b, vc.v, f.Ports)
	} else {
		replies, err := vc.transact(ofp.EncodePortDescRequest(vc.v, o.nextXid(), ofp.PortAny))
		if err != nil {
			return transactErr(vc, err)
		}
		for _, r := range replies {
			sr, err := ofp.DecodeStatsReply(r)
			if err != nil {
				return err
			}
			b.WriteString(msgHeader("OFPST_PORT_DESC reply", sr.Version, sr.Xid))
			if sr.More {
				b.WriteString(" flags=[more]")
			}
			b.WriteString("\n")
			ports, err := ofp.DecodePorts(sr.Version, sr.Body)
			if err != nil {
				return err
			}
			printPorts(&b, vc.v, ports)
		}
	}
	o.out.WriteString(b.String())

	vc2, err := o.open(args[0])
	if err != nil {
		return err
	}
	defer vc2.close()
	replies, err = vc2.transact(ofp.EncodeRequest(vc2.v, ofp.TypeGetConfigReq, o.nextXid()))
	if err != nil {
		return transactErr(vc2, err)
	}
	cfg, err := ofp.DecodeGetConfigReply(replies[0])
	if err != nil {
		return err
	}
	frags := ofp.FragName(uint8(cfg.Flags))
	h = ofp.ParseHeader(replies[0])
	fmt.Fprintf(o.out, "%s frags=%s miss_send_len=%d\n", msgHeader("OFPT_GET_CONFIG_REPLY", h.Version, h.Xid), frags, cfg.MissSendLen)
	return nil
}

func printPorts(b *strings.Builder, v ofp.Version, ports []ofp.Port) {
	sort.SliceStable(ports, func(i, j int) bool { return ports[i].No < ports[j].No })
	for i := range ports {
		formatPort(b, v, &ports[i])
	}
}

// resolver returns a port-name resolver over ports.
func resolver(ports []ofp.Port) ofptext.PortResolver {
	return func(name string) (uint32, bool) {
		for _, p := range ports {
			if p.Name == name {
				return p.No, true
			}
		}
		return 0, false
	}
}

func namesOf(ports []ofp.Port) ofp.PortNames {
	pn := ofp.PortNames{}
	for _, p := range ports {
		pn[p.No] = p.Name
	}
	return pn
}

// checkVersion refuses OpenFlow 1.1 for flow commands: govs' codec does
// not encode its standard match.
func checkFlowVersion(v ofp.Version) error {
	if v == ofp.V11 {
		return fatalf("govs' ovs-ofctl does not encode OpenFlow 1.1 matches: use another version (-O)")
	}
	return nil
}

// parseApplyActions parses an action list that may not hold
// instructions, a packet-out's or a bucket's, as ofpacts_parse_actions
// ("goto_table instruction not allowed here"); none at all is refused
// as in a flow.
func parseApplyActions(s string, ports ofptext.PortResolver) ([]ofp.Action, error) {
	if strings.TrimSpace(s) == "" {
		return ofptext.ParseActions(s, ports)
	}
	return ofptext.ParseApplyActions(s, ports)
}

// parseGroupCmd is `ovs-ofctl parse-group GROUP` (OVS's
// ofctl_parse_group): the protocols that can carry the group's bucket
// actions, the first version the -O versions allow of them, and the group
// mod as sent in it, decoded back. OpenFlow 1.0 sends NXT_GROUP_MOD, which
// is OpenFlow 1.5's group mod (bucket IDs shown).
func (o *ofctl) parseGroupCmd(args []string) error {
	gm, err := parseGroup(args[0], ofp.GroupAdd, nil)
	if err != nil {
		return fatal{err.Error()}
	}
	usable := ofptext.Protocols(ofptext.ProtoAny)
	for _, b := range gm.Buckets {
		usable &= ofptext.ActionsUsable(b.Actions)
	}
	fmt.Fprintf(o.out, "usable protocols: %s\n", usable)
	usable &= ofptext.VersionProtocols(o.allowed)
	if usable == 0 {
		return fatalf("no usable protocol")
	}
	v := (usable & -usable).Version()
	fmt.Fprintf(o.out, "chosen version: %s\n", v)
	name, enc := "OFPT_GROUP_MOD", v
	if v == ofp.V10 {
		name, enc = "NXT_GROUP_MOD", ofp.V15
	}
	for j := range gm.Buckets {
		gm.Buckets[j].Actions = vlanActions(gm.Buckets[j].Actions, &ofp.Match{}, v)
	}
	msg, derr := ofp.Decode(ofp.EncodeGroupMod(enc, 1, gm))
	back, ok := msg.(*ofp.GroupMod)
	if derr != nil || !ok {
		return fatalf("govs' ovs-ofctl cannot decode its own group mod")
	}
	if v == ofp.V10 {
		// NXT_GROUP_MOD carries OpenFlow 1.0's actions in 1.5's group
		// mod: what 1.0 makes of each bucket's.
		for j := range back.Buckets {
			acts, aerr := ofp.DecodeActions(ofp.V10, ofp.AppendActions(nil, ofp.V10, gm.Buckets[j].Actions))
			if aerr != nil {
				return fatalf("govs' ovs-ofctl cannot decode its own group mod")
			}
			back.Buckets[j].Actions = acts
		}
	}
	cmd := map[uint16]string{ofp.GroupAdd: "ADD", ofp.GroupModify: "MOD", ofp.GroupDelete: "DEL"}[back.Command]
	g := &ofp.GroupDesc{Type: back.Type, ID: back.ID, Buckets: back.Buckets, Props: back.Props}
	fmt.Fprintf(o.out, "%s\n %s %s\n", msgHeader(name, v, 1), cmd, formatGroupAs(g, enc, v, nil))
	return nil
}

// parseFlow is `ovs-ofctl parse-flow FLOW` (OVS's ofctl_parse_flow):
// the protocols that can carry the flow, the first of them the -O
// versions allow, and the flow mod as sent in it, decoded back.
func (o *ofctl) parseFlow(args []string) error {
	spec, err := parseFlowSpec(args[0])
	if err != nil {
		return fatal{err.Error()}
	}
	return o.printParsedFlows([]*ofptext.Flow{spec}, spec.Usable)
}

// parseFlows is `ovs-ofctl parse-flows FILE` (OVS's ofctl_parse_flows):
// parse-flow of every flow in FILE ("-": the standard input), the
// protocols those usable for them all, errors with the line's number.
func (o *ofctl) parseFlows(args []string) error {
	var r io.Reader = os.Stdin
	if args[0] != "-" {
		f, err := os.Open(args[0])
		if err != nil {
			return fatalf("%s: open failed (%s)", args[0], daemon.Strerror(err))
		}
		defer f.Close()
		r = f
	}
	var specs []*ofptext.Flow
	usable := ofptext.Protocols(ofptext.ProtoAny)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		// OVS's ds_get_preprocessed_line: comments and white space go,
		// the line numbers count every line.
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		spec, err := parseFlowSpec(line)
		if err != nil {
			return fatalf("%s:%d: %s", args[0], n, err)
		}
		specs = append(specs, spec)
		usable &= spec.Usable
	}
	if err := sc.Err(); err != nil {
		return fatalf("%s: read failed (%s)", args[0], daemon.Strerror(err))
	}
	return o.printParsedFlows(specs, usable)
}

// parseFlowSpec parses a flow to add as OVS's parse_ofp_str, its action
// checks included.
func parseFlowSpec(s string) (*ofptext.Flow, error) {
	spec, err := ofptext.ParseFlow(s, ofptext.ParseAdd, nil)
	if err != nil {
		return nil, err
	}
	if _, err := flowMod(spec, ofptext.ParseAdd, ofp.V10); err != nil {
		return nil, err
	}
	if spec.Usable == 0 {
		// Actions that leave no protocol.
		return nil, errInconsistent
	}
	return spec, nil
}

// printParsedFlows prints the usable protocols, the chosen one and the
// flow mods in it, as OVS's ofctl_parse_flows__.
func (o *ofctl) printParsedFlows(specs []*ofptext.Flow, usable ofptext.Protocols) error {
	fmt.Fprintf(o.out, "usable protocols: %s\n", usable)
	usable &= ofptext.VersionProtocols(o.allowed)
	if usable == 0 {
		return fatalf("no usable protocol")
	}
	chosen := usable & -usable
	fmt.Fprintf(o.out, "chosen protocol: %s\n", chosen)
	v := chosen.Version()
	if err := checkFlowVersion(v); err != nil {
		return err
	}
	tid := chosen&(ofptext.ProtoOF10StdTID|ofptext.ProtoOF10NXMTID) != 0
	nx := chosen&ofptext.ProtoOF10NXMAny != 0
	for i, spec := range specs {
		fm, err := flowMod(spec, ofptext.ParseAdd, v)
		if err != nil {
			return err
		}
		pre := fm.Match
		normalize(&fm.Match, v)
		if v == ofp.V10 && !nx {
			// OVS normalises (and logs) again as it encodes a standard
			// OpenFlow 1.0 match.
			normalize(&pre, v)
		}
		if v == ofp.V10 && !tid {
			fm.Table = 0
		}
		if v == ofp.V10 && !nx && ofp.FlowModNX(fm) {
			return fatalf("govs' ovs-ofctl cannot encode this flow in %s", chosen)
		}
		xid := uint32(i + 1)
		msg, err := ofp.Decode(ofp.EncodeFlowMod(v, xid, fm))
		if err != nil {
			return fatalf("%s", err)
		}
		back, ok := msg.(*ofp.FlowMod)
		if !ok {
			return fatalf("govs' ovs-ofctl cannot decode its own flow mod")
		}
		// What the encoding converts (OpenFlow 1.0's mod_* for
		// set_field, resubmit for goto_table), as OVS prints the message
		// it encoded; the rest as given (the decoder adds what a 1.0 add
		// implies).
		fm.Match, fm.Actions, fm.Importance = back.Match, back.Actions, back.Importance
		name := "OFPT_FLOW_MOD"
		if nx {
			name = "NXT_FLOW_MOD"
		}
		text := formatFlowMod(fm, v)
		if tid && !spec.TableSet {
			// OpenFlow 1.0 with table IDs sends "no table" as 255.
			text = strings.Replace(text, "ADD ", "ADD table:255 ", 1)
		}
		fmt.Fprintf(o.out, "%s %s\n", msgHeader(name, v, xid), text)
	}
	return nil
}

// dumpFlows prints the flows (matching the filter if any).
func (o *ofctl) dumpFlows(args []string) error {
	var ports []ofp.Port
	filter := len(args) == 2
	names := o.showNames()
	if filter || names {
		// OVS's ovs-ofctl learns port and table names first, on
		// connections of their own.
		p, err := o.fetchPorts(args[0])
		if err != nil {
			return err
		}
		ports = p
		o.xid += 2
	}
	filterSpec := ""
	if filter {
		filterSpec = args[1]
	}
	vc, replies, err := o.flowStats(args[0], filterSpec, ports, ofp.StatsFlow)
	if err != nil {
		return err
	}
	defer vc.close()
	var pn ofp.PortNames
	if names {
		pn = namesOf(ports)
	}
	simple := len(o.sortKeys) == 0 && !names && o.showStats
	var all []ofp.FlowStats
	for _, r := range replies {
		sr, err := ofp.DecodeStatsReply(r)
		if err != nil {
			return err
		}
		flows, err := ofp.DecodeFlowStats(sr)
		if err != nil {
			return fatalf("%s: decoding flow statistics: %v", vc.name, err)
		}
		if simple {
			name := "OFPST_FLOW reply"
			if sr.Kind == ofp.StatsVendor {
				name = "NXST_FLOW reply"
			}
			o.out.WriteString(msgHeader(name, sr.Version, sr.Xid))
			if sr.More {
				o.out.WriteString(" flags=[more]")
			}
			o.out.WriteString("\n")
			for i := range flows {
				o.out.WriteString(" " + formatFlowStats(&flows[i], vc.v, true, nil) + "\n")
			}
			continue
		}
		if sr.Kind == ofp.StatsVendor {
			// OVS's sorted dump decodes without the flow age extension.
			for i := range flows {
				flows[i].IdleAge, flows[i].HardAge = -1, -1
			}
		}
		all = append(all, flows...)
	}
	if simple {
		return nil
	}
	o.sortFlows(all)
	for i := range all {
		o.out.WriteString(" " + formatFlowStats(&all[i], vc.v, o.showStats, pn) + "\n")
	}
	return nil
}

// flowStats sends a FLOW or AGGREGATE statistics request for the flows
// filter selects ("" for all) on a connection of its own, as OVS's
// prepare_dump_flows: NXM in OpenFlow 1.0. The caller closes vc.
func (o *ofctl) flowStats(target, filter string, ports []ofp.Port, kind ofp.StatsKind) (vc *vconn, replies [][]byte, err error) {
	spec := &ofptext.Flow{Table: 0xff, OutPort: ofp.PortAny, OutGroup: ofp.GroupAny}
	if filter != "" {
		if spec, err = ofptext.ParseFlow(filter, ofptext.ParseDump, resolver(ports)); err != nil {
			return nil, nil, fatal{err.Error()}
		}
	}
	if vc, err = o.open(target); err != nil {
		return nil, nil, err
	}
	fail := func(err error) (*vconn, [][]byte, error) {
		vc.close()
		return nil, nil, err
	}
	if err := checkFlowVersion(vc.v); err != nil {
		return fail(err)
	}
	if vc.v == ofp.V10 {
		if err := o.setFlowFormat(vc); err != nil {
			return fail(err)
		}
	}
	req := &ofp.StatsRequest{Kind: kind, Table: spec.Table, OutPort: spec.OutPort, OutGroup: spec.OutGroup, Match: spec.Match}
	if spec.CookieSet {
		req.Cookie, req.CookieMask = spec.Cookie, spec.CookieMask
	}
	normalize(&req.Match, vc.v)
	if replies, err = vc.transact(ofp.EncodeFlowStatsRequest(vc.v, o.nextXid(), req)); err != nil {
		return fail(transactErr(vc, err))
	}
	return vc, replies, nil
}

// setFlowFormat switches an OpenFlow 1.0 connection to NXM, as OVS's
// ovs-ofctl does before flow commands that need it.
func (o *ofctl) setFlowFormat(vc *vconn) error {
	if _, err := vc.c.Write(ofp.EncodeSetFlowFormat(vc.v, o.nextXid(), ofp.FlowFormatNXM)); err != nil {
		return fatalf("%s: transaction error (%s)", vc.name, daemon.Strerror(err))
	}
	return o.barrier(vc)
}

func (o *ofctl) barrier(vc *vconn) error {
	_, err := vc.transact(ofp.EncodeBarrierRequest(vc.v, o.nextXid()))
	return transactErr(vc, err)
}

// sortFlows orders flows by --sort/--rsort keys (a bare --sort is by
// priority, as OVS's); flows that compare equal keep the switch's order.
func (o *ofctl) sortFlows(flows []ofp.FlowStats) {
	if len(o.sortKeys) == 0 {
		return
	}
	sort.SliceStable(flows, func(i, j int) bool {
		for _, k := range o.sortKeys {
			c := compareFlows(&flows[i], &flows[j], k.field)
			if k.desc {
				c = -c
			}
			if c != 0 {
				return c < 0
			}
		}
		return false
	})
}

func compareFlows(a, b *ofp.FlowStats, field string) int {
	cmp := func(x, y uint64) int {
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	}
	switch field {
	case "", "priority":
		return cmp(uint64(a.Priority), uint64(b.Priority))
	case "table":
		return cmp(uint64(a.Table), uint64(b.Table))
	case "cookie":
		return cmp(a.Cookie, b.Cookie)
	case "n_packets":
		return cmp(a.Packets, b.Packets)
	case "n_bytes":
		return cmp(a.Bytes, b.Bytes)
	case "duration":
		return cmp(uint64(a.Duration), uint64(b.Duration))
	}
	fd := ofptext.FieldOf(field)
	if fd == nil {
		return 0
	}
	// A flow that does not match on the field sorts after those that do.
	am, bm := !isZero(fd.Get(&a.Match.Mask)), !isZero(fd.Get(&b.Match.Mask))
	switch {
	case am && !bm:
		return -1
	case !am && bm:
		return 1
	case !am:
		return 0
	}
	av, bv := fd.Get(&a.Match.Flow), fd.Get(&b.Match.Flow)
	for i := range av {
		if av[i] != bv[i] {
			return cmp(uint64(av[i]), uint64(bv[i]))
		}
	}
	return 0
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// normalize logs, as OVS's ofputil_normalize_match, a match that has
// fields without their prerequisites, and in OpenFlow 1.0 drops them
// (OVS's 1.0 and NXM encoders leave them out; its OXM encoder sends
// them, for the switch to refuse).
func normalize(m *ofp.Match, v ofp.Version) {
	norm := *m
	changed := false
	for id := ofp.FieldInPort; id < ofp.FieldReg0; id++ {
		fd := ofp.FieldByID(id)
		if fd == nil || fd.Prereqs(m) || isZero(fd.Get(&norm.Mask)) || sharedWithValid(fd, m) {
			continue
		}
		zero := make([]byte, fd.Len)
		fd.Set(&norm.Mask, zero)
		fd.Set(&norm.Flow, zero)
		changed = true
	}
	if !changed {
		return
	}
	logInfo("ofp_match", "normalization changed ofp_match, details:")
	logInfo("ofp_match", " pre: "+ofp.FormatMatch(m, 32768, nil))
	logInfo("ofp_match", "post: "+ofp.FormatMatch(&norm, 32768, nil))
	if v == ofp.V10 {
		*m = norm
	}
}

// sharedWithValid reports whether another field over the same bits as fd
// (nw_src and arp_spa, tp_src and icmp_type, ...) has its prerequisites
// in m: the bits are that field's.
func sharedWithValid(fd *ofp.Field, m *ofp.Match) bool {
	var probe ofp.Flow
	ones := make([]byte, fd.Len)
	for i := range ones {
		ones[i] = 0xff
	}
	fd.Set(&probe, ones)
	for id := ofp.FieldInPort; id < ofp.FieldReg0; id++ {
		g := ofp.FieldByID(id)
		if g != nil && g != fd && g.Prereqs(m) && !isZero(g.Get(&probe)) {
			return true
		}
	}
	return false
}

// addFlows adds the flows of a file ("-" for standard input), one per
// line; blank lines and lines starting with '#' are skipped.
func (o *ofctl) addFlows(args []string) error {
	var r io.Reader = os.Stdin
	if args[1] != "-" {
		f, err := os.Open(args[1])
		if err != nil {
			return fatalf("%s: open failed (%s)", args[1], daemon.Strerror(err))
		}
		defer f.Close()
		r = f
	}
	var lines []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		if line == "" {
			continue
		}
		lines = append(lines, line)
	}
	if err := sc.Err(); err != nil {
		return fatalf("%s: read failed (%s)", args[1], daemon.Strerror(err))
	}
	return o.flowModsFile(args[0], args[1], lines)
}

func (o *ofctl) flowModsFile(target, file string, lines []string) error {
	return o.flowModsCmd(target, lines, ofptext.ParseAdd, file)
}

func (o *ofctl) flowMods(target string, specs []string, cmd int) error {
	return o.flowModsCmd(target, specs, cmd, "")
}

// flowModsCmd sends one flow mod per spec, each followed by a barrier,
// and prints the errors the switch answers with.
func (o *ofctl) flowModsCmd(target string, specs []string, cmd int, file string) error {
	// OVS's ovs-ofctl learns table and port names first, on
	// connections of their own.
	o.xid += 2
	ports, err := o.fetchPorts(target)
	if err != nil {
		return err
	}
	var parsed []*ofptext.Flow
	for i, s := range specs {
		spec, err := ofptext.ParseFlow(s, cmd, resolver(ports))
		if err != nil {
			if file != "" {
				return fatalf("%s:%d: %v", file, i+1, err)
			}
			return fatal{err.Error()}
		}
		parsed = append(parsed, spec)
	}
	vc, err := o.open(target)
	if err != nil {
		return err
	}
	defer vc.close()
	if err := checkFlowVersion(vc.v); err != nil {
		return err
	}
	fms := make([]*ofp.FlowMod, len(parsed))
	for i, spec := range parsed {
		if fms[i], err = flowMod(spec, cmd, vc.v); err != nil {
			return err
		}
	}
	if vc.v == ofp.V10 {
		nx, table := false, false
		for _, fm := range fms {
			normalize(&fm.Match, vc.v)
			nx = nx || ofp.FlowModNX(fm)
			table = table || fm.Table != 0 && fm.Table != 0xff
		}
		if nx {
			if err := o.setFlowFormat(vc); err != nil {
				return err
			}
		}
		if table {
			if _, err := vc.c.Write(ofp.EncodeFlowModTableID(vc.v, o.nextXid(), true)); err != nil {
				return fatalf("%s: transaction error (%s)", vc.name, daemon.Strerror(err))
			}
			if err := o.barrier(vc); err != nil {
				return err
			}
		}
	} else {
		for _, fm := range fms {
			normalize(&fm.Match, vc.v)
		}
	}
	msgs := make([][]byte, len(fms))
	names := make([]string, len(fms))
	describe := make([]func() string, len(fms))
	for i, fm := range fms {
		fm := fm
		msgs[i] = ofp.EncodeFlowMod(vc.v, o.nextXid(), fm)
		names[i] = "OFPT_FLOW_MOD"
		if vc.v == ofp.V10 && ofp.FlowModNX(fm) {
			names[i] = "NXT_FLOW_MOD"
		}
		v := vc.v
		describe[i] = func() string { return " " + formatFlowMod(fm, v) }
	}
	if o.bundle {
		return o.bundleTransact(vc, msgs, names, describe)
	}
	return o.sendWithBarriers(vc, msgs, names, describe)
}

// bundleTransact sends msgs in one bundle (ID 0, atomic and ordered) as
// OVS 3.1's ovs-ofctl: open, add each, commit (a failed commit leaves no
// bundle to discard); then prints the errors as OVS's bundle_print_errors.
func (o *ofctl) bundleTransact(vc *vconn, msgs [][]byte, names []string, describe []func() string) error {
	const flags = ofp.BundleAtomic | ofp.BundleOrdered
	var errs [][]byte
	ctrlName := "OFPT_BUNDLE_CONTROL"
	if vc.v == ofp.V13 {
		ctrlName = "ONFT_BUNDLE_CONTROL"
	}
	sent := map[uint32]string{}
	control := func(typ uint16) error {
		xid := o.nextXid()
		sent[xid] = bundleTypeNames[typ]
		if _, err := vc.c.Write(ofp.EncodeBundleControl(vc.v, xid, 0, typ, flags)); err != nil {
			return fatalf("%s: transaction error (%s)", vc.name, daemon.Strerror(err))
		}
		for {
			reply, err := vc.read()
			if err != nil {
				return err
			}
			h := ofp.ParseHeader(reply)
			if h.Type == ofp.TypeError {
				errs = append(errs, reply)
				if h.Xid == xid {
					return errProto
				}
				continue
			}
			if h.Xid == xid {
				if m, err := ofp.Decode(reply); err != nil {
					return errProto
				} else if bc, ok := m.(*ofp.BundleControl); !ok || bc.Type != typ+1 || bc.ID != 0 {
					return errProto
				}
				return nil
			}
		}
	}
	err := control(ofp.BundleOpenRequest)
	// OVS's numbering passes over one xid before the commit.
	o.nextXid()
	if err == nil {
		for _, m := range msgs {
			if _, werr := vc.c.Write(ofp.EncodeBundleAdd(vc.v, 0, flags, m)); werr != nil {
				err = fatalf("%s: transaction error (%s)", vc.name, daemon.Strerror(werr))
				break
			}
		}
	}
	if err == nil {
		err = control(ofp.BundleCommitRequest)
	}
	// Each error names the message it is about: a request of the
	// bundle, found from the last one found on, else what it echoes.
	cursor := -1
	for _, e := range errs {
		xid := ofp.ParseHeader(e).Xid
		errno, data, ok := ofp.DecodeErrorMsg(e)
		if !ok {
			fmt.Fprint(os.Stderr, "***decode error***")
			continue
		}
		found := -1
		for i := cursor + 1; i < len(msgs); i++ {
			if ofp.ParseHeader(msgs[i]).Xid == xid {
				found = i
				break
			}
		}
		cursor = found
		text := "Error " + errno.String() + " for: "
		switch {
		case found >= 0:
			h := ofp.ParseHeader(msgs[found])
			text += msgHeader(names[found], h.Version, h.Xid) + describe[found]() + "\n"
		case len(data) >= 16 && sent[ofp.ParseHeader(data).Xid] != "":
			h := ofp.ParseHeader(data)
			text += msgHeader(ctrlName, h.Version, h.Xid) + "\n bundle_id=0 type=" + sent[h.Xid] + " flags=atomic ordered\n"
		default:
			text += formatError(e, "", nil)
		}
		fmt.Fprint(os.Stderr, text)
	}
	if errors.Is(err, errProto) {
		return fatalf("talking to %s (Protocol error)", vc.name)
	}
	return err
}

// errProto is a bundle step the switch refused (OVS's EPROTO).
var errProto = errors.New("protocol error")

var bundleTypeNames = map[uint16]string{ofp.BundleOpenRequest: "OPEN_REQUEST", ofp.BundleCommitRequest: "COMMIT_REQUEST"}

// flowMod makes a flow mod of the spec for command cmd, or refuses
// actions that cannot go with it as OVS's ofpacts_check does.
func flowMod(fs *ofptext.Flow, cmd int, v ofp.Version) (*ofp.FlowMod, error) {
	fm := &ofp.FlowMod{Match: fs.Match, Priority: fs.Priority, IdleTimeout: fs.Idle, HardTimeout: fs.Hard,
		Importance: fs.Importance, Flags: fs.Flags, BufferID: 0xffffffff, OutPort: fs.OutPort, OutGroup: fs.OutGroup,
		Actions: fs.Actions, NewCookie: ^uint64(0)}
	fm.Command = map[int]uint8{ofptext.ParseAdd: ofp.FlowAdd, ofptext.ParseModify: ofp.FlowModify, ofptext.ParseModifyStrict: ofp.FlowModifyStrict,
		ofptext.ParseDelete: ofp.FlowDelete, ofptext.ParseDeleteStrict: ofp.FlowDeleteStrict}[cmd]
	switch {
	case cmd == ofptext.ParseAdd:
		fm.NewCookie = fs.Cookie
	case fs.CookieSet && fs.CookieMask != ^uint64(0) || fs.CookieSet && cmd != ofptext.ParseModify && cmd != ofptext.ParseModifyStrict:
		fm.Cookie = ofp.Cookie{Value: fs.Cookie & fs.CookieMask, Mask: fs.CookieMask}
	case fs.CookieSet:
		fm.NewCookie, fm.HasNewCookie = fs.Cookie, true
	}
	fm.Table = fs.Table
	if !fs.TableSet {
		fm.Table = 0
		if cmd == ofptext.ParseDelete || cmd == ofptext.ParseDeleteStrict {
			fm.Table = 0xff
		}
	}
	for _, a := range fm.Actions {
		if a.Type == ofp.ActGotoTable && fm.Table != 0xff && a.Table <= fm.Table {
			return nil, fatalf("actions are invalid with specified match (OFPBIC_BAD_TABLE_ID)")
		}
	}
	m := fm.Match
	if err := checkActions(fm.Actions, &m); err != nil {
		return nil, err
	}
	fm.Actions = vlanActions(fm.Actions, &fm.Match, v)
	return fm, nil
}

// errInconsistent is OVS's ofpacts_check verdict on actions the match
// does not allow.
var errInconsistent = fatalf("actions are invalid with specified match (OFPBAC_MATCH_INCONSISTENT)")

// errBadOutPort is its verdict on output to a port that takes none.
var errBadOutPort = fatalf("actions are invalid with specified match (OFPBAC_BAD_OUT_PORT)")

// checkActions refuses, as OVS's ofpacts_check does before sending,
// actions whose fields the match (as the actions change it) does not
// give the prerequisites of, and ct without IP (or its helper's
// protocol).
func checkActions(acts []ofp.Action, m *ofp.Match) error {
	ref := func(r ofp.FieldRef, what string) error {
		if r.Field.Prereqs(m) {
			return nil
		}
		logWarn("meta_flow", fmt.Sprintf("%s field %s lacks correct prerequisites", what, r.Field.MFName()))
		return errInconsistent
	}
	for i := range acts {
		a := &acts[i]
		var err error
		switch a.Type {
		case ofp.ActMeter:
			// OVS's check_METER: 0 and the reserved meters are no meter.
			if a.ID == 0 || a.ID > 0xffff0000 {
				return fatalf("actions are invalid with specified match (OFPMMFC_INVALID_METER)")
			}
		case ofp.ActSetField:
			// OVS's check_SET_FIELD: a set of vlan_vid also needs a
			// VLAN header (from the match or a push_vlan before it).
			noVLAN := a.Field.ID == ofp.FieldVLANVID && (m.Mask.VLANTCI&flow.VLANPresent == 0 || m.Flow.VLANTCI&flow.VLANPresent == 0)
			if !a.Legacy() && (!a.Field.Prereqs(m) || noVLAN) {
				logWarn("ofp_actions", fmt.Sprintf("set_field %s lacks correct prerequisites", a.Field.MFName()))
				return errInconsistent
			}
		case ofp.ActMove:
			if err = ref(a.Src, "source"); err == nil {
				err = ref(a.Dst, "destination")
			}
		case ofp.ActOutputReg:
			err = ref(a.Src, "source")
		case ofp.ActResubmit:
			// check_RESUBMIT: "ct" needs a tracked connection.
			if a.CTOrig && !m.CTValid() {
				return errInconsistent
			}
		case ofp.ActCheckPktLarger:
			err = ref(a.Dst, "destination")
		case ofp.ActMultipath:
			err = ref(a.Multipath.Dst, "destination")
		case ofp.ActBundle:
			for _, p := range a.Bundle.Members {
				if p == 0xfffd {
					logWarn("bundle", "unsupported controller member")
					return errBadOutPort
				}
			}
			if a.Bundle.Load {
				err = ref(a.Bundle.Dst, "destination")
			}
		case ofp.ActEnqueue:
			// OVS's check_ENQUEUE: a port, IN_PORT or LOCAL.
			if a.Port >= ofp.PortMax && a.Port != ofp.PortInPort && a.Port != ofp.PortLocal {
				return errBadOutPort
			}
		case ofp.ActOutput, ofp.ActOutputTrunc:
			// ofpact_check_output_port: a port below OFPP_MAX or a
			// reserved one that outputs (not ANY, UNSET, or the
			// OpenFlow 1.0 numbers between).
			switch a.Port {
			case ofp.PortInPort, 0xfffffff9, ofp.PortNormal, ofp.PortFlood, ofp.PortAll, ofp.PortController, ofp.PortLocal:
			default:
				if a.Port >= ofp.PortMax {
					return errBadOutPort
				}
			}
		case ofp.ActLearn:
			err = checkLearn(a.Learn, m, ref)
		case ofp.ActStackPush:
			err = ref(a.Src, "source")
		case ofp.ActStackPop:
			err = ref(a.Dst, "destination")
		case ofp.ActPushVLAN:
			m.Flow.VLANTCI |= flow.VLANPresent
			m.Mask.VLANTCI |= flow.VLANPresent
		case ofp.ActPopVLAN:
			m.Flow.VLANTCI, m.Mask.VLANTCI = 0, 0xffff
		case ofp.ActCT:
			ip := m.Mask.EthType == 0xffff && (m.Flow.EthType == flow.EthTypeIPv4 || m.Flow.EthType == flow.EthTypeIPv6)
			proto := m.Flow.NwProto
			if m.Mask.NwProto != 0xff {
				proto = 0
			}
			if !ip || a.CT.Alg == 21 && proto != flow.IPProtoTCP || a.CT.Alg == 69 && proto != flow.IPProtoUDP {
				return errInconsistent
			}
			err = checkActions(a.Nested, m)
		case ofp.ActClone, ofp.ActWriteActions:
			c := *m
			err = checkActions(a.Nested, &c)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checkLearn is OVS's learn_check: each source against the learning
// flow's match, each matched field against the learned flow's match so
// far (a "source" too), each loaded one as a destination.
func checkLearn(l *ofp.Learn, m *ofp.Match, ref func(ofp.FieldRef, string) error) error {
	var dst ofp.Match
	for i := range l.Specs {
		s := &l.Specs[i]
		if s.Src.Field != nil {
			if err := ref(s.Src, "source"); err != nil {
				return err
			}
		}
		switch s.Kind {
		case ofp.LearnMatch:
			if !s.Dst.Field.Prereqs(&dst) {
				logWarn("meta_flow", fmt.Sprintf("source field %s lacks correct prerequisites", s.Dst.Field.MFName()))
				return errInconsistent
			}
			if s.Src.Field == nil {
				v, mk := s.Value(nil)
				s.Dst.Field.SetMasked(&dst.Flow, v, mk)
				s.Dst.Field.SetMasked(&dst.Mask, mk, mk)
			}
		case ofp.LearnLoad:
			if !s.Dst.Field.Prereqs(&dst) {
				logWarn("meta_flow", fmt.Sprintf("destination field %s lacks correct prerequisites", s.Dst.Field.MFName()))
				return errInconsistent
			}
		}
	}
	return nil
}

// vlanActions rewrites OpenFlow 1.0's mod_vlan_vid and mod_vlan_pcp for
// 1.2+ as OVS's encoder: a set_field, after a push_vlan when the packet
// may have no tag yet (the match does not require one and no earlier
// action pushed one).
func vlanActions(acts []ofp.Action, m *ofp.Match, v ofp.Version) []ofp.Action {
	if v < ofp.V12 {
		return acts
	}
	tagged := m.Mask.VLANTCI&flow.VLANPresent != 0 && m.Flow.VLANTCI&flow.VLANPresent != 0
	var out []ofp.Action
	for _, a := range acts {
		switch a.Type {
		case ofp.ActSetVLANVID, ofp.ActSetVLANPCP:
			if !tagged {
				out = append(out, ofp.Action{Type: ofp.ActPushVLAN, VLAN: flow.EthTypeVLAN})
				tagged = true
			}
			if a.Type == ofp.ActSetVLANVID {
				out = append(out, ofp.SetField(ofp.FieldByName("vlan_vid"), []byte{byte(a.VLAN>>8) | 0x10, byte(a.VLAN)}, []byte{0xff, 0xff}, false))
			} else {
				out = append(out, ofp.SetField(ofp.FieldByName("vlan_pcp"), []byte{byte(a.VLAN)}, []byte{0xff}, false))
			}
			continue
		case ofp.ActPushVLAN:
			tagged = true
		case ofp.ActPopVLAN:
			tagged = false
		}
		out = append(out, a)
	}
	return out
}

// formatFlowMod describes a flow mod as ofputil_flow_mod_format.
func formatFlowMod(fm *ofp.FlowMod, v ofp.Version) string {
	var b strings.Builder
	b.WriteString([]string{"ADD", "MOD", "MOD_STRICT", "DEL", "DEL_STRICT"}[fm.Command])
	if fm.Table != 0 && fm.Table != 0xff {
		fmt.Fprintf(&b, " table:%d", fm.Table)
	}
	b.WriteByte(' ')
	b.WriteString(ofp.FormatMatch(&fm.Match, int(fm.Priority), nil))
	s := b.String()
	if !strings.HasSuffix(s, " ") {
		b.WriteByte(' ')
	}
	if fm.Command == ofp.FlowAdd && fm.NewCookie != 0 || fm.HasNewCookie && fm.NewCookie != ^uint64(0) {
		fmt.Fprintf(&b, "cookie:0x%x ", fm.NewCookie)
	}
	if fm.Cookie.Mask != 0 {
		fmt.Fprintf(&b, "cookie:0x%x/0x%x ", fm.Cookie.Value, fm.Cookie.Mask)
	}
	if fm.IdleTimeout != 0 {
		fmt.Fprintf(&b, "idle:%d ", fm.IdleTimeout)
	}
	if fm.HardTimeout != 0 {
		fmt.Fprintf(&b, "hard:%d ", fm.HardTimeout)
	}
	if fm.Importance != 0 {
		fmt.Fprintf(&b, "importance:%d ", fm.Importance)
	}
	if fm.Priority != 32768 && !strings.Contains(b.String(), "priority") {
		fmt.Fprintf(&b, "pri:%d ", fm.Priority)
	}
	if fm.OutPort != ofp.PortAny {
		fmt.Fprintf(&b, "out_port:%s ", ofp.PortNames(nil).Port(fm.OutPort))
	}
	for _, fl := range flowFlagNames {
		if fm.Flags&fl.bit != 0 {
			b.WriteString(fl.name + " ")
		}
	}
	if fm.Command == ofp.FlowDelete || fm.Command == ofp.FlowDeleteStrict {
		return strings.TrimSuffix(b.String(), " ")
	}
	b.WriteString("actions=" + ofp.FormatActions(fm.Actions, v, nil))
	return b.String()
}

// printStatsReplies prints each reply's header (name, version, xid, the
// more flag) followed by body(reply).
func (o *ofctl) printStatsReplies(replies [][]byte, name string, body func(*ofp.Reply) (string, error)) error {
	for _, r := range replies {
		sr, err := ofp.DecodeStatsReply(r)
		if err != nil {
			return err
		}
		text, err := body(sr)
		if err != nil {
			return err
		}
		o.out.WriteString(msgHeader(name, sr.Version, sr.Xid))
		if sr.More {
			o.out.WriteString(" flags=[more]")
		}
		o.out.WriteString(text)
	}
	return nil
}

// portArg parses a command's port argument: a number or reserved name
// at once, a port's name after learning the names (as OVS's, on a
// connection of its own).
func (o *ofctl) portArg(target, arg string) (uint32, error) {
	if p, err := ofptext.ParsePort(arg, nil); err == nil {
		return p, nil
	}
	ports, err := o.fetchPorts(target)
	if err != nil {
		return 0, err
	}
	p, err := ofptext.ParsePort(arg, resolver(ports))
	if err != nil {
		return 0, fatalf("%s: unknown port `%s'", target, arg)
	}
	return p, nil
}

// portRequest sends a request about the port args[1] names (every port
// without one) to switch args[0] and returns the replies.
func (o *ofctl) portRequest(args []string, encode func(v ofp.Version, xid, port uint32) []byte) ([][]byte, error) {
	port := uint32(ofp.PortAny)
	if len(args) == 2 {
		p, err := o.portArg(args[0], args[1])
		if err != nil {
			return nil, err
		}
		port = p
	}
	vc, err := o.open(args[0])
	if err != nil {
		return nil, err
	}
	defer vc.close()
	replies, err := vc.transact(encode(vc.v, o.nextXid(), port))
	if err != nil {
		return nil, transactErr(vc, err)
	}
	return replies, nil
}

// dumpPortsDesc prints the PORT_DESC reply (one port's with PORT).
func (o *ofctl) dumpPortsDesc(args []string) error {
	// Only OpenFlow 1.5's request names a port; before, every port is
	// shown, as by OVS's.
	replies, err := o.portRequest(args, ofp.EncodePortDescRequest)
	if err != nil {
		return err
	}
	return o.printStatsReplies(replies, "OFPST_PORT_DESC reply", func(r *ofp.Reply) (string, error) {
		ports, err := ofp.DecodePorts(r.Version, r.Body)
		if err != nil {
			return "", err
		}
		var b strings.Builder
		b.WriteString("\n")
		printPorts(&b, r.Version, ports)
		return b.String(), nil
	})
}

// statCount formats a counter as print_port_stat: "?" when unknown.
func statCount(v uint64) string {
	if v == ofp.Unknown {
		return "?"
	}
	return strconv.FormatUint(v, 10)
}

// dumpPorts prints port statistics as ofputil_format_port_stats.
func (o *ofctl) dumpPorts(args []string) error {
	replies, err := o.portRequest(args, ofp.EncodePortStatsRequest)
	if err != nil {
		return err
	}
	// OVS's learns the names for --names after the statistics.
	var pn ofp.PortNames
	if o.showNames() {
		ports, err := o.fetchPorts(args[0])
		if err != nil {
			return err
		}
		pn = namesOf(ports)
	}
	return o.printStatsReplies(replies, "OFPST_PORT reply", func(r *ofp.Reply) (string, error) {
		stats, err := ofp.DecodePortStats(r)
		if err != nil {
			return "", err
		}
		var b strings.Builder
		fmt.Fprintf(&b, " %d ports\n", len(stats))
		for _, s := range stats {
			b.WriteString("  port ")
			if s.No < 10 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%s: rx pkts=%s, bytes=%s, drop=%s, errs=%s, frame=%s, over=%s, crc=%s\n", pn.Port(s.No),
				statCount(s.RxPackets), statCount(s.RxBytes), statCount(s.RxDropped), statCount(s.RxErrors),
				statCount(s.RxFrameErr), statCount(s.RxOverErr), statCount(s.RxCRCErr))
			fmt.Fprintf(&b, "           tx pkts=%s, bytes=%s, drop=%s, errs=%s, coll=%s\n", statCount(s.TxPackets),
				statCount(s.TxBytes), statCount(s.TxDropped), statCount(s.TxErrors), statCount(s.Collision))
			if s.Duration >= 0 {
				fmt.Fprintf(&b, "           duration=%s\n", formatDuration(s.Duration))
			}
		}
		return b.String(), nil
	})
}

// dumpAggregate prints the aggregate statistics of the flows (matching
// the filter if any).
func (o *ofctl) dumpAggregate(args []string) error {
	var ports []ofp.Port
	spec := ""
	if len(args) == 2 {
		p, err := o.fetchPorts(args[0])
		if err != nil {
			return err
		}
		ports, spec = p, args[1]
		o.xid += 2
	}
	vc, replies, err := o.flowStats(args[0], spec, ports, ofp.StatsAggregate)
	if err != nil {
		return err
	}
	defer vc.close()
	name := "OFPST_AGGREGATE reply"
	if vc.v == ofp.V10 {
		name = "NXST_AGGREGATE reply"
	}
	return o.printStatsReplies(replies, name, func(r *ofp.Reply) (string, error) {
		packets, bytes, flows, err := ofp.DecodeAggregate(r)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf(" packet_count=%d byte_count=%d flow_count=%d\n", packets, bytes, flows), nil
	})
}

// queueStats prints queue statistics (of PORT, and QUEUE, when given).
func (o *ofctl) queueStats(args []string) error {
	port, queue := uint32(ofp.PortAny), uint32(0xffffffff)
	if len(args) >= 2 && args[1] != "ALL" && args[1] != "any" && args[1] != "ANY" {
		p, err := o.portArg(args[0], args[1])
		if err != nil {
			return err
		}
		port = p
	}
	if len(args) == 3 && args[2] != "ALL" {
		n, err := strconv.ParseUint(args[2], 0, 32)
		if err != nil {
			return fatalf("%s: invalid queue number", args[2])
		}
		queue = uint32(n)
	}
	vc, err := o.open(args[0])
	if err != nil {
		return err
	}
	defer vc.close()
	replies, err := vc.transact(ofp.EncodeQueueStatsRequest(vc.v, o.nextXid(), port, queue))
	if err != nil {
		return transactErr(vc, err)
	}
	return o.printStatsReplies(replies, "OFPST_QUEUE reply", func(r *ofp.Reply) (string, error) {
		stats, err := ofp.DecodeQueueStats(r)
		if err != nil {
			return "", err
		}
		var b strings.Builder
		fmt.Fprintf(&b, " %d queues\n", len(stats))
		for _, q := range stats {
			name := strconv.FormatUint(uint64(q.Queue), 10)
			if q.Queue == 0xffffffff {
				name = "ALL"
			}
			fmt.Fprintf(&b, "  port %s queue %s: bytes=%s, pkts=%s, errors=%s, duration=", ofp.PortNames(nil).Port(q.Port), name,
				statCount(q.TxBytes), statCount(q.TxPackets), statCount(q.TxErrors))
			if q.Duration >= 0 {
				b.WriteString(formatDuration(q.Duration))
			} else {
				b.WriteString("?")
			}
			b.WriteString("\n")
		}
		return b.String(), nil
	})
}

// modPortActions are mod-port's words: the config bit and whether the
// word sets it.
var modPortActions = map[string]struct {
	bit uint32
	set bool
}{
	"up": {ofp.PortConfigDown, false}, "down": {ofp.PortConfigDown, true},
	"stp": {ofp.PortConfigNoSTP, false}, "no-stp": {ofp.PortConfigNoSTP, true},
	"receive": {ofp.PortConfigNoRecv, false}, "no-receive": {ofp.PortConfigNoRecv, true},
	"receive-stp": {ofp.PortConfigNoRecvSTP, false}, "no-receive-stp": {ofp.PortConfigNoRecvSTP, true},
	"forward": {ofp.PortConfigNoFwd, false}, "no-forward": {ofp.PortConfigNoFwd, true},
	"flood": {ofp.PortConfigNoFlood, false}, "no-flood": {ofp.PortConfigNoFlood, true},
	"packet-in": {ofp.PortConfigNoPacketIn, false}, "no-packet-in": {ofp.PortConfigNoPacketIn, true},
}

// modPort changes a port's configuration bit (OFPT_PORT_MOD with the
// port's address, found first as OVS's ovs-ofctl does).
func (o *ofctl) modPort(args []string) error {
	act, ok := modPortActions[args[2]]
	if !ok {
		return fatalf("unknown mod-port command '%s'", args[2])
	}
	ports, err := o.fetchPorts(args[0])
	if err != nil {
		return err
	}
	var port *ofp.Port
	for i := range ports {
		p := &ports[i]
		// By name or number (OpenFlow 1.0's 16-bit for a reserved
		// port), not by a reserved port's name, as OVS's.
		n := uint64(p.No)
		if n >= ofp.PortMax {
			n &= 0xffff
		}
		if p.Name == args[1] || strconv.FormatUint(uint64(p.No), 10) == args[1] || strconv.FormatUint(n, 10) == args[1] {
			port = p
			break
		}
	}
	if port == nil {
		return fatalf("%s: couldn't find port `%s'", args[0], args[1])
	}
	pm := &ofp.PortMod{Port: port.No, HWAddr: port.HWAddr, Mask: act.bit}
	if act.set {
		pm.Config = act.bit
	}
	vc, err := o.open(args[0])
	if err != nil {
		return err
	}
	defer vc.close()
	msg := ofp.EncodePortMod(vc.v, o.nextXid(), pm)
	v := vc.v
	describe := func() string {
		cfg := configNames11
		if v == ofp.V10 {
			cfg = configNames10
		}
		name := func(bit uint32) string { return cfg[bit] }
		return fmt.Sprintf(" port: %s: addr:%s\n     config: %s\n     mask:   %s\n     advertise: UNCHANGED",
			ofp.PortNames(nil).Port(pm.Port), flow.MAC(pm.HWAddr), bitNames(pm.Config, name), bitNames(pm.Mask, name))
	}
	return o.sendWithBarriers(vc, [][]byte{msg}, []string{"OFPT_PORT_MOD"}, []func() string{describe})
}

// parseHex parses packet data as OVS's ofpbuf_put_hex: pairs of hex
// digits, white space between bytes allowed.
func parseHex(s string) ([]byte, error) {
	var b []byte
	s = strings.TrimSpace(s)
	for s != "" {
		if len(s) < 2 {
			return nil, errors.New("Trailing garbage in packet data")
		}
		v, err := strconv.ParseUint(s[:2], 16, 8)
		if err != nil {
			return nil, errors.New("Trailing garbage in packet data")
		}
		b = append(b, byte(v))
		s = strings.TrimLeft(s[2:], " \t\r\n")
	}
	return b, nil
}

// packetOut sends packets through the switch's pipeline with actions:
// "IN_PORT ACTIONS PACKET..." (one packet-out per packet) or
// "in_port=PORT,packet=HEX,actions=ACTIONS".
func (o *ofctl) packetOut(args []string) error {
	if len(args) == 3 {
		return fatalf("Too many arguments (%d)", len(args)+1)
	}
	o.xid += 2 // OVS's learns table names first, on a connection of its own
	ports, err := o.fetchPorts(args[0])
	if err != nil {
		return err
	}
	res := resolver(ports)
	var pos []*ofp.PacketOut
	if len(args) == 2 {
		spec := args[1]
		po := &ofp.PacketOut{InPort: ofp.PortController}
		i := strings.Index(spec, "actions=")
		if i < 0 {
			return fatalf("must specify an action")
		}
		acts, err := parseApplyActions(spec[i+len("actions="):], res)
		if err != nil {
			return fatal{err.Error()}
		}
		po.Actions = acts
		havePacket := false
		for rest := spec[:i]; ; {
			key, value, r, ok := ofptext.SplitKV(rest)
			if !ok {
				break
			}
			rest = r
			switch key {
			case "in_port":
				p, err := ofptext.ParsePort(value, res)
				if err != nil {
					return fatalf("%s for in_port", err)
				}
				po.InPort = p
			case "packet":
				data, err := parseHex(value)
				if err != nil {
					return fatal{err.Error()}
				}
				po.Data, havePacket = data, true
			default:
				return fatalf("unknown keyword %s", key)
			}
		}
		if !havePacket {
			return fatalf("must specify packet")
		}
		pos = append(pos, po)
	} else {
		in, err := ofptext.ParsePort(args[1], res)
		if err != nil {
			return fatalf("%s: invalid or unknown port", args[1])
		}
		acts, err := parseApplyActions(args[2], res)
		if err != nil {
			return fatal{err.Error()}
		}
		for _, hex := range args[3:] {
			data, err := parseHex(hex)
			if err != nil {
				return fatal{err.Error()}
			}
			pos = append(pos, &ofp.PacketOut{InPort: in, Actions: acts, Data: data})
		}
	}
	vc, err := o.open(args[0])
	if err != nil {
		return err
	}
	defer vc.close()
	msgs := make([][]byte, len(pos))
	names := make([]string, len(pos))
	describe := make([]func() string, len(pos))
	for i, po := range pos {
		po := po
		po.Actions = vlanActions(po.Actions, &ofp.Match{}, vc.v)
		msgs[i] = ofp.EncodePacketOut(vc.v, o.nextXid(), po)
		names[i] = "OFPT_PACKET_OUT"
		v := vc.v
		describe[i] = func() string {
			return fmt.Sprintf(" in_port=%s actions=%s data_len=%d", ofp.PortNames(nil).Port(po.InPort),
				ofp.FormatActions(po.Actions, v, nil), len(po.Data))
		}
	}
	return o.sendWithBarriers(vc, msgs, names, describe)
}

var groupTypes = []string{"all", "select", "indirect", "ff"}

// parseGroup parses a group as OVS's parse_ofp_group_mod_str: group_id,
// type, selection_method[_param] and buckets ("bucket=" up to the next).
func parseGroup(spec string, command uint16, ports ofptext.PortResolver) (*ofp.GroupMod, error) {
	gm := &ofp.GroupMod{Command: command, CommandBucketID: ofp.BucketAll}
	parts := strings.Split(spec, "bucket=")
	head := parts[0]
	haveID, haveType := false, false
	for rest := head; ; {
		key, value, r, ok := ofptext.SplitKV(rest)
		if !ok {
			break
		}
		rest = r
		switch key {
		case "group_id":
			if value == "all" {
				gm.ID = ofp.GroupAllGroups
			} else {
				n, err := strconv.ParseUint(value, 0, 32)
				if err != nil {
					return nil, fmt.Errorf("invalid group id \"%s\"", value)
				}
				gm.ID = uint32(n)
			}
			haveID = true
		case "type":
			found := false
			for i, t := range groupTypes {
				if value == t || t == "ff" && value == "fast_failover" {
					gm.Type, found = uint8(i), true
				}
			}
			if !found {
				return nil, fmt.Errorf("invalid group type %s", value)
			}
			haveType = true
		case "selection_method":
			gm.Props.Method = value
		case "fields":
			// OVS's parse_select_group_field: field names, each at
			// most once; a mask after one is not parsed here.
			for fr := value; ; {
				fname, fval, r, ok := ofptext.SplitKV(fr)
				if !ok {
					break
				}
				fr = r
				fd := ofp.FieldByName(fname)
				if fd == nil {
					return nil, fmt.Errorf("%s: unknown field %s", fr, fname)
				}
				if fval != "" {
					return nil, fmt.Errorf("%s: govs' ovs-ofctl does not parse masks of selection method fields", fval)
				}
				for _, hf := range gm.Props.Fields {
					if hf.Field == fd {
						return nil, fmt.Errorf("%s: duplicate field", fname)
					}
				}
				gm.Props.Fields = append(gm.Props.Fields, ofp.HashField{Field: fd})
			}
		case "selection_method_param":
			n, err := strconv.ParseUint(value, 0, 64)
			if err != nil {
				return nil, fmt.Errorf("invalid selection_method_param \"%s\"", value)
			}
			gm.Props.Param = n
		default:
			return nil, fmt.Errorf("unknown keyword %s", key)
		}
	}
	if !haveID {
		return nil, errors.New("must specify a group_id")
	}
	if command == ofp.GroupDelete {
		if len(parts) > 1 || haveType {
			return nil, errors.New("type is not needed")
		}
		return gm, nil
	}
	if !haveType && command == ofp.GroupAdd {
		return nil, errors.New("must specify a type")
	}
	if gm.Type == ofp.GroupIndirect && len(parts) > 2 {
		return nil, errors.New("Indirect groups can have at most one bucket.")
	}
	for i, b := range parts[1:] {
		bk, err := parseBucket(strings.TrimSuffix(strings.TrimSpace(b), ","), gm.Type, ports)
		if err != nil {
			return nil, err
		}
		if bk.ID == ofp.BucketAll {
			bk.ID = uint32(i)
		}
		gm.Buckets = append(gm.Buckets, bk)
	}
	return gm, nil
}

// parseBucket parses one bucket: bucket_id, weight, watch_port and
// watch_group, then its actions ("actions=" or the first other item on).
func parseBucket(s string, typ uint8, ports ofptext.PortResolver) (ofp.Bucket, error) {
	bk := ofp.Bucket{ID: ofp.BucketAll, WatchPort: ofp.PortAny, WatchGroup: ofp.GroupAny}
	if typ == ofp.GroupSelect {
		bk.Weight = 1
	}
	for rest := s; ; {
		before := strings.TrimLeft(rest, ", \t")
		key, value, r, ok := ofptext.SplitKV(rest)
		if !ok {
			break
		}
		var err error
		var n uint64
		switch key {
		case "bucket_id":
			n, err = strconv.ParseUint(value, 0, 32)
			bk.ID = uint32(n)
		case "weight":
			n, err = strconv.ParseUint(value, 0, 16)
			bk.Weight = uint16(n)
		case "watch_port":
			var p uint32
			if p, err = ofptext.ParsePort(value, ports); err == nil {
				bk.WatchPort = p
			}
		case "watch_group":
			n, err = strconv.ParseUint(value, 0, 32)
			bk.WatchGroup = uint32(n)
		case "action", "actions":
			before = strings.TrimPrefix(strings.TrimPrefix(before, key), "=")
			fallthrough
		default:
			acts, err := parseApplyActions(before, ports)
			if err != nil {
				return bk, err
			}
			bk.Actions = acts
			return bk, nil
		}
		if err != nil {
			return bk, fmt.Errorf("invalid %s \"%s\"", key, value)
		}
		rest = r
	}
	return bk, nil
}

// formatGroup formats a group as ofp_print_group.
func formatGroup(g *ofp.GroupDesc, v ofp.Version, pn ofp.PortNames) string {
	return formatGroupAs(g, v, v, pn)
}

// formatGroupAs is formatGroup with the bucket actions formatted as
// version actV's (an NXT_GROUP_MOD: 1.5's group, 1.0's actions).
func formatGroupAs(g *ofp.GroupDesc, v, actV ofp.Version, pn ofp.PortNames) string {
	var b strings.Builder
	fmt.Fprintf(&b, "group_id=%d,type=", g.ID)
	if int(g.Type) < len(groupTypes) {
		b.WriteString(groupTypes[g.Type])
	} else {
		fmt.Fprintf(&b, "%d", g.Type)
	}
	if g.Props.Method != "" {
		b.WriteString(",selection_method=" + g.Props.Method)
		if g.Props.Param != 0 {
			fmt.Fprintf(&b, ",selection_method_param=%d", g.Props.Param)
		}
		var names []string
		for _, f := range g.Props.Fields {
			names = append(names, f.Field.Name)
		}
		switch len(names) {
		case 0:
		case 1:
			b.WriteString(",fields=" + names[0])
		default:
			b.WriteString(",fields(" + strings.Join(names, ",") + ")")
		}
	}
	for _, bk := range g.Buckets {
		b.WriteString(",bucket=")
		if v >= ofp.V15 {
			fmt.Fprintf(&b, "bucket_id:%d,", bk.ID)
		}
		def := uint16(0)
		if g.Type == ofp.GroupSelect {
			def = 1
		}
		if bk.Weight != def {
			fmt.Fprintf(&b, "weight:%d,", bk.Weight)
		}
		if bk.WatchPort != ofp.PortAny {
			fmt.Fprintf(&b, "watch_port:%s,", pn.Port(bk.WatchPort))
		}
		if bk.WatchGroup != ofp.GroupAny {
			fmt.Fprintf(&b, "watch_group:%d,", bk.WatchGroup)
		}
		b.WriteString("actions=" + ofp.FormatActions(bk.Actions, actV, pn))
	}
	return b.String()
}

// groupMods sends group mods (OpenFlow 1.1+), each followed by a barrier.
func (o *ofctl) groupMods(target string, specs []string, command uint16) error {
	o.xid += 2 // OVS's learns table names first, on a connection of its own
	ports, err := o.fetchPorts(target)
	if err != nil {
		return err
	}
	var gms []*ofp.GroupMod
	for _, s := range specs {
		gm, err := parseGroup(s, command, resolver(ports))
		if err != nil {
			return fatal{err.Error()}
		}
		gms = append(gms, gm)
	}
	vc, err := o.open(target)
	if err != nil {
		return err
	}
	defer vc.close()
	if vc.v == ofp.V10 {
		return fatalf("govs' ovs-ofctl sends groups in OpenFlow 1.1 and later only (-O OpenFlow11..15)")
	}
	msgs := make([][]byte, len(gms))
	names := make([]string, len(gms))
	describe := make([]func() string, len(gms))
	for i, gm := range gms {
		gm := gm
		for j := range gm.Buckets {
			gm.Buckets[j].Actions = vlanActions(gm.Buckets[j].Actions, &ofp.Match{}, vc.v)
		}
		msgs[i] = ofp.EncodeGroupMod(vc.v, o.nextXid(), gm)
		names[i] = "OFPT_GROUP_MOD"
		v := vc.v
		describe[i] = func() string {
			cmd := map[uint16]string{ofp.GroupAdd: "ADD", ofp.GroupModify: "MOD", ofp.GroupDelete: "DEL"}[gm.Command]
			g := &ofp.GroupDesc{Type: gm.Type, ID: gm.ID, Buckets: gm.Buckets, Props: gm.Props}
			return "\n " + cmd + " " + formatGroup(g, v, nil)
		}
	}
	return o.sendWithBarriers(vc, msgs, names, describe)
}

// dumpGroups prints the groups' descriptions (one group's in OpenFlow
// 1.5 when GROUP is given).
func (o *ofctl) dumpGroups(args []string) error {
	group := uint32(ofp.GroupAllGroups)
	if len(args) == 2 {
		n, err := strconv.ParseUint(strings.TrimPrefix(args[1], "group_id="), 0, 32)
		if err != nil {
			return fatalf("invalid group id \"%s\"", args[1])
		}
		group = uint32(n)
	}
	vc, err := o.open(args[0])
	if err != nil {
		return err
	}
	defer vc.close()
	if vc.v == ofp.V10 {
		return fatalf("govs' ovs-ofctl dumps groups in OpenFlow 1.1 and later only (-O OpenFlow11..15)")
	}
	replies, err := vc.transact(ofp.EncodeGroupDescRequest(vc.v, o.nextXid(), group))
	if err != nil {
		return transactErr(vc, err)
	}
	return o.printStatsReplies(replies, "OFPST_GROUP_DESC reply", func(r *ofp.Reply) (string, error) {
		groups, err := ofp.DecodeGroupDesc(r)
		if err != nil {
			return "", err
		}
		var b strings.Builder
		b.WriteString("\n")
		for i := range groups {
			b.WriteString(" " + formatGroup(&groups[i], r.Version, nil) + "\n")
		}
		return b.String(), nil
	})
}

// meterFlagNames are the meter flags as ofp_print_meter_flags shows them.
var meterFlagNames = []struct {
	bit  uint16
	name string
}{{ofp.MeterKbps, "kbps"}, {ofp.MeterPktps, "pktps"}, {ofp.MeterBurst, "burst"}, {ofp.MeterStatsFlag, "stats"}}

// parseMeter parses a meter as OVS's parse_ofp_meter_mod_str: meter=ID
// (or all), the flags, then bands ("type=" starts each).
func parseMeter(spec string, command uint16) (*ofp.MeterMod, error) {
	mm := &ofp.MeterMod{Command: command}
	head, bands, hasBands := spec, "", false
	for _, kw := range []string{"bands=", "band="} {
		if i := strings.Index(spec, kw); i >= 0 {
			head, bands, hasBands = spec[:i], spec[i+len(kw):], true
			break
		}
	}
	haveID := false
	for rest := head; ; {
		key, value, r, ok := ofptext.SplitKV(rest)
		if !ok {
			break
		}
		rest = r
		found := false
		for _, f := range meterFlagNames {
			if key == f.name {
				mm.Flags |= f.bit
				found = true
			}
		}
		switch {
		case found:
		case key == "meter":
			if value == "all" {
				mm.ID = ofp.MeterAll
			} else {
				n, err := strconv.ParseUint(value, 0, 32)
				if err != nil {
					return nil, fmt.Errorf("invalid numeric format %s", value)
				}
				mm.ID = uint32(n)
			}
			haveID = true
		case value == "":
			return nil, fmt.Errorf("field %s missing value", key)
		default:
			return nil, fmt.Errorf("unknown keyword %s", key)
		}
	}
	if !haveID {
		return nil, errors.New("must specify 'meter'")
	}
	if command == ofp.MeterDelete {
		return mm, nil
	}
	if !hasBands {
		return nil, errors.New("must specify bands")
	}
	var band *ofp.MeterBand
	for rest := bands; ; {
		key, value, r, ok := ofptext.SplitKV(rest)
		if !ok {
			break
		}
		rest = r
		if key == "type" {
			mm.Bands = append(mm.Bands, ofp.MeterBand{})
			band = &mm.Bands[len(mm.Bands)-1]
			switch value {
			case "drop":
				band.Type = ofp.BandDrop
			case "dscp_remark":
				band.Type = ofp.BandDSCPRemark
			default:
				return nil, fmt.Errorf("field %s unknown value %s", key, value)
			}
			continue
		}
		if band == nil {
			return nil, errors.New("band must start with the 'type' keyword")
		}
		n, err := strconv.ParseUint(value, 0, 32)
		if err != nil {
			return nil, fmt.Errorf("invalid numeric format %s", value)
		}
		switch key {
		case "rate":
			band.Rate = uint32(n)
		case "burst_size":
			band.Burst = uint32(n)
		case "prec_level":
			band.PrecLevel = uint8(n)
		default:
			return nil, fmt.Errorf("unknown keyword %s", key)
		}
	}
	return mm, nil
}

// formatMeter formats a meter's configuration as
// ofputil_format_meter_config (without the final newline).
func formatMeter(id uint32, flags uint16, bands []ofp.MeterBand) string {
	var b strings.Builder
	if id == ofp.MeterAll {
		b.WriteString("meter=all")
	} else {
		fmt.Fprintf(&b, "meter=%d", id)
	}
	for _, f := range meterFlagNames {
		if flags&f.bit != 0 {
			b.WriteString(" " + f.name)
		}
	}
	b.WriteString(" bands=")
	for _, mb := range bands {
		b.WriteString("\ntype=")
		switch mb.Type {
		case ofp.BandDrop:
			b.WriteString("drop")
		case ofp.BandDSCPRemark:
			b.WriteString("dscp_remark")
		default:
			fmt.Fprintf(&b, "%d", mb.Type)
		}
		fmt.Fprintf(&b, " rate=%d", mb.Rate)
		if flags&ofp.MeterBurst != 0 {
			fmt.Fprintf(&b, " burst_size=%d", mb.Burst)
		}
		if mb.Type == ofp.BandDSCPRemark {
			fmt.Fprintf(&b, " prec_level=%d", mb.PrecLevel)
		}
	}
	return b.String()
}

// meterVersion refuses a connection that cannot carry meters (before
// OpenFlow 1.3), with OVS's text.
func (o *ofctl) checkMeterVersions() error {
	if o.allowed.Highest() >= ofp.V13 {
		return nil
	}
	var formats []string
	for v := ofp.V10; v <= ofp.V12; v++ {
		if o.allowed.Has(v) {
			formats = append(formats, map[ofp.Version]string{ofp.V10: "OpenFlow10,NXM", ofp.V11: "OpenFlow11", ofp.V12: "OXM-OpenFlow12"}[v])
		}
	}
	return fatalf("none of the usable flow formats (OXM-OpenFlow13,OXM-OpenFlow14,OXM-OpenFlow15) is among the allowed flow formats (%s)",
		strings.Join(formats, ","))
}

// meterMod sends one meter mod, followed by a barrier.
func (o *ofctl) meterMod(target, spec string, command uint16) error {
	mm, err := parseMeter(spec, command)
	if err != nil {
		return fatal{err.Error()}
	}
	if err := o.checkMeterVersions(); err != nil {
		return err
	}
	vc, err := o.open(target)
	if err != nil {
		return err
	}
	defer vc.close()
	msg := ofp.EncodeMeterMod(vc.v, o.nextXid(), mm)
	describe := func() string {
		cmd := map[uint16]string{ofp.MeterAdd: "ADD", ofp.MeterModify: "MOD", ofp.MeterDelete: "DEL"}[mm.Command]
		return " " + cmd + " " + formatMeter(mm.ID, mm.Flags, mm.Bands)
	}
	return o.sendWithBarriers(vc, [][]byte{msg}, []string{"OFPT_METER_MOD"}, []func() string{describe})
}

// dumpMeters prints the meters' configuration (METER_CONFIG).
func (o *ofctl) dumpMeters(args []string) error {
	meter := uint32(ofp.MeterAll)
	if len(args) == 2 {
		mm, err := parseMeter(args[1], ofp.MeterDelete)
		if err != nil {
			return fatal{err.Error()}
		}
		meter = mm.ID
	}
	if err := o.checkMeterVersions(); err != nil {
		return err
	}
	vc, err := o.open(args[0])
	if err != nil {
		return err
	}
	defer vc.close()
	replies, err := vc.transact(ofp.EncodeMeterConfigRequest(vc.v, o.nextXid(), meter))
	if err != nil {
		return transactErr(vc, err)
	}
	return o.printStatsReplies(replies, "OFPST_METER_CONFIG reply", func(r *ofp.Reply) (string, error) {
		ms, err := ofp.DecodeMeterConfig(r)
		if err != nil {
			return "", err
		}
		if len(ms) == 0 {
			return "\n", nil
		}
		var b strings.Builder
		for _, m := range ms {
			b.WriteString("\n" + formatMeter(m.ID, m.Flags, m.Bands) + "\n")
		}
		return b.String(), nil
	})
}
