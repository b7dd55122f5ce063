//go:build !unix

package spark

// allocAnon allocates n bytes on the Go heap where anonymous mappings are
// not available.
func allocAnon(n int) ([]byte, func() error, error) {
	return make([]byte, n), func() error { return nil }, nil
}

func releasePages([]byte) {}
