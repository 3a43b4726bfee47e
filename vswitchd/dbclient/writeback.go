package dbclient

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/schema/vswitchd"
	"github.com/govs/govs/vswitchd/bridge"
)

// Write brings the database in line with r in one transaction holding
// only the columns that differ from the replica. It returns the number of
// rows it updated (0: nothing to do, no transaction sent).
//
// cur_cfg goes in the same transaction as the ofport and error columns it
// acknowledges, as ovs-vsctl reads them as soon as it sees cur_cfg move.
func (c *Conn) Write(ctx context.Context, r bridge.Report) (int, error) {
	var ops []ovsdb.Operation
	add := func(m model.Model, fields ...any) error {
		if len(fields) == 0 {
			return nil
		}
		o, err := c.cli.Where(m).Update(m, fields...)
		if err != nil {
			return err
		}
		ops = append(ops, o...)
		return nil
	}
	var errs []error

	if r.OVSUUID != "" {
		cur := &vswitchd.OpenvSwitch{UUID: r.OVSUUID}
		if err := c.cli.Get(ctx, cur); err == nil {
			m := &vswitchd.OpenvSwitch{UUID: r.OVSUUID, CurCfg: r.CurCfg,
				DatapathTypes: bridge.DatapathTypes, IfaceTypes: bridge.IfaceTypes}
			var f []any
			if cur.CurCfg != r.CurCfg {
				f = append(f, &m.CurCfg)
			}
			if !sameSet(cur.DatapathTypes, m.DatapathTypes) {
				f = append(f, &m.DatapathTypes)
			}
			if !sameSet(cur.IfaceTypes, m.IfaceTypes) {
				f = append(f, &m.IfaceTypes)
			}
			errs = append(errs, add(m, f...))
			errs = append(errs, c.writeCapabilities(ctx, cur.Datapaths, add))
		}
	}

	for _, b := range r.Bridges {
		cur := &vswitchd.Bridge{UUID: b.UUID}
		if err := c.cli.Get(ctx, cur); err != nil {
			continue
		}
		m := &vswitchd.Bridge{UUID: b.UUID, DatapathID: &b.DatapathID, Status: b.Status, RSTPStatus: b.RSTPStatus}
		var f []any
		if cur.DatapathID == nil || *cur.DatapathID != b.DatapathID {
			f = append(f, &m.DatapathID)
		}
		if !maps.Equal(cur.Status, m.Status) {
			f = append(f, &m.Status)
		}
		if !maps.Equal(cur.RSTPStatus, m.RSTPStatus) {
			f = append(f, &m.RSTPStatus)
		}
		errs = append(errs, add(m, f...))
	}

	for _, st := range r.Controllers {
		cur := &vswitchd.Controller{UUID: st.UUID}
		if err := c.cli.Get(ctx, cur); err != nil {
			continue
		}
		m := &vswitchd.Controller{UUID: st.UUID, IsConnected: st.IsConnected, Status: st.Status}
		if st.Role != "" {
			m.Role = ptr(st.Role)
		}
		var f []any
		if cur.IsConnected != m.IsConnected {
			f = append(f, &m.IsConnected)
		}
		if !samePtr(cur.Role, m.Role) {
			f = append(f, &m.Role)
		}
		if !maps.Equal(cur.Status, m.Status) {
			f = append(f, &m.Status)
		}
		errs = append(errs, add(m, f...))
	}

	for _, st := range r.Ports {
		cur := &vswitchd.Port{UUID: st.UUID}
		if err := c.cli.Get(ctx, cur); err != nil {
			continue
		}
		m := &vswitchd.Port{UUID: st.UUID, Status: st.Status, Statistics: st.Stats,
			RSTPStatus: st.RSTPStatus, RSTPStatistics: st.RSTPStatistics}
		if st.BondActiveSlave != "" {
			m.BondActiveSlave = ptr(st.BondActiveSlave)
		}
		var f []any
		if !samePtr(cur.BondActiveSlave, m.BondActiveSlave) {
			f = append(f, &m.BondActiveSlave)
		}
		if !maps.Equal(cur.Status, m.Status) {
			f = append(f, &m.Status)
		}
		if !maps.Equal(cur.Statistics, m.Statistics) {
			f = append(f, &m.Statistics)
		}
		if !maps.Equal(cur.RSTPStatus, m.RSTPStatus) {
			f = append(f, &m.RSTPStatus)
		}
		if !maps.Equal(cur.RSTPStatistics, m.RSTPStatistics) {
			f = append(f, &m.RSTPStatistics)
		}
		errs = append(errs, add(m, f...))
	}

	for _, st := range r.Mirrors {
		cur := &vswitchd.Mirror{UUID: st.UUID}
		if err := c.cli.Get(ctx, cur); err != nil {
			continue
		}
		if !maps.Equal(cur.Statistics, st.Stats) {
			m := &vswitchd.Mirror{UUID: st.UUID, Statistics: st.Stats}
			errs = append(errs, add(m, &m.Statistics))
		}
	}

	for _, st := range r.Ifaces {
		cur := &vswitchd.Interface{UUID: st.UUID}
		if err := c.cli.Get(ctx, cur); err != nil {
			continue
		}
		m := ifaceColumns(st)
		errs = append(errs, add(m, changedIfaceFields(cur, m)...))
	}
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	if len(ops) == 0 {
		return 0, nil
	}
	res, err := c.cli.Transact(ctx, ops...)
	if err != nil {
		return 0, err
	}
	if _, err := ovsdb.CheckOperationResults(res, ops); err != nil {
		return 0, fmt.Errorf("write-back transaction: %w", err)
	}
	return len(ops), nil
}

