//go:build !unix

package uixml

import "time"

func cpuTime() time.Duration { return 0 }
