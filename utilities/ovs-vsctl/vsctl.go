package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/govs/govs/ovsdb/db"
)

// vcache is the bridge/port/interface view of the database that the
// switch commands work on (vsctl_context's cache), fake (VLAN) bridges
// included.
type vcache struct {
	bridges map[string]*vbridge
	ports   map[string]*vport
	ifaces  map[string]*viface
}

type vbridge struct {
	cfg      *row // nil for a fake bridge
	name     string
	ports    []*vport
	parent   *vbridge
	vlan     int
	children map[int]*vbridge
}

type vport struct {
	cfg    *row
	bridge *vbridge
	ifaces []*viface
}

type viface struct {
	cfg  *row
	port *vport
}

func portIsFakeBridge(p *row) bool {
	tag, ok := p.integer("tag")
	return p.boolean("fake_bridge") && ok && tag >= 0 && tag <= 4095
}

func (c *ctx) populate() *vcache {
	if c.cache != nil {
		return c.cache
	}
	vc := &vcache{bridges: map[string]*vbridge{}, ports: map[string]*vport{}, ifaces: map[string]*viface{}}
	c.cache = vc
	addBridge := func(cfg *row, name string, parent *vbridge, vlan int) *vbridge {
		br := &vbridge{cfg: cfg, name: name, parent: parent, vlan: vlan, children: map[int]*vbridge{}}
		if parent != nil {
			if conflict := parent.children[vlan]; conflict != nil {
				c.warn("vsctl", "%s: bridge has multiple VLAN bridges (%s and %s) for VLAN %d, but only one is allowed", parent.name, name, conflict.name, vlan)
			} else {
				parent.children[vlan] = br
			}
		}
		vc.bridges[name] = br
		return br
	}
	c.verifyPorts()
	brs := c.t.refs(c.ovs, "bridges")
	bridges, ports := map[string]bool{}, map[string]bool{}
	for _, b := range brs {
		name := b.str("name")
		if bridges[name] {
			c.warn("vsctl", "%s: database contains duplicate bridge name", name)
			continue
		}
		bridges[name] = true
		br := addBridge(b, name, nil, 0)
		for _, p := range c.t.refs(b, "ports") {
			pn := p.str("name")
			if ports[pn] {
				continue
			}
			ports[pn] = true
			if portIsFakeBridge(p) && !bridges[pn] {
				bridges[pn] = true
				tag, _ := p.integer("tag")
				addBridge(nil, pn, br, int(tag))
			}
		}
	}
	bridges = map[string]bool{}
	for _, b := range brs {
		name := b.str("name")
		if bridges[name] {
			continue
		}
		bridges[name] = true
		br := vc.bridges[name]
		for _, p := range c.t.refs(b, "ports") {
			pn := p.str("name")
			if old := vc.ports[pn]; old != nil {
				if old.cfg == p {
					c.warn("vsctl", "%s: port is in multiple bridges (%s and %s)", pn, br.name, old.bridge.name)
				} else {
					c.warn("vsctl", "%s: database contains duplicate port name", pn)
				}
				continue
			}
			if portIsFakeBridge(p) && bridges[pn] {
				continue
			}
			if portIsFakeBridge(p) {
				bridges[pn] = true
			}
			vp := c.addPortToCache(br, p)
			for _, i := range c.t.refs(p, "interfaces") {
				in := i.str("name")
				if old := vc.ifaces[in]; old != nil {
					if old.cfg == i {
						c.warn("vsctl", "%s: interface is in multiple ports (%s and %s)", in, old.port.cfg.str("name"), pn)
					} else {
						c.warn("vsctl", "%s: database contains duplicate interface name", in)
					}
					continue
				}
				vi := &viface{cfg: i, port: vp}
				vp.ifaces = append(vp.ifaces, vi)
				vc.ifaces[in] = vi
			}
		}
	}
	return vc
}

