//go:build !purego && !linux

package kernels

import "errors"

// requestAMX: only Linux has the permission call droidgo knows how to make,
// so AMX is never used elsewhere.
func requestAMX() error { return errors.New("AMX tile state: no permission call on this OS") }
