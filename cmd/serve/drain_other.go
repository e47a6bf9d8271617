//go:build !linux

package main

import "net"

// refuseConnections does nothing here: connection requests go on being
// accepted until the socket is closed.
func refuseConnections(fd uintptr) error { return nil }

// acceptQueued takes nothing here: the server's Accept takes what arrives
// during the grace.
func acceptQueued(fd uintptr) ([]net.Conn, error) { return nil, nil }
