package datapath

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/govs/govs/datapath/flow"
)

// Name is the datapath's name in OVS's dpif terms: dpctl commands take it
// and dpif/show prints it.
const Name = "netdev@ovs-netdev"

// DummyName is the name OVS's dummy datapath goes by (--enable-dummy).
const DummyName = "dummy@ovs-dummy"

// dummyNamed is set while the datapath goes by DummyName.
var dummyNamed atomic.Bool

// SetDummyName makes the datapath go by DummyName (on) or Name, for a
// daemon whose every bridge is on OVS's dummy datapath.
func SetDummyName(on bool) { dummyNamed.Store(on) }

// CurrentName is the name the datapath goes by: Name or DummyName.
func CurrentName() string {
	if dummyNamed.Load() {
		return DummyName
	}
	return Name
}

// FlowInfo is one installed flow as a dump shows it.
type FlowInfo struct {
	UFID [16]byte
	// Key is the key of the packet that created the flow; Mask says
	// which of its bits the flow matches.
	Key  flow.Key
	Mask flow.Mask
	// Actions are the flow's actions, as translated.
	Actions Actions
	// Packets and Bytes count the packets the flow forwarded (not the
	// one whose miss installed it, as in OVS), TCPFlags ORs their TCP
	// flags, and Used is the datapath clock of the last, if Ever.
	Packets, Bytes uint64
	TCPFlags       uint16
	Used           time.Duration
	Ever           bool
	// Worker is the datapath port whose rx goroutine owns the flow (its
	// input port).
	Worker uint32
}

// Flows returns the installed flows, by worker, in no particular order
// within one.
func (dp *Datapath) Flows() []FlowInfo {
	var out []FlowInfo
	for _, p := range dp.sortedPorts() {
		for _, w := range p.ws {
			w.flowMu.Lock()
			for r := range w.cls.All {
				f := r.Value
				used, ever := f.usedAt()
				out = append(out, FlowInfo{
					UFID: f.ufid, Key: f.key, Mask: *f.mask, Actions: f.acts.Load().actions,
					Packets: f.packets.Load(), Bytes: f.bytes.Load(), TCPFlags: uint16(f.tcpFlags.Load()),
					Used: time.Duration(used), Ever: ever, Worker: p.no,
				})
			}
			w.flowMu.Unlock()
		}
	}
	return out
}

func (dp *Datapath) sortedPorts() []*dpPort {
	t := dp.ports.Load()
	ps := make([]*dpPort, 0, len(t.byNo))
	for _, p := range t.byNo {
		ps = append(ps, p)
	}
	slices.SortFunc(ps, func(a, b *dpPort) int { return cmp.Compare(a.no, b.no) })
	return ps
}

// PortName returns the name of datapath port no, or its number if there
// is no such port.
func (dp *Datapath) PortName(no uint32) string {
	if p := dp.ports.Load().byNo[no]; p != nil {
		return p.name
	}
	return strconv.FormatUint(uint64(no), 10)
}

// FlowFormat says how FormatFlow prints.
type FlowFormat struct {
	// Verbose is dump-flows -m: the UFID and every field, masked ones as
	// value/mask.
	Verbose bool
	// Names prints port names instead of numbers (-m implies it in
	// dpctl unless --no-names).
	Names bool
	// DPIF is the dpif/dump-flows style: the UFID without a comma after
	// it, and no dp: or dp-extra-info: fields.
	DPIF bool
}

// option takes dpctl's flow-format option a (-m, --more, --names,
// --no-names; names is 1, 0 or -1 for neither) and reports whether it was
// one.
func (ff *FlowFormat) option(a string, names *int) bool {
	switch a {
	case "-m", "--more":
		ff.Verbose = true
	case "--names":
		*names = 1
	case "--no-names":
		*names = 0
	default:
		return false
	}
	return true
}

// setNames sets Names as dpctl does: --names or --no-names if given, else
// with -m.
func (ff *FlowFormat) setNames(names int) { ff.Names = names == 1 || names == -1 && ff.Verbose }

