// Package freeport picks a TCP port on 127.0.0.1 for a server another
// process will bind: a NATS node, a worker's HTTP listener, a spawned
// Postgres.
//
// Asking the kernel for port 0 and closing the listener hands out a port
// from the ephemeral range (ip_local_port_range, 32768–60999 by default),
// the same range the kernel takes the local port of every outgoing
// connection from; on a machine busy with connections (tests that open
// Postgres pools and NATS clients by the hundred) one of them can take the
// port before the server binds it, and the server fails with "address
// already in use". Pick draws from below that range instead, where no
// outgoing connection lands, and never hands out the same port twice in a
// process. Another process can still bind a port Pick returned before the
// server does; that takes it choosing the same of 12,000 ports in that
// moment.
package freeport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
)

// The ports Pick draws from: registered ports below the default ephemeral
// range, above the ones services usually take.
const (
	First = 20000
	Last  = 32767
)

var (
	mu    sync.Mutex
	given = map[int]bool{}
)

// Pick returns a port on 127.0.0.1 that nothing listens on now and that
// Pick has not returned before in this process.
func Pick() (int, error) {
	mu.Lock()
	defer mu.Unlock()
	for range 200 {
		p := First + rand.IntN(Last-First+1)
		if given[p] {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue
		}
		l.Close()
		given[p] = true
		return p, nil
	}
	return 0, errors.New("freeport: no free port found between " + fmt.Sprint(First) + " and " + fmt.Sprint(Last))
}
