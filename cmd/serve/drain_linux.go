package main

import (
	"net"
	"os"
	"syscall"
)

// refuseConnections makes the listening socket fd drop connection
// requests from now on: a socket filter passes every TCP segment but
// those with SYN set and ACK clear (a client's first). Handshakes already
// answered complete, and established connections are untouched. A client
// whose request is dropped retries after a second and, the socket closed
// by then, is refused.
func refuseConnections(fd uintptr) error {
	const (
		tcpFlags = 13   // offset of the flags in the TCP header, where the filter starts
		synACK   = 0x12 // SYN | ACK
		syn      = 0x02
	)
	return syscall.AttachLsf(int(fd), []syscall.SockFilter{
		{Code: syscall.BPF_LD | syscall.BPF_B | syscall.BPF_ABS, K: tcpFlags},
		{Code: syscall.BPF_ALU | syscall.BPF_AND | syscall.BPF_K, K: synACK},
		{Code: syscall.BPF_JMP | syscall.BPF_JEQ | syscall.BPF_K, K: syn, Jt: 0, Jf: 1},
		{Code: syscall.BPF_RET | syscall.BPF_K, K: 0},          // a connection request: dropped
		{Code: syscall.BPF_RET | syscall.BPF_K, K: 0xffffffff}, // anything else, whole
	})
}

// acceptQueued accepts every connection waiting in the accept queue of
// the listening socket fd (non-blocking, as Go opens its sockets), and
// none that arrives after the queue is found empty.
func acceptQueued(fd uintptr) ([]net.Conn, error) {
	var conns []net.Conn
	for {
		nfd, _, err := syscall.Accept4(int(fd), syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC)
		switch err {
		case nil:
		case syscall.EINTR, syscall.ECONNABORTED:
			continue
		case syscall.EAGAIN:
			return conns, nil
		default:
			return conns, err
		}
		f := os.NewFile(uintptr(nfd), "accepted")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			return conns, err
		}
		conns = append(conns, c)
	}
}
