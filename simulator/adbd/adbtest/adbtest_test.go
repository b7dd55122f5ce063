package adbtest

import (
	"context"
	"net"
	"os"
	"testing"
	"time"
)

// TestKillListener checks the fallback Kill relies on when adb ignores
// kill-server: the server process is found by its port and killed.
func TestKillListener(t *testing.T) {
	if _, err := os.Stat("/proc/self/cmdline"); err != nil {
		t.Skip("no /proc on this system")
	}
	s := &Server{ADB: ADB(t), Port: FreePort(t)}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if out, err := s.Run(ctx, "start-server"); err != nil {
		t.Fatalf("start-server: %v %s", err, out)
	}
	t.Cleanup(s.Kill)
	killListener(s.Port)
	for i := 0; i < 100; i++ {
		c, err := net.DialTimeout("tcp", s.Addr(), time.Second)
		if err != nil {
			return
		}
		c.Close()
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the server still listens after killListener")
}