// FormatFlow formats one flow as one line of `ovs-appctl dpctl/dump-flows`
// (lib/dpctl.c format_dpif_flow), without the newline; now is the
// datapath clock for "used:".
func (dp *Datapath) FormatFlow(fi *FlowInfo, ff FlowFormat, now time.Duration) string {
	var b strings.Builder
	var names func(uint32) string
	if ff.Names {
		names = dp.PortName
	}
	if ff.Verbose {
		b.WriteString("ufid:")
		b.WriteString(FormatUFID(fi.UFID))
		if ff.DPIF {
			b.WriteByte(' ')
		} else {
			b.WriteString(", ")
		}
	}
	b.WriteString(flow.FormatODP(&fi.Key, &fi.Mask, flow.ODPFormat{Verbose: ff.Verbose, PortName: names}))
	fmt.Fprintf(&b, ", packets:%d, bytes:%d, used:", fi.Packets, fi.Bytes)
	if fi.Ever {
		b.WriteString(strconv.FormatFloat(max(now-fi.Used, 0).Seconds(), 'f', 3, 64))
		b.WriteByte('s')
	} else {
		b.WriteString("never")
	}
	if fi.TCPFlags != 0 {
		b.WriteString(", flags:")
		b.WriteString(flow.FormatTCPFlags(fi.TCPFlags))
	}
	if ff.Verbose && !ff.DPIF {
		b.WriteString(", dp:ovs")
	}
	b.WriteString(", actions:")
	b.WriteString(fi.Actions.Format(names))
	if ff.Verbose && !ff.DPIF {
		// OVS shows its miniflow's units here; govs shows the non-zero
		// 64-bit words of its mask, L2 and metadata (words 0-3), then L3
		// and L4.
		var l2, l3 int
		for i := 0; i < flow.KeyWords; i++ {
			if fi.Mask.Word(i) != 0 {
				if i < 4 {
					l2++
				} else {
					l3++
				}
			}
		}
		fmt.Fprintf(&b, ", dp-extra-info:miniflow_bits(%d,%d)", l2, l3)
	}
	return b.String()
}

// FormatUFID formats a UFID as OVS does (UUID style).
func FormatUFID(u [16]byte) string {
	const hex = "0123456789abcdef"
	var b [36]byte
	j := 0
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b[j] = '-'
			j++
		}
		b[j], b[j+1] = hex[c>>4], hex[c&0xf]
		j += 2
	}
	return string(b[:])
}

// checkDPName reports the error dpctl gives for a datapath name that is
// not this one.
func checkDPName(name string) error {
	if name != CurrentName() {
		return errors.New("ovs-vswitchd: datapath not found (Invalid argument)")
	}
	return nil
}

// DumpFlowsCommand is `ovs-appctl dpctl/dump-flows [-m] [--names |
// --no-names] [dp] [type=..] [pmd=..]`: the installed flows, one line
// each, under a "flow-dump from pmd on cpu core: N" line per worker (govs
// has an rx goroutine per port, shown as the pmd thread whose core id is
// the port number; see PMDStatsShowCommand). filter= is not supported.
func (dp *Datapath) DumpFlowsCommand(args []string) (string, error) {
	ff := FlowFormat{}
	names, pmd := -1, int64(-1)
	for _, a := range args {
		switch {
		case ff.option(a, &names):
		case strings.HasPrefix(a, "type="):
			for _, t := range strings.Split(a[5:], ",") {
				switch t {
				case "ovs", "all", "non-offloaded":
				case "netdev", "dpdk", "tc", "offloaded", "partially-offloaded":
					return "", nil // no flow is offloaded
				default:
					return "", fmt.Errorf("ovs-vswitchd: Failed to parse type (%s) (Invalid argument)", t)
				}
			}
		case strings.HasPrefix(a, "pmd="):
			n, err := strconv.ParseInt(a[4:], 10, 64)
			if err != nil {
				return "", fmt.Errorf("invalid pmd value: %s", a[4:])
			}
			pmd = n
		case strings.HasPrefix(a, "filter="):
			return "", errors.New("dpctl/dump-flows: filter= is not supported")
		case strings.HasPrefix(a, "-"):
			return "", fmt.Errorf("Unrecognized option %s", a)
		default:
			if err := checkDPName(a); err != nil {
				return "", err
			}
		}
	}
	ff.setNames(names)
	now := dp.Now()
	var b strings.Builder
	last := int64(-1)
	for _, fi := range dp.Flows() {
		if pmd >= 0 && int64(fi.Worker) != pmd {
			continue
		}
		if int64(fi.Worker) != last {
			fmt.Fprintf(&b, "flow-dump from pmd on cpu core: %d\n", fi.Worker)
			last = int64(fi.Worker)
		}
		b.WriteString(dp.FormatFlow(&fi, ff, now))
		b.WriteByte('\n')
	}
	return b.String(), nil
}

