// Package linkwatch reports kernel network interfaces appearing and
// disappearing, from rtnetlink link notifications.
package linkwatch

import (
	"context"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Event is one change. An Event with an empty Name means notifications
// were lost (the socket overflowed or failed): anything may have changed.
type Event struct {
	Name    string
	Index   int
	Present bool // false: the interface is gone (deleted or moved away)
}

// Logger is the vlog module logger the watcher writes to.
type Logger interface {
	Warnf(format string, args ...any)
}

// Run delivers events to fn, from its own goroutine, until ctx ends. It
// resubscribes after a failure, reporting a loss event first.
func Run(ctx context.Context, log Logger, fn func(Event)) {
	go func() {
		for ctx.Err() == nil {
			ch := make(chan netlink.LinkUpdate, 64)
			done := make(chan struct{})
			err := netlink.LinkSubscribeWithOptions(ch, done, netlink.LinkSubscribeOptions{
				ErrorCallback: func(err error) {
					if ctx.Err() == nil {
						log.Warnf("link notifications: %v", err)
					}
				},
			})
			if err != nil {
				log.Warnf("subscribing to link notifications: %v", err)
				close(done)
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
				continue
			}
			pump(ctx, ch, fn)
			close(done)
			if ctx.Err() == nil {
				fn(Event{})
			}
		}
	}()
}

// pump passes updates on until ch closes (the subscription failed) or ctx
// ends.
func pump(ctx context.Context, ch <-chan netlink.LinkUpdate, fn func(Event)) {
	for {
		select {
		case <-ctx.Done():
			return
		case u, ok := <-ch:
			if !ok {
				return
			}
			attrs := u.Link.Attrs()
			fn(Event{Name: attrs.Name, Index: attrs.Index, Present: u.Header.Type != unix.RTM_DELLINK})
		}
	}
}