// writeCapabilities fills the capabilities of the Datapath rows that
// Open_vSwitch.datapaths names for the datapath types govs serves (OVS
// writes them for the rows ovn-controller creates).
func (c *Conn) writeCapabilities(ctx context.Context, dps map[string]string, add func(model.Model, ...any) error) error {
	caps := datapath.Capabilities()
	var errs []error
	for typ, uuid := range dps {
		if !slices.Contains(bridge.DatapathTypes, typ) {
			continue
		}
		cur := &vswitchd.Datapath{UUID: uuid}
		if err := c.cli.Get(ctx, cur); err != nil || maps.Equal(cur.Capabilities, caps) {
			continue
		}
		m := &vswitchd.Datapath{UUID: uuid, Capabilities: caps}
		errs = append(errs, add(m, &m.Capabilities))
	}
	return errors.Join(errs...)
}

// ifaceColumns renders st as Interface column values.
func ifaceColumns(st bridge.IfaceStatus) *vswitchd.Interface {
	m := &vswitchd.Interface{UUID: st.UUID, Ofport: ptr(st.OFPort), Statistics: st.Stats, Status: st.Status, LACPCurrent: st.LACPCurrent}
	if st.Error != "" {
		m.Error = ptr(st.Error)
	}
	if l := st.Link; l != nil {
		m.AdminState = ptr(upDown(l.AdminUp))
		m.LinkState = ptr(upDown(l.LinkUp))
		if l.Speed > 0 {
			m.LinkSpeed = ptr(l.Speed)
		}
		if l.Duplex != "" {
			m.Duplex = ptr(l.Duplex)
		}
		if l.MTU > 0 {
			m.MTU = ptr(l.MTU)
		}
		if l.MAC != "" {
			m.MACInUse = ptr(l.MAC)
		}
		if l.HasIfindex {
			m.Ifindex = ptr(l.Ifindex)
			m.LinkResets = ptr(l.LinkResets)
		}
	}
	return m
}

// changedIfaceFields lists the fields of want (pointers into it) whose
// values differ from cur.
func changedIfaceFields(cur, want *vswitchd.Interface) []any {
	var f []any
	check := func(differs bool, field any) {
		if differs {
			f = append(f, field)
		}
	}
	check(!samePtr(cur.Ofport, want.Ofport), &want.Ofport)
	check(!samePtr(cur.Error, want.Error), &want.Error)
	check(!samePtr(cur.AdminState, want.AdminState), &want.AdminState)
	check(!samePtr(cur.LinkState, want.LinkState), &want.LinkState)
	check(!samePtr(cur.LinkSpeed, want.LinkSpeed), &want.LinkSpeed)
	check(!samePtr(cur.Duplex, want.Duplex), &want.Duplex)
	check(!samePtr(cur.MTU, want.MTU), &want.MTU)
	check(!samePtr(cur.MACInUse, want.MACInUse), &want.MACInUse)
	check(!samePtr(cur.Ifindex, want.Ifindex), &want.Ifindex)
	check(!samePtr(cur.LinkResets, want.LinkResets), &want.LinkResets)
	check(!maps.Equal(cur.Statistics, want.Statistics), &want.Statistics)
	check(!maps.Equal(cur.Status, want.Status), &want.Status)
	check(!samePtr(cur.LACPCurrent, want.LACPCurrent), &want.LACPCurrent)
	return f
}

func ptr[T any](v T) *T { return &v }

func samePtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

func upDown(up bool) string {
	if up {
		return "up"
	}
	return "down"
}
