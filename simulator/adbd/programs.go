package adbd

import (
	"bytes"
	"debug/elf"
	"os"
	"runtime"
	"strings"
)

// programs is how the fake runs the programs pushed to it.
type programs struct {
	land *Userland
	qemu string
}

// QEMUEnv names the emulator the fake userland's sh runs arm64 programs
// with on a computer that is not arm64, as binfmt_misc would.
const QEMUEnv = "DROIDGO_FAKE_QEMU"

// RunPrograms makes the fake's shell run the programs pushed to it (a
// command line whose first word is the path of an executable file of the
// phone), as adbd runs them: with the shell service's pty or pipes, the
// output streamed, the exit status at the end, SIGHUP when the connection
// goes. They run on this machine with land's programs as their PATH (so
// droidgo on the "phone" drives it with --device local); an arm64 program
// runs under the emulator qemu (qemu-aarch64-static) when this machine is
// not arm64, and so does one the userland's sh starts. The phone's paths
// in their arguments (under /data/local/tmp) are given as the files of
// this machine that hold them: qemu-user cannot map the paths of files a
// program creates.
func (s *Server) RunPrograms(land *Userland, qemu string) {
	land.qemu = qemu
	s.mu.Lock()
	s.progs = &programs{land: land, qemu: qemu}
	s.mu.Unlock()
}

// program reports whether line runs a program pushed to the phone, with
// its words.
func (s *Server) program(line string) ([]string, bool) {
	s.mu.Lock()
	on := s.progs != nil
	s.mu.Unlock()
	if !on {
		return nil, false
	}
	argv, err := Split(line)
	if err != nil || len(argv) == 0 || !strings.Contains(argv[0], "/") {
		return nil, false
	}
	f, ok := s.fs.get(argv[0])
	return argv, ok && !f.dir && f.mode&0o111 != 0
}

// tmpDir is the phone's directory whose paths are given to programs as
// this machine's.
const tmpDir = "/data/local/tmp"

// hostArgs turns the phone's paths in argv into this machine's, and puts
// the emulator in front of an arm64 program.
func (s *Server) hostArgs(argv []string) []string {
	out := make([]string, 0, len(argv)+3)
	host := s.fs.host(tmpDir)
	for _, a := range argv {
		out = append(out, replacePath(a, tmpDir, host))
	}
	if s.progs.qemu != "" && needsEmulator(out[0]) {
		out = append([]string{s.progs.qemu, "-cpu", "max"}, out...)
	}
	return out
}

// replacePath replaces the directory dir in word, where it starts a path
// (at the start of the word or after '=' or ':'), by host.
func replacePath(word, dir, host string) string {
	var b strings.Builder
	for {
		i := strings.Index(word, dir)
		if i < 0 {
			b.WriteString(word)
			return b.String()
		}
		end := i + len(dir)
		starts := i == 0 || word[i-1] == '=' || word[i-1] == ':'
		ends := end == len(word) || word[end] == '/' || word[end] == '?'
		b.WriteString(word[:i])
		if starts && ends {
			b.WriteString(host)
		} else {
			b.WriteString(dir)
		}
		word = word[end:]
	}
}

// needsEmulator reports whether path is an arm64 ELF program this machine
// cannot run itself.
func needsEmulator(path string) bool {
	if runtime.GOARCH == "arm64" {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var hdr [20]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil || !bytes.HasPrefix(hdr[:], []byte(elf.ELFMAG)) {
		return false
	}
	ef, err := elf.NewFile(f)
	if err != nil {
		return false
	}
	return ef.Machine == elf.EM_AARCH64
}