// GetFlowCommand is `ovs-appctl dpctl/get-flow [-m] [--names |
// --no-names] [dp] ufid:UFID`: the installed flow of that UFID, one line
// as dump-flows shows it (from the first worker that has it, as OVS gives
// the first pmd's). As OVS's dpctl_get_flow, an argument that is no UFID
// is reported in a reply that is not an error.
func (dp *Datapath) GetFlowCommand(args []string) (string, error) {
	o, pos, err := dpctlOpts(args)
	if err != nil {
		return "", err
	}
	ff := FlowFormat{Verbose: o.verbose}
	ff.setNames(o.names)
	key := "dpctl/get-flow" // OVS then parses its command name
	switch len(pos) {
	case 1:
		key = pos[0]
	case 2:
		if err := checkDPName(pos[0]); err != nil {
			return "", err
		}
		key = pos[1]
	}
	id, ok, prefixed := ParseUFID(key)
	switch {
	case !prefixed:
		return "ovs-vswitchd: parsing flow ufid\n", nil
	case !ok:
		return "ovs-vswitchd: parsing flow ufid (Invalid argument)\n", nil
	}
	for _, fi := range dp.Flows() {
		if fi.UFID == id {
			return dp.FormatFlow(&fi, ff, dp.Now()) + "\n", nil
		}
	}
	return "", errors.New("ovs-vswitchd: getting flow (No such file or directory)")
}

// ParseUFID parses a "ufid:" and the UUID FormatUFID writes (OVS's
// odp_ufid_from_string: what follows the UUID is not looked at). prefixed
// says s starts with "ufid:", ok that a UUID follows.
func ParseUFID(s string) (u [16]byte, ok, prefixed bool) {
	rest, prefixed := strings.CutPrefix(s, "ufid:")
	if !prefixed || len(rest) < 36 {
		return u, false, prefixed
	}
	j := 0
	for i := 0; i < 36; {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if rest[i] != '-' {
				return [16]byte{}, false, true
			}
			i++
			continue
		}
		hi, ok1 := unhex(rest[i])
		lo, ok2 := unhex(rest[i+1])
		if !ok1 || !ok2 {
			return [16]byte{}, false, true
		}
		u[j] = hi<<4 | lo
		i, j = i+2, j+1
	}
	return u, true, true
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// DelFlowsCommand is `ovs-appctl dpctl/del-flows [dp]`: it removes every
// installed flow. Like OVS, an argument that is not a datapath name is
// taken for a file of flows to delete, which govs does not support.
func (dp *Datapath) DelFlowsCommand(args []string) (string, error) {
	for _, a := range args {
		if strings.Contains(a, "@") {
			if err := checkDPName(a); err != nil {
				return "", err
			}
			continue
		}
		if _, err := os.Stat(a); err != nil {
			return fmt.Sprintf("ovs-vswitchd: Opening file \"%s\" failed (No such file or directory)\n", a), nil
		}
		return "", errors.New("dpctl/del-flows: deleting flows listed in a file is not supported")
	}
	dp.FlushFlows()
	return "", nil
}

// WorkerStats are one rx goroutine's lookup counters, since the last
// ClearWorkerStats.
type WorkerStats struct {
	// Port is the datapath port the goroutine receives from.
	Port uint32
	// Received counts the packets received; EMCHits, MegaflowHits,
	// Missed (translated by the upcaller) and Lost (no upcaller) how they
	// were looked up; SubtableLookups the classifier subtables probed for
	// the megaflow hits.
	Received, EMCHits, MegaflowHits, SubtableLookups, Missed, Lost uint64
	// Recirculations counts the packets sent back through the lookup.
	Recirculations uint64
	// SentPackets and SentBatches count Writes to output ports.
	SentPackets, SentBatches uint64
	// Idle is the time spent waiting in Read, Busy the time forwarding.
	Idle, Busy time.Duration
}

