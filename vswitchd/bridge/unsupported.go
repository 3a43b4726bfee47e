package bridge

import (
	"fmt"
	"slices"
	"strings"

	"github.com/govs/govs/schema/vswitchd"
)

// The columns and keys of the schema that govs accepts but does not run.
// Nothing asked for is ignored silently: each row that sets one is named
// in Desired.Problems, which the daemon logs when the list changes, so a
// setting is reported once, when it appears. README.md lists them.

// notRunning is the text of every such report.
const notRunning = "is not supported by govs and has no effect"

// unsupportedOtherConfig are the other_config key prefixes of features
// govs does not run: RSTP keys but those rstp.go runs, multicast snooping,
// bond settings but those bond.go runs, CFM, LLDP, in-band control, an
// interface's pmd-rxq-affinity (queues go round-robin over pmd-cpu-mask,
// datapath/pmd.go). (The
// lacp-* keys matter only with LACP on a bond, which runs; the stp-* keys
// run, stp.go.)
var unsupportedOtherConfig = []string{
	"rstp-", "mcast-snooping-", "forward-bpdu", "bond-", "cfm_", "lldp",
	"disable-in-band", "in-band-queue", "pmd-rxq-affinity",
}

// unsupportedKeys returns the keys of oc that name a feature govs does not
// run, sorted.
func unsupportedKeys(oc map[string]string) []string {
	var keys []string
	for k := range oc {
		if k == "bond-detect-mode" || k == "bond-primary" || k == "bond-rebalance-interval" || rstpKeys[k] {
			continue // bond.go and rstp.go run them
		}
		if k == "disable-in-band" && oc[k] == "true" {
			continue // govs never installs in-band flows (ovn-controller sets it on br-int)
		}
		for _, p := range unsupportedOtherConfig {
			if strings.HasPrefix(k, p) {
				keys = append(keys, k)
				break
			}
		}
	}
	slices.Sort(keys)
	return keys
}

// reportUnsupportedBridge adds what br sets that govs does not run.
func reportUnsupportedBridge(br vswitchd.Bridge, problems *[]string) {
	var what []string
	if br.STPEnable && br.RSTPEnable {
		// As OVS's bridge_configure_spanning_tree.
		*problems = append(*problems, fmt.Sprintf("%s: RSTP and STP are mutually exclusive but both are configured; enabling RSTP", br.Name))
	}
	if br.McastSnoopingEnable {
		what = append(what, "mcast_snooping_enable=true (multicast snooping)")
	}
	if br.Sflow != nil {
		what = append(what, "sflow (sFlow)")
	}
	if br.Netflow != nil {
		what = append(what, "netflow (NetFlow)")
	}
	if br.IPFIX != nil {
		what = append(what, "ipfix (IPFIX)")
	}
	if br.AutoAttach != nil {
		what = append(what, "auto_attach")
	}
	report("bridge "+br.Name, what, br.OtherConfig, problems)
}

// report adds one line per feature in what, and per other_config key of
// oc that names one, to problems.
func report(where string, what []string, oc map[string]string, problems *[]string) {
	for _, k := range unsupportedKeys(oc) {
		what = append(what, "other_config:"+k)
	}
	for _, w := range what {
		*problems = append(*problems, fmt.Sprintf("%s: %s %s", where, w, notRunning))
	}
}

// reportUnsupportedPort adds what p sets that govs does not run. A bond
// (more than one interface) runs (bond.go), LACP included
// (bond_lacp.go), on a port of one interface too; bondSpec reports what
// it does not run. A single interface's bond settings do nothing, in OVS
// too.
func reportUnsupportedPort(br string, p vswitchd.Port, problems *[]string) {
	var what []string
	if p.BondFakeIface {
		what = append(what, "bond_fake_iface=true")
	}
	if p.MAC != nil {
		what = append(what, "mac")
	}
	if p.Protected {
		what = append(what, "protected=true")
	}
	if len(p.CVLANs) > 0 {
		what = append(what, "cvlans")
	}
	report("bridge "+br+": port "+p.Name, what, p.OtherConfig, problems)
}

// reportUnsupportedIface adds what i sets that govs does not run.
func reportUnsupportedIface(i vswitchd.Interface, problems *[]string) {
	var what []string
	if i.CFMMpid != nil {
		what = append(what, "cfm_mpid (CFM)")
	}
	if i.BFD["enable"] == "true" {
		what = append(what, "bfd:enable=true (BFD)")
	}
	if i.LLDP["enable"] == "true" {
		what = append(what, "lldp:enable=true (LLDP)")
	}
	if i.MAC != nil {
		what = append(what, "mac")
	}
	report("interface "+i.Name, what, i.OtherConfig, problems)
}