// verifyPorts is verify_ports: the cache is built from the bridges, their
// ports and the ports' interfaces, so a change to any of them by another
// client makes the commands run again.
func (c *ctx) verifyPorts() {
	c.t.verify(c.ovs, c.ovs.col("bridges"))
	for _, b := range c.t.list("Bridge") {
		c.t.verify(b, b.col("ports"))
	}
	for _, p := range c.t.list("Port") {
		c.t.verify(p, p.col("interfaces"))
	}
}

func (c *ctx) addPortToCache(parent *vbridge, p *row) *vport {
	if tag, ok := p.integer("tag"); ok && tag >= 0 && tag <= 4095 {
		if vb := parent.children[int(tag)]; vb != nil {
			parent = vb
		}
	}
	vp := &vport{cfg: p, bridge: parent}
	parent.ports = append(parent.ports, vp)
	c.cache.ports[p.str("name")] = vp
	return vp
}

func (c *ctx) findBridge(name string, mustExist bool) *vbridge {
	br := c.populate().bridges[name]
	if mustExist && br == nil {
		fatalf("no bridge named %s", name)
	}
	return br
}

func (c *ctx) findRealBridge(name string, mustExist bool) *vbridge {
	br := c.findBridge(name, mustExist)
	if br != nil && br.parent != nil {
		fatalf("%s is a fake bridge", name)
	}
	return br
}

func (c *ctx) findPort(name string, mustExist bool) *vport {
	p := c.populate().ports[name]
	if p != nil && name == p.bridge.name {
		p = nil
	}
	if mustExist && p == nil {
		fatalf("no port named %s", name)
	}
	return p
}

func (c *ctx) findIface(name string, mustExist bool) *viface {
	i := c.populate().ifaces[name]
	if i != nil && name == i.port.bridge.name {
		i = nil
	}
	if mustExist && i == nil {
		fatalf("no interface named %s", name)
	}
	return i
}

func (c *ctx) checkConflicts(name, msg string) {
	vc := c.populate()
	if vc.bridges[name] != nil {
		fatalf("%s because a bridge named %s already exists", msg, name)
	}
	if p := vc.ports[name]; p != nil {
		fatalf("%s because a port named %s already exists on bridge %s", msg, name, p.bridge.name)
	}
	if i := vc.ifaces[name]; i != nil {
		fatalf("%s because an interface named %s already exists on bridge %s", msg, name, i.port.bridge.name)
	}
}

func without(rows []*row, x *row) []*row {
	var out []*row
	for _, r := range rows {
		if r != x {
			out = append(out, r)
		}
	}
	return out
}

func (c *ctx) bridgeInsertPort(br, p *row) {
	c.t.setRefs(br, "ports", append(c.t.refs(br, "ports"), p))
}

func (c *ctx) insertIface(name string) *row {
	i := c.t.insert("Interface", nil)
	c.t.setString(i, "name", name)
	*c.newIfaces = append(*c.newIfaces, i)
	return i
}

func cmdInit(*ctx) {}

