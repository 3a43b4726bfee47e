package datapath

import (
	"errors"
	"fmt"
	"strings"

	"github.com/govs/govs/datapath/conntrack"
)

// The dpctl/ipf-* commands: the fragment reassembler's settings and
// counters, with OVS 3.1's outputs, error texts and argument parsing
// (lib/dpctl.c). OVS's setters report a value out of bounds with errno 1.

const eperm = "Operation not permitted"

// IPFCommands lists the reassembler's commands for the daemon to register.
func (dp *Datapath) IPFCommands() []Command {
	return []Command{
		{"dpctl/ipf-set-enabled", "[dp] v4|v6", 1, 2, dp.ipfSetEnabled(true)},
		{"dpctl/ipf-set-disabled", "[dp] v4|v6", 1, 2, dp.ipfSetEnabled(false)},
		{"dpctl/ipf-set-min-frag", "[dp] v4|v6 minfragment", 2, 3, dp.IPFSetMinFragCommand},
		{"dpctl/ipf-set-max-nfrags", "[dp] maxfrags", 1, 2, dp.IPFSetMaxNFragsCommand},
		{"dpctl/ipf-get-status", "[dp]", 0, 1, dp.IPFGetStatusCommand},
	}
}

// optDP is OVS's opt_dpif_open for the one datapath: the first argument
// names it if it is the datapath's name; otherwise the datapath is the
// one there is, unless the arguments (counting the command, as argc does)
// are maxArgs.
func optDP(args []string, maxArgs int) error {
	if len(args) > 0 && args[0] == CurrentName() {
		return nil
	}
	if len(args)+1 == maxArgs {
		return errors.New("ovs-vswitchd: datapath not found (Invalid argument)")
	}
	return nil
}

// ipfArgs strips dpctl's options from args and checks the optional
// datapath name (optDP, maxArgs counting the command), returning -m and
// the arguments left.
func ipfArgs(args []string, maxArgs int) (verbose bool, rest []string, err error) {
	verbose, _, rest, err = dpctlOptions(args)
	if err == nil {
		err = optDP(rest, maxArgs)
	}
	return verbose, rest, err
}

// ipfFamily parses "v4" or "v6" as OVS's ovs_scan "%2s" and strncmp do:
// leading spaces skipped, anything after the two letters ignored.
func ipfFamilyArg(a string) (v6, ok bool) {
	a = strings.TrimLeft(a, " \t\n\v\f\r")
	switch {
	case strings.HasPrefix(a, "v4"):
		return false, true
	case strings.HasPrefix(a, "v6"):
		return true, true
	}
	return false, false
}

// scanU32 parses a number as OVS's ovs_scan "%u" does: leading spaces,
// an optional sign (a minus negates, modulo 2^32), decimal digits
// (wrapping), the rest ignored.
func scanU32(s string) (uint32, bool) {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	neg := strings.HasPrefix(s, "-")
	if neg || strings.HasPrefix(s, "+") {
		s = s[1:]
	}
	var v uint32
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		v = v*10 + uint32(s[n]-'0')
		n++
	}
	if n == 0 {
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}

// ipfSetEnabled is `dpctl/ipf-set-enabled|ipf-set-disabled [dp] v4|v6`.
func (dp *Datapath) ipfSetEnabled(on bool) func([]string) (string, error) {
	return func(args []string) (string, error) {
		_, args, err := ipfArgs(args, 4)
		if err != nil {
			return "", err
		}
		v6, ok := false, false
		if len(args) > 0 {
			v6, ok = ipfFamilyArg(args[len(args)-1])
		}
		if !ok {
			return "", dpErr("parameter missing: 'v4' for IPv4 or 'v6' for IPv6", einval)
		}
		dp.ct.SetIPFEnabled(v6, on)
		if on {
			return "enabling fragmentation reassembly successful", nil
		}
		return "disabling fragmentation reassembly successful", nil
	}
}

// IPFSetMinFragCommand is `dpctl/ipf-set-min-frag [dp] v4|v6 minfragment`.
func (dp *Datapath) IPFSetMinFragCommand(args []string) (string, error) {
	_, args, err := ipfArgs(args, 4)
	if err != nil {
		return "", err
	}
	v6, ok := false, false
	if len(args) >= 2 {
		v6, ok = ipfFamilyArg(args[len(args)-2])
	}
	if !ok {
		return "", dpErr("parameter missing: v4 for IPv4 or v6 for IPv6", einval)
	}
	size, ok := scanU32(args[len(args)-1])
	if !ok {
		return "", dpErr("parameter missing for minimum fragment size", einval)
	}
	if dp.ct.SetIPFMinFrag(v6, size) != nil {
		return "", dpErr("requested minimum fragment size too small; see documentation", eperm)
	}
	return "setting minimum fragment size successful", nil
}

// IPFSetMaxNFragsCommand is `dpctl/ipf-set-max-nfrags [dp] maxfrags`.
func (dp *Datapath) IPFSetMaxNFragsCommand(args []string) (string, error) {
	_, args, err := ipfArgs(args, 3)
	if err != nil {
		return "", err
	}
	n, ok := uint32(0), false
	if len(args) > 0 {
		n, ok = scanU32(args[len(args)-1])
	}
	if !ok {
		return "", dpErr("parameter missing for maximum fragments", einval)
	}
	if dp.ct.SetIPFMaxFrags(n) != nil {
		return "", dpErr("setting maximum fragments failed", eperm)
	}
	return "setting maximum fragments successful", nil
}

// IPFGetStatusCommand is `dpctl/ipf-get-status [-m] [dp]`: the settings
// and counters; with -m the held fragment lists too.
func (dp *Datapath) IPFGetStatusCommand(args []string) (string, error) {
	verbose, args, err := ipfArgs(args, 2)
	if err != nil {
		return "", err
	}
	st := dp.ct.IPFStatus()
	var b strings.Builder
	b01 := func(v bool) int {
		if v {
			return 1
		}
		return 0
	}
	b.WriteString("        Fragmentation Module Status\n")
	b.WriteString("        ---------------------------\n")
	fmt.Fprintf(&b, "        v4 enabled: %d\n", b01(st.V4.Enabled))
	fmt.Fprintf(&b, "        v6 enabled: %d\n", b01(st.V6.Enabled))
	fmt.Fprintf(&b, "        max num frags (v4/v6): %d\n", st.MaxFrags)
	fmt.Fprintf(&b, "        num frag: %d\n", st.NFrags)
	for _, f := range []struct {
		name string
		s    conntrack.IPFFamilyStatus
	}{{"v4", st.V4}, {"v6", st.V6}} {
		fmt.Fprintf(&b, "        min %s frag size: %d\n", f.name, f.s.MinFragSize)
		fmt.Fprintf(&b, "        %s frags accepted: %d\n", f.name, f.s.Accepted)
		fmt.Fprintf(&b, "        %s frags completed: %d\n", f.name, f.s.Completed)
		fmt.Fprintf(&b, "        %s frags expired: %d\n", f.name, f.s.Expired)
		fmt.Fprintf(&b, "        %s frags too small: %d\n", f.name, f.s.TooSmall)
		fmt.Fprintf(&b, "        %s frags overlapped: %d\n", f.name, f.s.Overlap)
		fmt.Fprintf(&b, "        %s frags purged: %d\n", f.name, f.s.Purged)
	}
	if verbose {
		b.WriteString("\n        Fragment Lists:\n\n")
		for _, l := range dp.ct.IPFLists() {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return b.String(), nil
}
