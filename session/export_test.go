package session

// BreakStream resets the Keepaliver's open streams (the client cancels
// them: the server sees the streams reset), as a broken connection would;
// it reports how many were open.
func (k *Keepaliver) BreakStream() int {
	k.mu.Lock()
	runs := k.runs
	k.mu.Unlock()
	n := 0
	for _, r := range runs {
		if conn, _, _ := r.current(); conn != nil {
			conn.cancel()
			n++
		}
	}
	return n
}

// Mode says which path the Keepaliver uses ("stream" or "once") and why.
func (k *Keepaliver) Mode() (string, string) {
	m, why := k.sendMode()
	return m.String(), why
}
