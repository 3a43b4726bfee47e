package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/govs/govs/ovsdb/db"
)

// The conntrack zone commands (OVS's add-zone-tp, del-zone-tp,
// list-zone-tp): the ct_zones of the Datapath row Open_vSwitch.datapaths
// names, each a CT_Zone row with a CT_Timeout_Policy.

// findDatapath returns the Datapath row of type name, failing as OVS's
// if there is none.
func (c *ctx) findDatapath(name string) *row {
	d := c.ovs.get(c.ovs.col("datapaths"))
	if i := d.Find(name); i >= 0 {
		if u, ok := d.Vals[i].(db.UUID); ok {
			if r := c.t.byUUID("Datapath", u); r != nil {
				return r
			}
		}
	}
	fatalf("datapath %s does not exist", name)
	return nil
}

// zoneArg parses "zone=N" (N as C's %i: decimal, 0x hex or 0 octal).
func zoneArg(s string) int64 {
	v, ok := strings.CutPrefix(s, "zone=")
	if ok {
		if n, err := strconv.ParseInt(v, 0, 64); err == nil {
			return n
		}
	}
	fatalf("%s: argument must be zone=ZONE_ID", s)
	return 0
}

// zoneRow returns the CT_Zone row of zone in dp, or nil.
func (c *ctx) zoneRow(dp *row, zone int64) *row {
	d := dp.get(dp.col("ct_zones"))
	if i := d.Find(zone); i >= 0 {
		if u, ok := d.Vals[i].(db.UUID); ok {
			return c.t.byUUID("CT_Zone", u)
		}
	}
	return nil
}

func cmdAddZoneTP(c *ctx) {
	dp := c.findDatapath(c.args[1])
	zone := zoneArg(c.args[2])
	tm := db.Datum{Keys: []db.Atom{}, Vals: []db.Atom{}}
	for _, a := range c.args[3:] {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			fatalf("%s: timeout policy must be KEY=VALUE", a)
		}
		// As OVS's (atoi): a value that is no number is 0.
		tm.Keys = append(tm.Keys, k)
		tm.Vals = append(tm.Vals, int64(atoi(v)))
	}
	tm.SortUnique()
	z := c.zoneRow(dp, zone)
	if z != nil && !c.has("--may-exist") {
		fatalf("zone id %d already exists", zone)
	}
	tp := c.t.insert("CT_Timeout_Policy", nil)
	c.t.write(tp, "timeouts", tm)
	if z != nil {
		// As OVS's (not as its manual says): --may-exist replaces the
		// zone's policy.
		c.t.setRefs(z, "timeout_policy", []*row{tp})
		return
	}
	z = c.t.insert("CT_Zone", nil)
	c.t.setRefs(z, "timeout_policy", []*row{tp})
	c.t.setKey(dp, dp.col("ct_zones"), zone, z.uuid)
}

func cmdDelZoneTP(c *ctx) {
	dp := c.findDatapath(c.args[1])
	zone := zoneArg(c.args[2])
	if c.zoneRow(dp, zone) == nil {
		if !c.has("--if-exists") {
			fatalf("zone id %d does not exist", zone)
		}
		return
	}
	col := dp.col("ct_zones")
	old := dp.get(col)
	nd := db.Datum{Keys: []db.Atom{}, Vals: []db.Atom{}}
	for i, k := range old.Keys {
		if db.CompareAtoms(k, zone) != 0 {
			nd.Keys = append(nd.Keys, k)
			nd.Vals = append(nd.Vals, old.Vals[i])
		}
	}
	c.t.mutate(dp, col, []mutation{{"delete", db.Datum{Keys: []db.Atom{zone}}, false}}, nd)
}

func cmdListZoneTP(c *ctx) {
	if c.ovs.get(c.ovs.col("datapaths")).Find(c.args[1]) < 0 {
		fatalf("datapath: %s record not found", c.args[1])
	}
	dp := c.findDatapath(c.args[1])
	d := dp.get(dp.col("ct_zones"))
	for i, k := range d.Keys {
		u, _ := d.Vals[i].(db.UUID)
		z := c.t.byUUID("CT_Zone", u)
		if z == nil {
			continue
		}
		var tps []string
		for _, tp := range c.t.refs(z, "timeout_policy") {
			tm := tp.get(tp.col("timeouts"))
			for j := range tm.Keys {
				tps = append(tps, fmt.Sprintf("%s=%d", tm.Keys[j], tm.Vals[j]))
			}
		}
		fmt.Fprintf(&c.out, "Zone:%d, Timeout Policies: %s\n", k, strings.Join(tps, " "))
	}
}
