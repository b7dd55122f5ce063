package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/droidgo/droidgo/deploy"
	"github.com/droidgo/droidgo/simulator/adbd"
	"github.com/droidgo/droidgo/simulator/adbd/adbtest"
)

// fakeArm64 writes an arm64 ELF header followed by n random bytes: what
// deploy takes for the phone's droidgo.
func fakeArm64(t *testing.T, path string, n int) []byte {
	t.Helper()
	h := make([]byte, 64)
	copy(h, "\x7fELF\x02\x01\x01")
	binary.LittleEndian.PutUint16(h[16:], 3)   // ET_DYN
	binary.LittleEndian.PutUint16(h[18:], 183) // EM_AARCH64
	binary.LittleEndian.PutUint32(h[20:], 1)
	binary.LittleEndian.PutUint16(h[52:], 64)
	binary.LittleEndian.PutUint16(h[54:], 56)
	binary.LittleEndian.PutUint16(h[58:], 64)
	return writeRandom(t, path, h, n)
}

func writeRandom(t *testing.T, path string, head []byte, n int) []byte {
	t.Helper()
	data := make([]byte, n)
	rand.Read(data)
	data = append(head, data...)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return data
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// deployWant is deploy --json's exact output.
func deployWant(serial string, files ...any) string {
	var parts []string
	for i := 0; i < len(files); i += 3 {
		data := files[i+1].([]byte)
		parts = append(parts, fmt.Sprintf(`{"name":%q,"bytes":%d,"sha256":%q,"copied":%v}`, files[i], len(data), sha(data), files[i+2]))
	}
	return fmt.Sprintf(`{"device":%q,"dir":"/data/local/tmp/droidgo","files":[%s]}`, serial, strings.Join(parts, ",")) + "\n"
}

// TestDeploy deploys to the fake adbd through Debian's adb server: a
// first deploy copies and verifies, a second skips, a transfer cut by a
// pulled cable resumes without sending again the parts that arrived, a
// file corrupted on the phone is found and sent again, and no command
// line is refused by the fake's strict shell.
func TestDeploy(t *testing.T) {
	r := newADBRig(t, "wifi", adbd.Options{}, true)
	dir := t.TempDir()
	bin := filepath.Join(dir, "droidgo-android-arm64")
	binData := fakeArm64(t, bin, 100_000)
	model := filepath.Join(dir, "tiny.gguf")
	modelData := writeRandom(t, model, []byte("GGUF"), 300_000)
	const part = 65536
	args := []string{"deploy", "--binary", bin, "--model", model, "--part-size", strconv.Itoa(part), "--json"}
	phoneFile := func(name string) []byte {
		b, _ := r.fake.ReadFile(deploy.DefaultDir + "/" + name)
		return b
	}
	onPhone := func(t *testing.T) {
		t.Helper()
		if got := phoneFile("droidgo"); sha(got) != sha(binData) {
			t.Errorf("droidgo on the phone: %d bytes, want %d equal", len(got), len(binData))
		}
		if got := phoneFile("tiny.gguf"); sha(got) != sha(modelData) {
			t.Errorf("tiny.gguf on the phone: %d bytes, want %d equal", len(got), len(modelData))
		}
		st, err := os.Stat(r.fake.HostPath(deploy.DefaultDir + "/droidgo"))
		if err != nil || st.Mode().Perm()&0o111 == 0 {
			t.Errorf("droidgo on the phone is not executable: %v %v", st, err)
		}
		names, _ := os.ReadDir(r.fake.HostPath(deploy.DefaultDir))
		if len(names) != 2 {
			t.Errorf("files left in %s: %v, want droidgo and tiny.gguf only", deploy.DefaultDir, names)
		}
	}

	t.Run("first copies", func(t *testing.T) {
		code, out, errs := cli(t, args...)
		if want := deployWant(r.serial, "droidgo", binData, true, "tiny.gguf", modelData, true); code != 0 || out != want {
			t.Fatalf("deploy = %d\n%s\nwant\n%s\nstderr: %s", code, out, want, errs)
		}
		onPhone(t)
		sawSum := false
		for _, c := range r.fake.Commands() {
			if c.Rejected != "" {
				t.Errorf("the phone's shell refused %q: %s", c.Line, c.Rejected)
			}
			sawSum = sawSum || (len(c.Argv) > 0 && c.Argv[0] == "sha256sum")
		}
		if !sawSum {
			t.Error("deploy never ran sha256sum on the phone")
		}
	})
	t.Run("second skips", func(t *testing.T) {
		before := r.fake.SyncBytes()
		code, out, errs := cli(t, args...)
		if want := deployWant(r.serial, "droidgo", binData, false, "tiny.gguf", modelData, false); code != 0 || out != want {
			t.Fatalf("deploy = %d\n%s\nwant\n%s\nstderr: %s", code, out, want, errs)
		}
		if sent := r.fake.SyncBytes() - before; sent != 0 {
			t.Errorf("a deploy of files already there sent %d bytes", sent)
		}
	})
	t.Run("cut resumes", func(t *testing.T) {
		modelData = writeRandom(t, model, []byte("GGUF"), 300_000) // a new model
		before := r.fake.SyncBytes()
		const cut = 2*part + 20_000 // two parts arrive, the third is cut
		r.fake.CutSyncAfter(cut)
		code, out, errs := cli(t, args...)
		if code != 1 || out != "" || !strings.Contains(errs, "run droidgo deploy again") {
			t.Fatalf("deploy with the cable pulled = %d %q %q, want 1 and advice to run it again", code, out, errs)
		}
		if got := r.fake.SyncBytes() - before; got != cut {
			t.Fatalf("the fake took %d bytes before the cut, want %d", got, cut)
		}
		adbtest.Connect(t, r.srv, r.fake) // the cable is back
		before = r.fake.SyncBytes()
		code, out, errs = cli(t, args...)
		if want := deployWant(r.serial, "droidgo", binData, false, "tiny.gguf", modelData, true); code != 0 || out != want {
			t.Fatalf("deploy after the cut = %d\n%s\nwant\n%s\nstderr: %s", code, out, want, errs)
		}
		// The two whole parts that arrived are not sent again.
		if sent, want := r.fake.SyncBytes()-before, int64(len(modelData)-2*part); sent != want {
			t.Errorf("the resumed deploy sent %d bytes, want the %d after the two parts that arrived", sent, want)
		}
		onPhone(t)
	})
	t.Run("corrupted is sent again", func(t *testing.T) {
		bad := append([]byte(nil), modelData...)
		bad[len(bad)/2] ^= 1
		r.fake.WriteFile(deploy.DefaultDir+"/tiny.gguf", bad)
		code, out, errs := cli(t, args...)
		if want := deployWant(r.serial, "droidgo", binData, false, "tiny.gguf", modelData, true); code != 0 || out != want {
			t.Fatalf("deploy over a corrupted model = %d\n%s\nwant\n%s\nstderr: %s", code, out, want, errs)
		}
		onPhone(t)
	})
	t.Run("part corrupted on the way", func(t *testing.T) {
		modelData = writeRandom(t, model, []byte("GGUF"), 300_000) // a new model
		r.fake.CorruptNextPush()
		before := r.fake.SyncBytes()
		code, out, errs := cli(t, args...)
		if want := deployWant(r.serial, "droidgo", binData, false, "tiny.gguf", modelData, true); code != 0 || out != want {
			t.Fatalf("deploy with a part corrupted = %d\n%s\nwant\n%s\nstderr: %s", code, out, want, errs)
		}
		// The phone's sha256sum found the bad part, which was sent again
		// alone.
		if sent, want := r.fake.SyncBytes()-before, int64(len(modelData)+part); sent != want {
			t.Errorf("deploy sent %d bytes, want the file and its first part again, %d", sent, want)
		}
		onPhone(t)
	})
	t.Run("text", func(t *testing.T) {
		code, out, errs := cli(t, args[:len(args)-1]...)
		if code != 0 || !strings.Contains(out, "already there, equal") || !strings.Contains(out, "in /data/local/tmp/droidgo") {
			t.Fatalf("deploy = %d %q %q", code, out, errs)
		}
	})
}

// TestDeployRefusals: too little space on the phone is refused before
// anything is sent, naming the numbers; a program that is not for arm64,
// and no checkout to build one from, are usage errors that say what to do.
func TestDeployRefusals(t *testing.T) {
	r := newADBRig(t, "wifi", adbd.Options{FreeBytes: 200 << 10}, true)
	dir := t.TempDir()
	bin := filepath.Join(dir, "droidgo")
	fakeArm64(t, bin, 50_000)
	model := filepath.Join(dir, "m.gguf")
	writeRandom(t, model, nil, 300_000)

	// Both files, and beside them the biggest part being joined.
	code, out, errs := cli(t, "deploy", "--binary", bin, "--model", model)
	if code != 1 || out != "" || !strings.Contains(errs, "not enough space on the phone") ||
		!strings.Contains(errs, "(204800 bytes) are available") || !strings.Contains(errs, "needs 634.8 KiB (650064 bytes)") {
		t.Errorf("deploy to a full phone = %d %q %q", code, out, errs)
	}
	if n := r.fake.SyncBytes(); n != 0 {
		t.Errorf("a refused deploy sent %d bytes", n)
	}

	self, _ := os.Executable()
	if code, _, errs := cli(t, "deploy", "--binary", self, "--no-model"); code != 2 || !strings.Contains(errs, "not arm64") {
		t.Errorf("deploy of an %s program = %d %q", "x86", code, errs)
	}
	noCheckout := func(d *deps) {
		d.buildAndroid = func(_ context.Context, _ string) error {
			return fmt.Errorf("%w: /tmp is not inside one", deploy.ErrNoCheckout)
		}
	}
	if code, _, errs := cliWith(t, noCheckout, "deploy", "--no-model"); code != 2 || !strings.Contains(errs, "--binary FILE") || !strings.Contains(errs, "GOOS=android") {
		t.Errorf("deploy without a checkout = %d %q", code, errs)
	}
	if code, _, errs := cli(t, "deploy", "--binary", bin, "--no-model", "--dir", "data/x"); code != 2 || !strings.Contains(errs, "absolute") {
		t.Errorf("deploy --dir data/x = %d %q", code, errs)
	}
	// Without --model: the model run would use, here none.
	empty := filepath.Join(dir, "empty.toml")
	os.WriteFile(empty, nil, 0o644)
	noModel := func(d *deps) {
		d.getenv = func(k string) string {
			switch {
			case k == "DROIDGO_CONFIG":
				return empty
			case strings.HasPrefix(k, "DROIDGO_"):
				return ""
			}
			return os.Getenv(k)
		}
		d.defaultModel = func() (string, bool) { return "", false }
	}
	if code, _, errs := cliWith(t, noModel, "deploy", "--binary", bin); code != 2 || !strings.Contains(errs, "no model to copy") {
		t.Errorf("deploy with no model = %d %q", code, errs)
	}
}

// TestFindModule: the checkout is found from inside it, and a directory
// outside one says so.
func TestFindModule(t *testing.T) {
	wd, _ := os.Getwd()
	mod, err := deploy.FindModule(wd)
	if err != nil || filepath.Join(mod, "cmd", "droidgo") != wd {
		t.Errorf("FindModule(%s) = %q, %v", wd, mod, err)
	}
	if _, err := deploy.FindModule(t.TempDir()); !errors.Is(err, deploy.ErrNoCheckout) {
		t.Errorf("FindModule(temp) = %v, want ErrNoCheckout", err)
	}
}

// TestOnPhoneUsage: --on-phone and --detach are refused where they mean
// nothing, before any phone is asked.
func TestOnPhoneUsage(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--on-phone", "--sim", "wifi"}, "not with --sim"},
		{[]string{"run", "--on-phone", "-s", "a", "-s", "b", "x"}, "one phone"},
		{[]string{"run", "--on-phone", "--device", "local", "x"}, "one phone"},
		{[]string{"run", "--on-phone", "--detach", "--step", "x"}, "--step waits"},
		{[]string{"run", "--detach", "--sim", "wifi"}, "--detach keeps a run going on the phone droidgo runs on"},
	} {
		r := newHarness(t).run(context.Background(), tt.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%v = %d %q, want 2 and %q", tt.args, r.code, r.stderr, tt.want)
		}
	}
}