// WorkerStats returns every attached port's rx goroutine's counters.
func (dp *Datapath) WorkerStats() []WorkerStats {
	ports := dp.sortedPorts()
	out := make([]WorkerStats, 0, len(ports))
	dp.mu.Lock()
	defer dp.mu.Unlock()
	for _, p := range ports {
		var c counters
		for _, w := range p.ws {
			wc := w.stats.load()
			wc.sub(&w.base)
			c.add(&wc)
		}
		out = append(out, WorkerStats{
			Port: p.no, Received: c.rx, EMCHits: c.emcHits, MegaflowHits: c.megaHits,
			SubtableLookups: c.lookups, Missed: c.missed, Lost: c.lost, Recirculations: c.recirc,
			SentPackets: c.sentPkts, SentBatches: c.sentBatches,
			Idle: time.Duration(c.idle), Busy: time.Duration(c.busy),
		})
	}
	return out
}

// ClearWorkerStats zeroes what WorkerStats returns (pmd-stats-clear); the
// datapath's Stats are not affected.
func (dp *Datapath) ClearWorkerStats() {
	ports := dp.sortedPorts()
	dp.mu.Lock()
	defer dp.mu.Unlock()
	for _, p := range ports {
		for _, w := range p.ws {
			w.base = w.stats.load()
		}
	}
}

// pmdArgs parses pmd-stats-show's and pmd-stats-clear's [-pmd core] [dp].
// As OVS 3.1 with its one userspace datapath, it ignores the datapath
// name and takes a core it cannot parse for all.
func pmdArgs(args []string) (core int64, err error) {
	core = -1
	for i := 0; i < len(args); i++ {
		if args[i] == "-pmd" && i+1 < len(args) {
			if n, err := strconv.ParseUint(args[i+1], 10, 32); err == nil {
				core = int64(n)
			}
			i++
		}
	}
	return core, nil
}

// PMDStatsShowCommand is `ovs-appctl dpif-netdev/pmd-stats-show [-pmd
// core] [dp]`, in OVS 3.1's format. govs polls each port in its own
// goroutine, as OVS's pmd threads poll their rx queues, so it prints one
// "pmd thread numa_id 0 core_id N" block per port, N being the datapath
// port number. Its "cycles" are nanoseconds: idle is the time spent
// waiting for packets, processing the time spent forwarding them.
func (dp *Datapath) PMDStatsShowCommand(args []string) (string, error) {
	core, err := pmdArgs(args)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, s := range dp.WorkerStats() {
		if core >= 0 && int64(s.Port) != core {
			continue
		}
		ratio := func(a, b uint64) float64 {
			if b == 0 {
				return 0
			}
			return float64(a) / float64(b)
		}
		// OVS's (received + recirculations) / received.
		passes := ratio(s.Received+s.Recirculations, s.Received)
		fmt.Fprintf(&b, "pmd thread numa_id 0 core_id %d:\n"+
			"  packets received: %d\n"+
			"  packet recirculations: %d\n"+
			"  avg. datapath passes per packet: %.02f\n"+
			"  phwol hits: 0\n"+
			"  mfex opt hits: 0\n"+
			"  simple match hits: 0\n"+
			"  emc hits: %d\n"+
			"  smc hits: 0\n"+
			"  megaflow hits: %d\n"+
			"  avg. subtable lookups per megaflow hit: %.02f\n"+
			"  miss with success upcall: %d\n"+
			"  miss with failed upcall: %d\n"+
			"  avg. packets per output batch: %.02f\n",
			s.Port, s.Received, s.Recirculations, passes, s.EMCHits, s.MegaflowHits,
			ratio(s.SubtableLookups, s.MegaflowHits), s.Missed, s.Lost,
			ratio(s.SentPackets, s.SentBatches))
		idle, busy := uint64(s.Idle), uint64(s.Busy)
		total := idle + busy
		if total == 0 {
			continue
		}
		fmt.Fprintf(&b, "  idle cycles: %d (%.02f%%)\n  processing cycles: %d (%.02f%%)\n",
			idle, float64(idle)/float64(total)*100, busy, float64(busy)/float64(total)*100)
		if s.Received == 0 {
			continue
		}
		fmt.Fprintf(&b, "  avg cycles per packet: %.02f (%d/%d)\n  avg processing cycles per packet: %.02f (%d/%d)\n",
			float64(total)/float64(s.Received), total, s.Received,
			float64(busy)/float64(s.Received), busy, s.Received)
	}
	return b.String(), nil
}

