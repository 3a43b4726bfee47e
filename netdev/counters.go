package netdev

import "sync/atomic"

// portCounters are a port's Stats, added to once per batch by its reader
// and writer and read by Stats from any goroutine.
type portCounters struct {
	rxPackets, rxBytes, rxDropped, rxErrors atomic.Uint64
	txPackets, txBytes, txDropped, txErrors atomic.Uint64
}

func (c *portCounters) addRx(packets, bytes, errors int) {
	if packets != 0 {
		c.rxPackets.Add(uint64(packets))
		c.rxBytes.Add(uint64(bytes))
	}
	if errors != 0 {
		c.rxErrors.Add(uint64(errors))
	}
}

func (c *portCounters) addTx(packets, bytes, dropped int) {
	if packets != 0 {
		c.txPackets.Add(uint64(packets))
		c.txBytes.Add(uint64(bytes))
	}
	if dropped != 0 {
		c.txDropped.Add(uint64(dropped))
	}
}

func (c *portCounters) snapshot() Stats {
	return Stats{
		RxPackets: c.rxPackets.Load(), RxBytes: c.rxBytes.Load(),
		RxDropped: c.rxDropped.Load(), RxErrors: c.rxErrors.Load(),
		TxPackets: c.txPackets.Load(), TxBytes: c.txBytes.Load(),
		TxDropped: c.txDropped.Load(), TxErrors: c.txErrors.Load(),
	}
}
