package projections

import (
	"fmt"
	"syscall"
)

// dropMapped unmaps the pages of the size bytes mapped at addr
// (MADV_DONTNEED): for a shared file mapping the contents stay in the
// page cache and a later read maps them again.
func dropMapped(addr uintptr, size int64) error {
	if addr == 0 || size <= 0 {
		return nil
	}
	if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, addr, uintptr(size), syscall.MADV_DONTNEED); errno != 0 {
		return fmt.Errorf("projections: madvise: %w", errno)
	}
	return nil
}
