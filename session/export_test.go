package session

// BreakStream resets the Keepaliver's current stream (the client cancels
// it: the server sees the stream reset), as a broken connection would; it
// reports whether a stream was open.
func (k *Keepaliver) BreakStream() bool {
	k.mu.Lock()
	r := k.run
	k.mu.Unlock()
	if r == nil {
		return false
	}
	conn, _, _ := r.current()
	if conn == nil {
		return false
	}
	conn.cancel()
	return true
}
