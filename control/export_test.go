package control

// SetTokenSource replaces the random source of tenant ids and API keys,
// so that a test can force a collision.
func SetTokenSource(c *Control, f func(prefix string, n int) (string, error)) { c.newToken = f }
