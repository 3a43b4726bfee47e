package connmgr

import (
	"sync"
	"time"
)

// Packet-in rate limits, as OVS's Controller columns and pinsched.c:
// controller_rate_limit is packets per second (at least 100),
// controller_burst_limit how many may go at once (at least 25; a quarter
// of the rate by default).
const (
	minRateLimit  = 100
	minBurstLimit = 25
)

// WithRateLimit returns c with its packet-in limits (the
// controller_rate_limit and controller_burst_limit columns; nil rate:
// unlimited).
func (c Controller) WithRateLimit(rate, burst *int) Controller {
	c.RateLimit, c.BurstLimit = 0, 0
	if rate == nil || *rate <= 0 {
		return c
	}
	c.RateLimit = max(*rate, minRateLimit)
	c.BurstLimit = c.RateLimit / 4
	if burst != nil && *burst > 0 {
		c.BurstLimit = *burst
	}
	c.BurstLimit = max(c.BurstLimit, minBurstLimit)
	return c
}

// pinsched limits one connection's packet-ins as OVS's pinsched: a token
// bucket refilled at rate per second that holds at most burst tokens,
// each packet-in taking one; a packet-in without a token waits in a queue
// of at most burst, and beyond that is dropped. OVS keeps one queue per
// input port served round-robin; this one is a single FIFO.
type pinsched struct {
	rate, burst int
	send        func([]byte) error
	now         func() time.Time // time.Now; tests replace it

	mu      sync.Mutex // guards the fields below; held while sending, to keep order
	tokens  float64
	last    time.Time
	queue   [][]byte
	timer   *time.Timer
	stopped bool
	// queued, sent and dropped count packet-ins: delayed, sent, lost.
	queued, sent, dropped uint64
}

func newPinsched(rate, burst int, send func([]byte) error) *pinsched {
	return &pinsched{rate: rate, burst: burst, send: send, now: time.Now, tokens: float64(burst), last: time.Now()}
}

// refill adds the tokens earned since the last call. p.mu held.
func (p *pinsched) refill(now time.Time) {
	p.tokens = min(float64(p.burst), p.tokens+now.Sub(p.last).Seconds()*float64(p.rate))
	p.last = now
}

// submit sends b now if a token is free and nothing waits, queues it
// otherwise, or drops it when the queue is full.
func (p *pinsched) submit(b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	p.refill(p.now())
	if len(p.queue) == 0 && p.tokens >= 1 {
		p.tokens--
		p.sent++
		p.send(b)
		return
	}
	if len(p.queue) >= p.burst {
		p.dropped++
		return
	}
	p.queue = append(p.queue, b)
	p.queued++
	p.arm()
}

// arm schedules drain for when the next token is due. p.mu held.
func (p *pinsched) arm() {
	if p.timer != nil || len(p.queue) == 0 {
		return
	}
	wait := time.Duration((1 - p.tokens) / float64(p.rate) * float64(time.Second))
	p.timer = time.AfterFunc(max(wait, time.Millisecond), p.drain)
}

// drain sends the queued packet-ins the tokens allow.
func (p *pinsched) drain() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.timer = nil
	if p.stopped {
		return
	}
	p.refill(p.now())
	for len(p.queue) > 0 && p.tokens >= 1 {
		p.tokens--
		p.sent++
		p.send(p.queue[0])
		p.queue[0] = nil
		p.queue = p.queue[1:]
	}
	p.arm()
}

// stop drops what waits and sends nothing more.
func (p *pinsched) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped = true
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	p.queue = nil
}
