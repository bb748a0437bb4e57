//go:build !linux

package projections

// dropMapped does nothing outside Linux.
func dropMapped(uintptr, int64) error { return nil }
