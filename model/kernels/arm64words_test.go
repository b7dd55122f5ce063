package kernels

import (
	"bufio"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestArm64Words decodes every WORD-encoded instruction of the arm64
// assembly (the ones Go's assembler lacks: SDOT, SMMLA, vector MLA, SCVTF,
// ...) with binutils' aarch64 objdump and compares it with the mnemonic in
// its comment, so a wrong bit cannot hide behind the right name. It needs no
// arm64 CPU. It skips without aarch64-linux-gnu-objdump unless
// DROIDGO_REQUIRE_BINUTILS_ARM64=1.
func TestArm64Words(t *testing.T) {
	objdump, err := exec.LookPath("aarch64-linux-gnu-objdump")
	if err != nil {
		if os.Getenv("DROIDGO_REQUIRE_BINUTILS_ARM64") == "1" {
			t.Fatal("DROIDGO_REQUIRE_BINUTILS_ARM64=1 but aarch64-linux-gnu-objdump is not installed (apt-get install binutils-aarch64-linux-gnu)")
		}
		t.Skip("aarch64-linux-gnu-objdump not installed: arm64 WORD encodings NOT checked (apt-get install binutils-aarch64-linux-gnu)")
	}
	word := regexp.MustCompile(`WORD \$(0x[0-9a-fA-F]+) // (.*)$`)
	files, _ := filepath.Glob("*_arm64.s")
	if len(files) < 7 {
		t.Fatalf("%d arm64 assembly files, want at least 7", len(files))
	}
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			fh, err := os.Open(f)
			if err != nil {
				t.Fatal(err)
			}
			defer fh.Close()
			var code []byte
			var want []string
			words := 0 // lines with a WORD directive, which the pattern must all match
			sc := bufio.NewScanner(fh)
			for sc.Scan() {
				if strings.Contains(sc.Text(), "WORD $") {
					words++
				}
				m := word.FindStringSubmatch(sc.Text())
				if m == nil {
					continue
				}
				v, err := strconv.ParseUint(m[1], 0, 32)
				if err != nil {
					t.Fatal(err)
				}
				code = binary.LittleEndian.AppendUint32(code, uint32(v))
				want = append(want, m[1]+" "+m[2])
			}
			if err := sc.Err(); err != nil {
				t.Fatal(err)
			}
			if len(want) != words {
				t.Fatalf("%d WORD directives, %d of them \"WORD $hex // mnemonic\"", words, len(want))
			}
			if len(want) == 0 {
				t.Skip("no WORD-encoded instructions")
			}
			bin := filepath.Join(t.TempDir(), "words.bin")
			if err := os.WriteFile(bin, code, 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(objdump, "-D", "-b", "binary", "-m", "aarch64", bin).CombinedOutput()
			if err != nil {
				t.Fatalf("objdump: %v\n%s", err, out)
			}
			// Instruction lines are "   off:\tbytes \tmnemonic operands".
			var got []string
			for _, line := range strings.Split(string(out), "\n") {
				parts := strings.Split(line, "\t")
				if len(parts) >= 3 && strings.HasSuffix(strings.TrimSpace(parts[0]), ":") {
					got = append(got, strings.Join(parts[2:], " "))
				}
			}
			if len(got) != len(want) {
				t.Fatalf("objdump decoded %d instructions, the file has %d WORDs", len(got), len(want))
			}
			norm := func(s string) string { return strings.Join(strings.Fields(strings.ToLower(s)), " ") }
			bad := 0
			for i, w := range want {
				hex, mnem, _ := strings.Cut(w, " ")
				if norm(got[i]) != norm(mnem) {
					t.Errorf("%s: comment %q, objdump %q", hex, mnem, got[i])
					if bad++; bad > 10 {
						t.FailNow()
					}
				}
			}
			t.Logf("%d WORDs decode to their comments", len(want))
		})
	}
}