func cmdAddBr(c *ctx) {
	mayExist := c.has("--may-exist")
	name := c.args[1]
	var parentName string
	vlan := 0
	switch len(c.args) {
	case 2:
	case 4:
		parentName = c.args[2]
		vlan = atoi(c.args[3])
		if vlan < 0 || vlan > 4095 {
			fatalf("%s: vlan must be between 0 and 4095", c.args[0])
		}
	default:
		fatalf("'%s' command takes exactly 1 or 3 arguments", c.args[0])
	}
	if mayExist {
		if br := c.findBridge(name, false); br != nil {
			if parentName == "" {
				if br.parent != nil {
					fatalf("\"--may-exist add-br %s\" but %s is a VLAN bridge for VLAN %d", name, name, br.vlan)
				}
			} else {
				switch {
				case br.parent == nil:
					fatalf("\"--may-exist add-br %s %s %d\" but %s is not a VLAN bridge", name, parentName, vlan, name)
				case br.parent.name != parentName:
					fatalf("\"--may-exist add-br %s %s %d\" but %s has the wrong parent %s", name, parentName, vlan, name, br.parent.name)
				case br.vlan != vlan:
					fatalf("\"--may-exist add-br %s %s %d\" but %s is a VLAN bridge for the wrong VLAN %d", name, parentName, vlan, name, br.vlan)
				}
			}
			return
		}
	}
	c.checkConflicts(name, "cannot create a bridge named "+name)
	iface := c.insertIface(name)
	c.t.setString(iface, "type", "internal")
	port := c.t.insert("Port", nil)
	c.t.setString(port, "name", name)
	c.t.setRefs(port, "interfaces", []*row{iface})
	if parentName == "" {
		br := c.t.insert("Bridge", nil)
		c.t.setString(br, "name", name)
		c.t.setRefs(br, "ports", []*row{port})
		c.t.setRefs(c.ovs, "bridges", append(c.t.refs(c.ovs, "bridges"), br))
	} else {
		parent := c.findBridge(parentName, false)
		if parent != nil && parent.parent != nil {
			fatalf("cannot create bridge with fake bridge as parent")
		}
		if parent == nil {
			fatalf("parent bridge %s does not exist", parentName)
		}
		if conflict := parent.children[vlan]; conflict != nil {
			fatalf("bridge %s already has a child VLAN bridge %s on VLAN %d", parentName, conflict.name, vlan)
		}
		c.t.write(port, "fake_bridge", db.Datum{Keys: []db.Atom{true}})
		c.t.write(port, "tag", db.Datum{Keys: []db.Atom{int64(vlan)}})
		c.bridgeInsertPort(parent.cfg, port)
	}
	c.invalidate()
}

// atoi is C's atoi: leading digits, 0 if none.
func atoi(s string) int {
	s = strings.TrimLeft(s, " \t\n")
	end := 0
	if end < len(s) && (s[end] == '-' || s[end] == '+') {
		end++
	}
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	n, _ := strconv.Atoi(s[:end])
	return n
}

func (c *ctx) delPort(p *vport) {
	br := p.bridge.cfg
	if p.bridge.parent != nil {
		br = p.bridge.parent.cfg
	}
	c.t.setRefs(br, "ports", without(c.t.refs(br, "ports"), p.cfg))
	for _, i := range p.ifaces {
		c.t.delete(i.cfg)
		delete(c.cache.ifaces, i.cfg.str("name"))
	}
	c.t.delete(p.cfg)
	delete(c.cache.ports, p.cfg.str("name"))
	list := p.bridge.ports[:0:0]
	for _, x := range p.bridge.ports {
		if x != p {
			list = append(list, x)
		}
	}
	p.bridge.ports = list
}

func (c *ctx) delBridge(br *vbridge) {
	for _, vlan := range sortedInts(br.children) {
		c.delBridge(br.children[vlan])
	}
	for _, p := range append([]*vport{}, br.ports...) {
		c.delPort(p)
	}
	if br.cfg != nil {
		for _, f := range c.t.list("Flow_Sample_Collector_Set") {
			d := f.get(f.col("bridge"))
			if d.Len() == 1 && d.Keys[0] == br.cfg.uuid {
				c.t.delete(f)
			}
		}
	}
	if br.parent != nil {
		delete(br.parent.children, br.vlan)
	}
	if br.cfg != nil {
		c.t.delete(br.cfg)
		c.t.setRefs(c.ovs, "bridges", without(c.t.refs(c.ovs, "bridges"), br.cfg))
	}
	delete(c.cache.bridges, br.name)
}

func sortedInts(m map[int]*vbridge) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

func cmdDelBr(c *ctx) {
	if br := c.findBridge(c.args[1], !c.has("--if-exists")); br != nil {
		c.delBridge(br)
	}
}

func (c *ctx) outputSorted(names []string) {
	sort.Strings(names)
	for _, n := range names {
		c.out.WriteString(n + "\n")
	}
}

func cmdListBr(c *ctx) {
	real, fake := c.has("--real"), c.has("--fake")
	if !real && !fake {
		real, fake = true, true
	}
	var names []string
	for name, br := range c.populate().bridges {
		if (br.parent != nil && fake) || (br.parent == nil && real) {
			names = append(names, name)
		}
	}
	c.outputSorted(names)
}

