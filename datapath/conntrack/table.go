package conntrack

// table is one shard's index of connections by key: open addressing with
// linear probing over 16-byte slots that hold the connection, not its key
// (a map[key]*conn holds the 40-byte key in each of a connection's two
// entries). Like a map it does not shrink. Its caller locks it.
type table struct {
	slots []slot // a power of two long, or nil
	n     int    // slots in use
}

// slot is a connection under its original key (reply false) or its reply
// key; h is the upper half of the key's hash.
type slot struct {
	c     *conn
	h     uint32
	reply bool
}

func (s *slot) key() *key {
	if s.reply {
		return &s.c.reply
	}
	return &s.c.orig
}

// get returns the connection with key k (hash h), or nil.
func (t *table) get(k *key, h uint32) *conn {
	if t.n == 0 {
		return nil
	}
	mask := uint32(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.c == nil {
			return nil
		}
		if s.h == h && *s.key() == *k {
			return s.c
		}
	}
}

// put adds c under its reply key if reply, else its original key; the key
// is not in t.
func (t *table) put(c *conn, h uint32, reply bool) {
	if (t.n+1)*4 > len(t.slots)*3 {
		t.resize(max(2*len(t.slots), 8))
	}
	t.place(slot{c: c, h: h, reply: reply})
	t.n++
}

func (t *table) place(s slot) {
	mask := uint32(len(t.slots) - 1)
	i := s.h & mask
	for t.slots[i].c != nil {
		i = (i + 1) & mask
	}
	t.slots[i] = s
}

func (t *table) resize(n int) {
	old := t.slots
	t.slots = make([]slot, n)
	for _, s := range old {
		if s.c != nil {
			t.place(s)
		}
	}
}

// del removes c's entry under its reply key if reply, else under its
// original key, if t has it (h is that key's hash).
func (t *table) del(c *conn, h uint32, reply bool) bool {
	if t.n == 0 {
		return false
	}
	mask := uint32(len(t.slots) - 1)
	i := h & mask
	for {
		s := &t.slots[i]
		if s.c == nil {
			return false
		}
		if s.c == c && s.reply == reply {
			break
		}
		i = (i + 1) & mask
	}
	// Backward-shift deletion: move up each later entry of the run that
	// may live at i, so that no probe stops early at the hole.
	for j := i; ; {
		j = (j + 1) & mask
		s := t.slots[j]
		if s.c == nil {
			break
		}
		// s may move to i unless its home slot lies cyclically in (i, j].
		if home := s.h & mask; (j-home)&mask >= (j-i)&mask {
			t.slots[i] = s
			i = j
		}
	}
	t.slots[i] = slot{}
	t.n--
	return true
}
