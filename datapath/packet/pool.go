package packet

import "sync"

// Pool is a free list of packets. The zero value is ready to use; a Pool
// must not be copied after first use.
type Pool struct {
	p sync.Pool
}

// Get returns an empty packet at the standard headroom, allocating one if
// the pool is empty.
func (pl *Pool) Get() *Packet {
	if v := pl.p.Get(); v != nil {
		return v.(*Packet)
	}
	return New()
}

// Put resets p and returns it to the pool. The caller must not use p after.
func (pl *Pool) Put(p *Packet) {
	p.Reset()
	pl.p.Put(p)
}

// GetBatch fills dst with packets from the pool.
func (pl *Pool) GetBatch(dst []*Packet) {
	for i := range dst {
		dst[i] = pl.Get()
	}
}

// PutBatch returns every packet of src to the pool and clears src.
func (pl *Pool) PutBatch(src []*Packet) {
	for i, p := range src {
		if p != nil {
			pl.Put(p)
			src[i] = nil
		}
	}
}