func cmdBrExists(c *ctx) {
	if c.findBridge(c.args[1], false) == nil {
		panic(exitCode(2))
	}
}

func setExternalID(d db.Datum, key string, value *string) db.Datum {
	nd := db.Datum{Keys: []db.Atom{}, Vals: []db.Atom{}}
	for i, k := range d.Keys {
		if k.(string) != key {
			nd.Keys = append(nd.Keys, k)
			nd.Vals = append(nd.Vals, d.Vals[i])
		}
	}
	if value != nil {
		nd.Keys = append(nd.Keys, key)
		nd.Vals = append(nd.Vals, *value)
	}
	nd.SortUnique()
	return nd
}

func cmdBrSetExternalID(c *ctx) {
	br := c.findBridge(c.args[1], true)
	var value *string
	if len(c.args) >= 4 {
		value = &c.args[3]
	}
	if br.cfg != nil {
		c.t.verify(br.cfg, br.cfg.col("external_ids"))
		c.t.write(br.cfg, "external_ids", setExternalID(br.cfg.get(br.cfg.col("external_ids")), c.args[2], value))
	} else {
		p := c.cache.ports[c.args[1]].cfg
		c.t.verify(p, p.col("external_ids"))
		c.t.write(p, "external_ids", setExternalID(p.get(p.col("external_ids")), "fake-bridge-"+c.args[2], value))
	}
}

func (c *ctx) getExternalID(d db.Datum, prefix string, key *string) {
	if key != nil {
		if i := d.Find(prefix + *key); i >= 0 {
			c.out.WriteString(d.Vals[i].(string) + "\n")
		}
		return
	}
	for i, k := range d.Keys {
		if s := k.(string); strings.HasPrefix(s, prefix) {
			fmt.Fprintf(&c.out, "%s=%s\n", s[len(prefix):], d.Vals[i].(string))
		}
	}
}

func cmdBrGetExternalID(c *ctx) {
	br := c.findBridge(c.args[1], true)
	var key *string
	if len(c.args) >= 3 {
		key = &c.args[2]
	}
	if br.cfg != nil {
		c.t.verify(br.cfg, br.cfg.col("external_ids"))
		c.getExternalID(br.cfg.get(br.cfg.col("external_ids")), "", key)
	} else {
		p := c.cache.ports[c.args[1]].cfg
		c.t.verify(p, p.col("external_ids"))
		c.getExternalID(p.get(p.col("external_ids")), "fake-bridge-", key)
	}
}

func cmdListPorts(c *ctx) {
	br := c.findBridge(c.args[1], true)
	var names []string
	for _, p := range br.ports {
		if n := p.cfg.str("name"); n != br.name {
			names = append(names, n)
		}
	}
	c.outputSorted(names)
}

// contextString is vsctl_context_to_string: the command's options and
// arguments, quoted for a shell where needed.
func (c *ctx) contextString() string {
	words := append(append([]string{}, c.optKeys...), c.args...)
	for i, w := range words {
		words[i] = escapeArg(w)
	}
	return strings.Join(words, " ")
}

