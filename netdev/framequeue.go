package netdev

import (
	"sync"

	"github.com/govs/govs/datapath/packet"
)

// FrameQueue holds the frames an in-memory port received, for its reader
// to take in batches: the receive side of a dummy port (and of tests'
// ports). Push, Len and Close may be called from any goroutine, Pop from
// one reader at a time.
type FrameQueue struct {
	mu     sync.Mutex // guards frames and closed
	frames [][]byte
	closed bool

	wake chan struct{} // a token when frames becomes non-empty
	done chan struct{} // closed by Close
}

// NewFrameQueue returns an empty, open queue.
func NewFrameQueue() *FrameQueue {
	return &FrameQueue{wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// Push queues frames (not copied) while fewer than limit wait (0: no
// limit); it returns how many it dropped because the queue was full or
// closed.
func (q *FrameQueue) Push(limit int, frames ...[]byte) (dropped int) {
	q.mu.Lock()
	for _, f := range frames {
		if q.closed || limit > 0 && len(q.frames) >= limit {
			dropped++
			continue
		}
		q.frames = append(q.frames, f)
	}
	q.mu.Unlock()
	q.signal()
	return dropped
}

func (q *FrameQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Pop waits until a frame is queued, then hands up to len(pkts) frames to
// fill, oldest first, one per packet, and returns how many; ErrClosed
// once the queue is closed. fill runs with the queue locked.
func (q *FrameQueue) Pop(pkts []*packet.Packet, fill func(p *packet.Packet, frame []byte)) (int, error) {
	for {
		q.mu.Lock()
		if q.closed {
			q.mu.Unlock()
			return 0, ErrClosed
		}
		n := 0
		for n < len(pkts) && len(q.frames) > 0 {
			f := q.frames[0]
			q.frames[0] = nil
			q.frames = q.frames[1:]
			fill(pkts[n], f)
			n++
		}
		more := len(q.frames) > 0
		q.mu.Unlock()
		if more {
			q.signal()
		}
		if n > 0 {
			return n, nil
		}
		select {
		case <-q.wake:
		case <-q.done:
		}
	}
}

// Len returns how many frames wait.
func (q *FrameQueue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.frames)
}

// Close drops the waiting frames; a blocked Pop returns ErrClosed.
func (q *FrameQueue) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		q.closed = true
		q.frames = nil
		close(q.done)
	}
}
