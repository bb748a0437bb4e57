package eventlog

// EndQuietly ends the consumption's current pull under it, as a client
// library that stopped consuming without a word would: the watchdog is
// left to notice.
func (c *Consumption) EndQuietly() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cc.Stop()
}