// escapeArg is process_escape_args' quoting of one argument.
func escapeArg(s string) string {
	if s != "" && !strings.ContainsAny(s, " \\'\"\t\n") {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' || s[i] == '"' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
	return b.String()
}

func (c *ctx) addPort(brName, portName string, mayExist, fakeIface bool, ifaceNames, settings []string) {
	if mayExist {
		if p := c.findPort(portName, false); p != nil {
			want := append([]string{}, ifaceNames...)
			sort.Strings(want)
			var have []string
			for _, i := range c.t.refs(p.cfg, "interfaces") {
				have = append(have, i.str("name"))
			}
			sort.Strings(have)
			if p.bridge.name != brName {
				fatalf("\"%s\" but %s is actually attached to bridge %s", c.contextString(), portName, p.bridge.name)
			}
			if strings.Join(want, "\x00") != strings.Join(have, "\x00") {
				fatalf("\"%s\" but %s actually has interface(s) %s", c.contextString(), portName, strings.Join(have, ", "))
			}
			return
		}
	}
	c.checkConflicts(portName, "cannot create a port named "+portName)
	for _, n := range ifaceNames {
		c.checkConflicts(n, "cannot create an interface named "+n)
	}
	br := c.findBridge(brName, true)
	var ifaces []*row
	for _, n := range ifaceNames {
		ifaces = append(ifaces, c.insertIface(n))
	}
	port := c.t.insert("Port", nil)
	c.t.setString(port, "name", portName)
	c.t.setRefs(port, "interfaces", ifaces)
	if fakeIface {
		c.t.write(port, "bond_fake_iface", db.Datum{Keys: []db.Atom{true}})
	}
	if br.parent != nil {
		c.t.write(port, "tag", db.Datum{Keys: []db.Atom{int64(br.vlan)}})
	}
	pt := c.t.schema.Tables["Port"]
	for _, s := range settings {
		c.setColumn(pt, port, s)
	}
	real := br.cfg
	if br.parent != nil {
		real = br.parent.cfg
	}
	c.bridgeInsertPort(real, port)
	vp := &vport{cfg: port, bridge: br}
	br.ports = append(br.ports, vp)
	c.cache.ports[portName] = vp
	for _, i := range ifaces {
		vi := &viface{cfg: i, port: vp}
		vp.ifaces = append(vp.ifaces, vi)
		c.cache.ifaces[i.str("name")] = vi
	}
}

func cmdAddPort(c *ctx) {
	c.addPort(c.args[1], c.args[2], c.has("--may-exist"), false, c.args[2:3], c.args[3:])
}

func cmdAddBond(c *ctx) {
	n := len(c.args) - 3
	for i := 3; i < len(c.args); i++ {
		if strings.Contains(c.args[i], "=") {
			n = i - 3
			break
		}
	}
	if n < 2 {
		fatalf("add-bond requires at least 2 interfaces, but only %d were specified", n)
	}
	c.addPort(c.args[1], c.args[2], c.has("--may-exist"), c.has("--fake-iface"), c.args[3:3+n], c.args[3+n:])
}

func cmdDelPort(c *ctx) {
	mustExist := !c.has("--if-exists")
	withIface := c.has("--with-iface")
	target := c.args[len(c.args)-1]
	var p *vport
	switch {
	case c.findBridge(target, false) != nil:
		if mustExist {
			fatalf("cannot delete port %s because it is the local port for bridge %s (deleting this port requires deleting the entire bridge)", target, target)
		}
	case !withIface:
		p = c.findPort(target, mustExist)
	default:
		p = c.findPort(target, false)
		if p == nil {
			if i := c.findIface(target, false); i != nil {
				p = i.port
			}
		}
		if mustExist && p == nil {
			fatalf("no port or interface named %s", target)
		}
	}
	if p == nil {
		return
	}
	if len(c.args) == 3 {
		br := c.findBridge(c.args[1], true)
		if p.bridge != br {
			if p.bridge.parent == br {
				fatalf("bridge %s does not have a port %s (although its parent bridge %s does)", c.args[1], c.args[2], br.parent.name)
			}
			fatalf("bridge %s does not have a port %s", c.args[1], c.args[2])
		}
	}
	c.delPort(p)
}

func cmdPortToBr(c *ctx) {
	p := c.findPort(c.args[1], true)
	c.out.WriteString(p.bridge.name + "\n")
}

func cmdBrToVlan(c *ctx) {
	br := c.findBridge(c.args[1], true)
	fmt.Fprintf(&c.out, "%d\n", br.vlan)
}

func cmdBrToParent(c *ctx) {
	br := c.findBridge(c.args[1], true)
	if br.parent != nil {
		br = br.parent
	}
	c.out.WriteString(br.name + "\n")
}

func cmdListIfaces(c *ctx) {
	br := c.findBridge(c.args[1], true)
	var names []string
	for _, p := range br.ports {
		for _, i := range p.ifaces {
			if n := i.cfg.str("name"); n != br.name {
				names = append(names, n)
			}
		}
	}
	c.outputSorted(names)
}

func cmdIfaceToBr(c *ctx) {
	i := c.findIface(c.args[1], true)
	c.out.WriteString(i.port.bridge.name + "\n")
}

func cmdGetController(c *ctx) {
	br := c.findBridge(c.args[1], true)
	if br.parent != nil {
		br = br.parent
	}
	var targets []string
	for _, ctl := range c.t.refs(br.cfg, "controller") {
		targets = append(targets, ctl.str("target"))
	}
	c.outputSorted(targets)
}

func cmdDelController(c *ctx) {
	br := c.findRealBridge(c.args[1], true).cfg
	ctls := c.t.refs(br, "controller")
	if len(ctls) > 0 {
		for _, ctl := range ctls {
			c.t.delete(ctl)
		}
		c.t.clear(br, "controller")
	}
}

// verifyTarget reports whether target names an active or passive
// connection method OVS knows (vconn_verify_name/pvconn_verify_name).
func verifyTarget(target string, kinds []string) bool {
	for _, k := range kinds {
		if strings.HasPrefix(target, k+":") {
			return true
		}
	}
	return false
}

var vconnKinds = []string{"tcp", "ssl", "unix", "ptcp", "pssl", "punix"}

// insertTargets inserts a Controller or Manager row per target.
func (c *ctx) insertTargets(table string, targets []string) []*row {
	var rows []*row
	for _, target := range targets {
		if !verifyTarget(target, vconnKinds) {
			c.warn("vsctl", "target type \"%s\" is possibly erroneous", target)
		}
		r := c.t.insert(table, nil)
		c.t.setString(r, "target", target)
		rows = append(rows, r)
	}
	return rows
}

func cmdSetController(c *ctx) {
	br := c.findRealBridge(c.args[1], true).cfg
	for _, ctl := range c.t.refs(br, "controller") {
		c.t.delete(ctl)
	}
	c.t.setRefs(br, "controller", c.insertTargets("Controller", c.args[2:]))
}

func cmdGetFailMode(c *ctx) {
	br := c.findBridge(c.args[1], true)
	if br.parent != nil {
		br = br.parent
	}
	if m := br.cfg.str("fail_mode"); m != "" {
		c.out.WriteString(m + "\n")
	}
}

func cmdDelFailMode(c *ctx) {
	br := c.findRealBridge(c.args[1], true)
	c.t.clear(br.cfg, "fail_mode")
}

func cmdSetFailMode(c *ctx) {
	br := c.findRealBridge(c.args[1], true)
	mode := c.args[2]
	if mode != "standalone" && mode != "secure" {
		fatalf("fail-mode must be \"standalone\" or \"secure\"")
	}
	c.t.setString(br.cfg, "fail_mode", mode)
}

func cmdGetManager(c *ctx) {
	seen := map[string]bool{}
	var targets []string
	for _, m := range c.t.refs(c.ovs, "manager_options") {
		if t := m.str("target"); !seen[t] {
			seen[t] = true
			targets = append(targets, t)
		}
	}
	c.outputSorted(targets)
}

func (c *ctx) deleteManagers() {
	for _, m := range c.t.refs(c.ovs, "manager_options") {
		c.t.delete(m)
	}
	c.t.clear(c.ovs, "manager_options")
}

func cmdDelManager(c *ctx) { c.deleteManagers() }

func cmdSetManager(c *ctx) {
	c.deleteManagers()
	c.t.setRefs(c.ovs, "manager_options", c.insertTargets("Manager", c.args[1:]))
}

func cmdGetSSL(c *ctx) {
	ssl := c.t.refs(c.ovs, "ssl")
	if len(ssl) == 0 {
		return
	}
	s := ssl[0]
	fmt.Fprintf(&c.out, "Private key: %s\n", s.str("private_key"))
	fmt.Fprintf(&c.out, "Certificate: %s\n", s.str("certificate"))
	fmt.Fprintf(&c.out, "CA Certificate: %s\n", s.str("ca_cert"))
	fmt.Fprintf(&c.out, "Bootstrap: %t\n", s.boolean("bootstrap_ca_cert"))
}

func cmdDelSSL(c *ctx) {
	if ssl := c.t.refs(c.ovs, "ssl"); len(ssl) > 0 {
		c.t.delete(ssl[0])
		c.t.clear(c.ovs, "ssl")
	}
}

func cmdSetSSL(c *ctx) {
	if old := c.t.refs(c.ovs, "ssl"); len(old) > 0 {
		c.t.delete(old[0])
	}
	s := c.t.insert("SSL", nil)
	c.t.setString(s, "private_key", c.args[1])
	c.t.setString(s, "certificate", c.args[2])
	c.t.setString(s, "ca_cert", c.args[3])
	c.t.write(s, "bootstrap_ca_cert", db.Datum{Keys: []db.Atom{c.has("--bootstrap")}})
	c.t.setRefs(c.ovs, "ssl", []*row{s})
}

// parseULL is the strtoull check the auto-attach commands make.
func parseULL(s string) int64 {
	s = strings.TrimLeft(s, " \t\n")
	end := 0
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	if end == 0 {
		fatalf("Invalid argument %s", s)
	}
	n, _ := strconv.ParseInt(s[:end], 10, 64)
	return n
}

func (c *ctx) aaBridge() *row {
	br := c.findBridge(c.args[1], true)
	if br.parent != nil {
		br = br.parent
	}
	return br.cfg
}

func cmdAddAAMapping(c *ctx) {
	isid, vlan := parseULL(c.args[2]), parseULL(c.args[3])
	br := c.aaBridge()
	aa := c.t.refs(br, "auto_attach")
	var a *row
	if len(aa) == 0 {
		a = c.t.insert("AutoAttach", nil)
		c.t.setRefs(br, "auto_attach", []*row{a})
	} else {
		a = aa[0]
	}
	m := a.get(a.col("mappings"))
	nd := db.Datum{Keys: append([]db.Atom{}, m.Keys...), Vals: append([]db.Atom{}, m.Vals...)}
	if nd.Find(isid) < 0 {
		nd.Keys = append(nd.Keys, isid)
		nd.Vals = append(nd.Vals, vlan)
		nd.SortUnique()
	}
	c.t.write(a, "mappings", nd)
}

func cmdDelAAMapping(c *ctx) {
	isid, vlan := parseULL(c.args[2]), parseULL(c.args[3])
	br := c.aaBridge()
	aa := c.t.refs(br, "auto_attach")
	if len(aa) == 0 {
		return
	}
	m := aa[0].get(aa[0].col("mappings"))
	if i := m.Find(isid); i >= 0 && m.Vals[i] == vlan {
		nd := db.Datum{Keys: []db.Atom{}, Vals: []db.Atom{}}
		for j := range m.Keys {
			if m.Keys[j] != isid && m.Vals[j] != vlan {
				nd.Keys = append(nd.Keys, m.Keys[j])
				nd.Vals = append(nd.Vals, m.Vals[j])
			}
		}
		c.t.write(aa[0], "mappings", nd)
	}
}

func cmdGetAAMapping(c *ctx) {
	br := c.aaBridge()
	aa := c.t.refs(br, "auto_attach")
	if len(aa) == 0 {
		return
	}
	m := aa[0].get(aa[0].col("mappings"))
	for i := range m.Keys {
		fmt.Fprintf(&c.out, "%d %d\n", m.Keys[i], m.Vals[i])
	}
}

func cmdEmerReset(c *ctx) {
	c.t.clear(c.ovs, "manager_options")
	c.t.clear(c.ovs, "ssl")
	for _, br := range c.t.list("Bridge") {
		for _, col := range []string{"controller", "fail_mode", "mirrors", "netflow", "sflow", "ipfix", "flood_vlans"} {
			c.t.clear(br, col)
		}
		oc := br.get(br.col("other_config"))
		nd := db.Datum{Keys: []db.Atom{}, Vals: []db.Atom{}}
		if i := oc.Find("hwaddr"); i >= 0 {
			nd.Keys, nd.Vals = []db.Atom{"hwaddr"}, []db.Atom{oc.Vals[i]}
		}
		c.t.write(br, "other_config", nd)
	}
	for _, p := range c.t.list("Port") {
		c.t.clear(p, "other_config")
	}
	for _, i := range c.t.list("Interface") {
		c.t.write(i, "ingress_policing_rate", db.Datum{Keys: []db.Atom{int64(0)}})
		c.t.write(i, "ingress_policing_burst", db.Datum{Keys: []db.Atom{int64(0)}})
	}
	for _, t := range []string{"Mirror", "Controller", "Manager", "NetFlow", "SSL", "sFlow", "IPFIX", "Flow_Sample_Collector_Set"} {
		for _, r := range c.t.list(t) {
			c.t.delete(r)
		}
	}
	c.invalidate()
}

var vsctlCommands = []*syntax{
	{name: "init", rw: true, run: cmdInit},
	{name: "add-br", min: 1, max: 3, options: "--may-exist", rw: true, run: cmdAddBr},
	{name: "del-br", min: 1, max: 1, options: "--if-exists", rw: true, run: cmdDelBr},
	{name: "list-br", options: "--real,--fake", run: cmdListBr},
	{name: "br-exists", min: 1, max: 1, run: cmdBrExists},
	{name: "br-to-vlan", min: 1, max: 1, run: cmdBrToVlan},
	{name: "br-to-parent", min: 1, max: 1, run: cmdBrToParent},
	{name: "br-set-external-id", min: 2, max: 3, rw: true, run: cmdBrSetExternalID},
	{name: "br-get-external-id", min: 1, max: 2, run: cmdBrGetExternalID},
	{name: "list-ports", min: 1, max: 1, run: cmdListPorts},
	{name: "add-port", min: 2, max: maxArgs, options: "--may-exist", rw: true, run: cmdAddPort},
	{name: "add-bond", min: 4, max: maxArgs, options: "--may-exist,--fake-iface", rw: true, run: cmdAddBond},
	{name: "del-port", min: 1, max: 2, options: "--if-exists,--with-iface", rw: true, run: cmdDelPort},
	{name: "port-to-br", min: 1, max: 1, run: cmdPortToBr},
	{name: "list-ifaces", min: 1, max: 1, run: cmdListIfaces},
	{name: "iface-to-br", min: 1, max: 1, run: cmdIfaceToBr},
	{name: "get-controller", min: 1, max: 1, run: cmdGetController},
	{name: "del-controller", min: 1, max: 1, rw: true, run: cmdDelController},
	{name: "set-controller", min: 1, max: maxArgs, rw: true, run: cmdSetController},
	{name: "get-fail-mode", min: 1, max: 1, run: cmdGetFailMode},
	{name: "del-fail-mode", min: 1, max: 1, rw: true, run: cmdDelFailMode},
	{name: "set-fail-mode", min: 2, max: 2, rw: true, run: cmdSetFailMode},
	{name: "get-manager", run: cmdGetManager},
	{name: "del-manager", rw: true, run: cmdDelManager},
	{name: "set-manager", min: 1, max: maxArgs, rw: true, run: cmdSetManager},
	{name: "get-ssl", run: cmdGetSSL},
	{name: "del-ssl", rw: true, run: cmdDelSSL},
	{name: "set-ssl", min: 3, max: 3, options: "--bootstrap", rw: true, run: cmdSetSSL},
	{name: "add-aa-mapping", min: 3, max: 3, rw: true, run: cmdAddAAMapping},
	{name: "del-aa-mapping", min: 3, max: 3, rw: true, run: cmdDelAAMapping},
	{name: "get-aa-mapping", min: 1, max: 1, run: cmdGetAAMapping},
	{name: "emer-reset", rw: true, run: cmdEmerReset},
	{name: "add-zone-tp", min: 3, max: maxArgs, options: "--may-exist", rw: true, run: cmdAddZoneTP},
	{name: "del-zone-tp", min: 2, max: 2, options: "--if-exists", rw: true, run: cmdDelZoneTP},
	{name: "list-zone-tp", min: 1, max: 1, run: cmdListZoneTP},
}
