package socket

import (
	"context"
	"net"

	"github.com/gorilla/websocket"
)

// SetDial makes c dial its websockets with dial: a test's in-memory
// network.
func SetDial(c *Client, dial func(ctx context.Context, network, addr string) (net.Conn, error)) {
	c.dialer = &websocket.Dialer{NetDialContext: dial, HandshakeTimeout: handshakeTimeout}
}
