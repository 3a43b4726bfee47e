package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestOpenFlowBundleDifferential drives bundles (ovs-ofctl --bundle and
// ovs-ofctl bundle, OpenFlow 1.3's ONF extension, 1.4 and 1.5) on govs and
// on Debian's ovs-vswitchd and requires the same output and exit status:
// a bundle with one bad message applies nothing and fails as OVS's does.
func TestOpenFlowBundleDifferential(t *testing.T) {
	deb := startDebianSwitch(t)
	deb.setUp("gbud", "10.190.0")
	govs := startGovsSwitch(t)
	govs.setUp("gbuo", "10.191.0")

	dir := t.TempDir()
	files := map[string]string{
		"flows": "priority=10,in_port=1,actions=output:2\npriority=10,in_port=2,actions=output:1\n" +
			"cookie=0x10,table=1,priority=20,ip,nw_src=10.0.0.1,actions=NORMAL\ntable=2,priority=7,tcp,tp_dst=22,actions=drop\n",
		// The third flow outputs to a group that does not exist: the
		// commit fails and nothing is applied.
		"badgroup": "priority=30,in_port=3,actions=output:1\npriority=31,ip,actions=resubmit(,1)\npriority=32,arp,actions=group:77\n",
		// Table 254 is read-only: refused as the flow is added.
		"readonly": "priority=40,in_port=3,actions=output:1\ntable=254,actions=drop\n",
		"replace":  "priority=10,in_port=1,actions=output:3\ncookie=0x20,priority=5,actions=drop\n",
		"groups":   "group_id=1,type=all,bucket=output:1,bucket=output:2\ngroup_id=2,type=indirect,bucket=output:3\n",
		"dupgroup": "group_id=3,type=all,bucket=output:1\ngroup_id=1,type=all,bucket=output:2\n",
		// A group and the flows that use it, in one transaction.
		"mixed": "group group_id=5,type=all,bucket=output:1\nflow priority=50,in_port=3,actions=group:5\n" +
			"flow table=3,priority=1,actions=group:2\n",
		"mixedbad": "group group_id=6,type=all,bucket=output:1\nflow priority=51,in_port=3,actions=group:6\n" +
			"flow priority=52,in_port=2,actions=group:66\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f := func(name string) string { return filepath.Join(dir, name) }
	var cmds [][]string
	for _, v := range []string{"OpenFlow13", "OpenFlow14", "OpenFlow15"} {
		o := []string{"-O", v, "--bundle"}
		cmds = append(cmds,
			append(o, "add-flows", "BR", f("flows")),
			[]string{"-O", v, "dump-flows", "--no-stats", "BR"},
			append(o, "add-flows", "BR", f("badgroup")),
			append(o, "add-flows", "BR", f("readonly")),
			[]string{"-O", v, "dump-flows", "--no-stats", "BR"},
			append(o, "add-flow", "BR", "priority=60,in_port=1,actions=output:3"),
			append(o, "mod-flows", "BR", "in_port=2,actions=output:3"),
			append(o, "--strict", "del-flows", "BR", "priority=60,in_port=1"),
			append(o, "replace-flows", "BR", f("replace")),
			[]string{"-O", v, "dump-flows", "--no-stats", "BR"},
			append(o, "add-groups", "BR", f("groups")),
			append(o, "add-groups", "BR", f("dupgroup")),
			[]string{"-O", v, "dump-groups", "BR"},
			append(o, "add-flow", "BR", "priority=70,actions=group:1"),
			[]string{"-O", v, "bundle", "BR", f("mixed")},
			[]string{"-O", v, "bundle", "BR", f("mixedbad")},
			[]string{"-O", v, "dump-flows", "--no-stats", "BR"},
			[]string{"-O", v, "dump-groups", "BR"},
			append(o, "del-groups", "BR", "group_id=1"),
			append(o, "del-flows", "BR"),
			append(o, "del-groups", "BR"),
			[]string{"-O", v, "dump-flows", "--no-stats", "BR"},
			[]string{"-O", v, "dump-groups", "BR"},
		)
	}
	cmds = append(cmds,
		[]string{"--bundle", "add-flow", "BR", "priority=80,actions=drop"},
		[]string{"-O", "OpenFlow10", "--bundle", "add-flow", "BR", "priority=80,actions=drop"},
		[]string{"dump-flows", "--no-stats", "BR"},
	)
	// Each switch has its own rundir; OVS dumps a table's flows in hash
	// order.
	rundir := regexp.MustCompile(`unix:\S+/BR\.mgmt`)
	norm := func(args []string) func(string) string {
		return func(out string) string {
			out = rundir.ReplaceAllString(out, "unix:RUNDIR/BR.mgmt")
			if slices.Contains(args, "dump-flows") {
				lines := strings.Split(out, "\n")
				slices.Sort(lines)
				out = strings.Join(lines, "\n")
			}
			return out
		}
	}
	for i, args := range cmds {
		t.Run(fmt.Sprintf("%02d", i), func(t *testing.T) { compareOfctl(t, deb, govs, args, norm(args)) })
	}
}
