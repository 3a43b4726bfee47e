// Package coverage counts control-path events and renders them as OVS's
// coverage/show does (lib/coverage.c): per event, the average rate over
// the last 5 seconds, minute and hour, and the total.
package coverage

import (
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
)

// Sampling: Tick is meant to be called every 5 seconds; a minute is 12
// ticks and the hour keeps 60 minutes, as in lib/coverage.c.
const (
	TickSeconds    = 5
	ticksPerMinute = 60 / TickSeconds
	minutesPerHour = 60
)

// Counters is a set of named event counters. The zero value is not usable;
// use New.
type Counters struct {
	mu     sync.Mutex // guards everything below
	order  []string   // registration order, which is display order
	events map[string]*event
}

type event struct {
	total     uint64
	lastTotal uint64                 // total at the last Tick
	min       [ticksPerMinute]uint64 // per-tick counts of the last minute
	hr        [minutesPerHour]uint64 // per-minute counts of the last hour
	ticks     int                    // ticks so far, to place min and hr entries
}

// New returns counters for the given events, displayed in that order.
func New(names ...string) *Counters {
	c := &Counters{events: map[string]*event{}}
	for _, n := range names {
		c.order = append(c.order, n)
		c.events[n] = &event{}
	}
	return c
}

// Inc counts one occurrence of the named event; unknown names are
// registered on first use.
func (c *Counters) Inc(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.event(name).total++
}

// event returns the named event, registering it. c.mu must be held.
func (c *Counters) event(name string) *event {
	e, ok := c.events[name]
	if !ok {
		e = &event{}
		c.events[name] = e
		c.order = append(c.order, name)
	}
	return e
}

// Raise sets the named event's total to total if that is more: for
// events counted elsewhere (the datapath's drops) and copied in.
func (c *Counters) Raise(name string, total uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.event(name)
	e.total = max(e.total, total)
}

// Read returns the named event's total (coverage/read-counter), and
// whether there is such an event.
func (c *Counters) Read(name string) (uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.events[name]
	if !ok {
		return 0, false
	}
	return e.total, true
}

// Tick closes a TickSeconds interval.
func (c *Counters) Tick() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.events {
		e.min[e.ticks%ticksPerMinute] = e.total - e.lastTotal
		e.lastTotal = e.total
		e.ticks++
		if e.ticks%ticksPerMinute == 0 {
			var sum uint64
			for _, n := range e.min {
				sum += n
			}
			e.hr[(e.ticks/ticksPerMinute-1)%minutesPerHour] = sum
		}
	}
}

// Show renders coverage/show.
func (c *Counters) Show() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var body strings.Builder
	h := fnv.New32a()
	never := 0
	for _, name := range c.order {
		e := c.events[name]
		if e.total == 0 {
			never++
			continue
		}
		fmt.Fprintf(h, "%s%d", name, e.total)
		var last, minute, hour uint64
		if e.ticks > 0 {
			last = e.min[(e.ticks-1)%ticksPerMinute]
		}
		for _, n := range e.min {
			minute += n
		}
		for _, n := range e.hr {
			hour += n
		}
		fmt.Fprintf(&body, "%-24s %5.1f/sec %9.3f/sec %13.4f/sec   total: %d\n", name,
			float64(last)/TickSeconds, float64(minute)/60, float64(hour)/3600, e.total)
	}
	return fmt.Sprintf("Event coverage, avg rate over last: %d seconds, last minute, last hour,  hash=%08x:\n",
		TickSeconds, h.Sum32()) + body.String() + fmt.Sprintf("%d events never hit\n", never)
}