// PMDStatsClearCommand is `ovs-appctl dpif-netdev/pmd-stats-clear [-pmd
// core] [dp]`.
func (dp *Datapath) PMDStatsClearCommand(args []string) (string, error) {
	if _, err := pmdArgs(args); err != nil {
		return "", err
	}
	dp.ClearWorkerStats()
	return "", nil
}

// UpcallStats are the flow table figures upcall/show prints.
type UpcallStats struct {
	// Flows is the number installed now; AvgFlows and MaxFlows are
	// over the revalidator's passes, as OVS averages them.
	Flows, AvgFlows, MaxFlows, Limit int
	// DumpDuration is how long the last revalidation pass took.
	DumpDuration time.Duration
}

// UpcallStats returns the flow table figures.
func (dp *Datapath) UpcallStats() UpcallStats {
	return UpcallStats{
		Flows: int(max(dp.nflows.Load(), 0)), AvgFlows: int(dp.avgFlows.Load()), MaxFlows: int(dp.maxFlows.Load()),
		Limit: int(dp.flowLimit.Load()), DumpDuration: time.Duration(dp.dumpDuration.Load()) * time.Millisecond,
	}
}

// UpcallShowCommand is `ovs-appctl upcall/show`, in OVS 3.1's format for
// its netdev datapath: the flow counts, then one line per revalidator
// (govs has one, numbered 1) with the flows it tracks.
func (dp *Datapath) UpcallShowCommand([]string) (string, error) {
	s := dp.UpcallStats()
	return fmt.Sprintf("%s:\n"+
		"  flows         : (current %d) (avg %d) (max %d) (limit %d)\n"+
		"  dump duration : %dms\n"+
		"  ufid enabled : true\n"+
		"\n"+
		"  1: (keys %d)\n",
		CurrentName(), s.Flows, s.AvgFlows, s.MaxFlows, s.Limit, s.DumpDuration.Milliseconds(), s.Flows), nil
}

// SetFlowLimitCommand is `ovs-appctl upcall/set-flow-limit N`.
func (dp *Datapath) SetFlowLimitCommand(args []string) (string, error) {
	if len(args) != 1 {
		return "", errors.New("upcall/set-flow-limit takes one argument")
	}
	n, err := strconv.ParseUint(args[0], 10, 32)
	if err != nil || n == 0 {
		return "", fmt.Errorf("invalid flow limit %q", args[0])
	}
	dp.SetFlowLimit(int(n))
	return fmt.Sprintf("set flow_limit to %d\n", n), nil
}

// RevalidatorWaitCommand is `ovs-appctl revalidator/wait`: it returns
// once a revalidation pass begun after it was called has finished.
func (dp *Datapath) RevalidatorWaitCommand([]string) (string, error) {
	dp.Revalidate()
	return "", nil
}

// RevalidatorPurgeCommand is `ovs-appctl revalidator/purge`: it removes
// every installed flow.
func (dp *Datapath) RevalidatorPurgeCommand([]string) (string, error) {
	dp.FlushFlows()
	return "", nil
}

// DisableMegaflowsCommand is `ovs-appctl upcall/disable-megaflows`.
func (dp *Datapath) DisableMegaflowsCommand([]string) (string, error) {
	dp.SetMegaflows(false)
	return "megaflows disabled\n", nil
}

// EnableMegaflowsCommand is `ovs-appctl upcall/enable-megaflows`.
func (dp *Datapath) EnableMegaflowsCommand([]string) (string, error) {
	dp.SetMegaflows(true)
	return "megaflows enabled\n", nil
}
