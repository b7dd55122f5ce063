package adbd

import (
	"context"
	"encoding/base64"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/device/shell"
)

const (
	adbKeyboardIME = "com.android.adbkeyboard/.AdbIME"
	defaultDump    = "/sdcard/window_dump.xml"
)

// defaultPackages answer `pm list packages` for phones that do not list
// their own.
var defaultPackages = []string{
	"android", "com.android.systemui", "com.android.settings", "com.google.android.deskclock",
	"com.android.chrome", "com.google.android.apps.messaging", "com.google.android.dialer",
	"com.google.android.contacts", "com.google.android.calculator", "com.google.android.gm",
	"com.google.android.apps.maps", "com.google.android.youtube", "com.android.vending",
	"com.google.android.googlequicksearchbox", "com.google.android.inputmethod.latin",
	"com.google.android.apps.nexuslauncher",
}

// keyNames maps Android key codes back to action-space key names.
var keyNames = func() map[int]string {
	m := map[int]string{}
	for name, code := range action.Keys {
		m[code] = name
	}
	return m
}()

// keycodeNames are the KEYCODE_ constants `input keyevent` also accepts.
var keycodeNames = map[string]int{
	"KEYCODE_BACK": 4, "KEYCODE_HOME": 3, "KEYCODE_ENTER": 66, "KEYCODE_APP_SWITCH": 187,
	"KEYCODE_DEL": 67, "KEYCODE_TAB": 61, "KEYCODE_SEARCH": 84, "KEYCODE_MENU": 82,
	"KEYCODE_VOLUME_UP": 24, "KEYCODE_VOLUME_DOWN": 25, "KEYCODE_POWER": 26,
	"KEYCODE_ESCAPE": 111, "KEYCODE_SPACE": 62, "KEYCODE_DPAD_UP": 19, "KEYCODE_DPAD_DOWN": 20,
	"KEYCODE_DPAD_LEFT": 21, "KEYCODE_DPAD_RIGHT": 22,
}

func (s *Server) phoneCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(s.ctx, 30*time.Second)
}

func (s *Server) packages() []string {
	if pl, ok := s.phone.(PackageLister); ok {
		if p := pl.Packages(); p != nil {
			return p
		}
	}
	p := s.opts.Packages
	if p == nil {
		p = defaultPackages
	}
	if s.opts.ADBKeyboard {
		p = append(append([]string(nil), p...), "com.android.adbkeyboard")
	}
	return p
}

func (s *Server) props() map[string]string {
	p := map[string]string{
		"ro.product.name":          s.opts.Product,
		"ro.product.model":         s.opts.Model,
		"ro.product.device":        s.opts.Device,
		"ro.product.manufacturer":  "droidgo",
		"ro.build.version.sdk":     "34",
		"ro.build.version.release": "14",
		"ro.serialno":              "droidgo-sim",
	}
	for k, v := range s.opts.Props {
		p[k] = v
	}
	return p
}

// run executes one split command line against the phone.
func (s *Server) run(argv []string, o *output) int {
	errf := func(code int, format string, a ...any) int {
		fmt.Fprintf(&o.stderr, format+"\n", a...)
		return code
	}
	ctx, cancel := s.phoneCtx()
	defer cancel()
	switch argv[0] {
	case "echo":
		args := argv[1:]
		nl := "\n"
		if len(args) > 0 && args[0] == "-n" {
			args, nl = args[1:], ""
		}
		fmt.Fprint(&o.stdout, strings.Join(args, " ")+nl)
		return 0
	case "true":
		return 0
	case "false":
		return 1
	case "exit":
		if len(argv) > 1 {
			n, err := strconv.Atoi(argv[1])
			if err != nil {
				return errf(2, "/system/bin/sh: exit: %s: bad number", argv[1])
			}
			return n & 0xff
		}
		return 0
	case "id":
		fmt.Fprintln(&o.stdout, "uid=2000(shell) gid=2000(shell) groups=2000(shell) context=u:r:shell:s0")
		return 0
	case "sleep":
		if len(argv) != 2 {
			return errf(1, "usage: sleep SECONDS")
		}
		f, err := strconv.ParseFloat(argv[1], 64)
		if err != nil || f < 0 || f > 10 {
			return errf(1, "sleep: invalid number '%s'", argv[1])
		}
		select {
		case <-time.After(time.Duration(f * float64(time.Second))):
		case <-ctx.Done():
		}
		return 0
	case "getprop":
		p := s.props()
		if len(argv) > 1 {
			fmt.Fprintln(&o.stdout, p[argv[1]])
			return 0
		}
		keys := make([]string, 0, len(p))
		for k := range p {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&o.stdout, "[%s]: [%s]\n", k, p[k])
		}
		return 0
	case "cat", "rm", "ls", "sha256sum", "df", "mkdir", "chmod", "mv", "dd":
		return s.toybox(argv, o)
	case "uiautomator":
		return s.uiautomator(ctx, argv[1:], o)
	case "input":
		return s.input(ctx, argv[1:], o)
	case "wm":
		if len(argv) >= 2 && argv[1] == "size" {
			w, h, err := s.phone.Size(ctx)
			if err != nil {
				return errf(1, "Error: %v", err)
			}
			if s.opts.Rotation%2 == 1 {
				w, h = h, w
			}
			fmt.Fprintf(&o.stdout, "Physical size: %dx%d\n", w, h)
			return 0
		}
		if len(argv) >= 2 && argv[1] == "density" {
			// A simulated phone has its scenario's density; others a Pixel's.
			dpi := 420
			if p, ok := s.phone.(interface{ Density() int }); ok {
				dpi = p.Density()
			}
			fmt.Fprintf(&o.stdout, "Physical density: %d\n", dpi)
			return 0
		}
		return errf(255, "Error: unknown command '%s'", strings.Join(argv[1:], " "))
	case "monkey":
		return s.monkey(ctx, argv[1:], o)
	case "am":
		return s.am(ctx, argv[1:], o)
	case "pm", "cmd":
		args := argv[1:]
		if argv[0] == "cmd" {
			if len(args) == 0 || args[0] != "package" {
				return errf(1, "cmd: unsupported service in the fake device")
			}
			args = args[1:]
		}
		if len(args) >= 2 && args[0] == "list" && args[1] == "packages" {
			filter := ""
			for _, a := range args[2:] {
				if !strings.HasPrefix(a, "-") {
					filter = a
				}
			}
			for _, p := range s.packages() {
				if strings.Contains(p, filter) {
					fmt.Fprintf(&o.stdout, "package:%s\n", p)
				}
			}
			return 0
		}
		return errf(1, "Error: unsupported pm command in the fake device: %s", strings.Join(args, " "))
	case "dumpsys":
		return s.dumpsys(ctx, argv[1:], o)
	case "settings":
		if len(argv) == 4 && argv[1] == "get" && argv[2] == "secure" && argv[3] == "default_input_method" {
			s.mu.Lock()
			fmt.Fprintln(&o.stdout, s.ime)
			s.mu.Unlock()
			return 0
		}
		if len(argv) >= 3 && argv[1] == "get" {
			fmt.Fprintln(&o.stdout, "null")
			return 0
		}
		return errf(1, "settings: unsupported in the fake device: %s", strings.Join(argv[1:], " "))
	case "ime":
		if len(argv) >= 2 && argv[1] == "list" {
			fmt.Fprintln(&o.stdout, "com.google.android.inputmethod.latin/com.android.inputmethod.latin.LatinIME")
			if s.opts.ADBKeyboard {
				fmt.Fprintln(&o.stdout, adbKeyboardIME)
			}
			return 0
		}
		if len(argv) == 3 && (argv[1] == "set" || argv[1] == "enable") {
			if argv[2] == adbKeyboardIME && !s.opts.ADBKeyboard {
				return errf(1, "Unknown input method %s cannot be selected for user #0", argv[2])
			}
			if argv[1] == "set" {
				s.mu.Lock()
				s.ime = argv[2]
				s.mu.Unlock()
				fmt.Fprintf(&o.stdout, "Input method %s selected for user #0\n", argv[2])
			}
			return 0
		}
		return errf(1, "ime: unsupported in the fake device")
	}
	return errf(127, "/system/bin/sh: %s: inaccessible or not found", argv[0])
}

func (s *Server) uiautomator(ctx context.Context, args []string, o *output) int {
	if len(args) == 0 || args[0] != "dump" {
		fmt.Fprintln(&o.stderr, "Usage: uiautomator <subcommand> [options]")
		return 1
	}
	file := defaultDump
	for _, a := range args[1:] {
		if !strings.HasPrefix(a, "--") {
			file = a
		}
	}
	data, err := s.phone.Dump(ctx)
	if err != nil {
		// uiautomator reports this on stderr and still exits 0.
		fmt.Fprintln(&o.stderr, "ERROR: could not get idle state.")
		return 0
	}
	if file == "/dev/tty" {
		o.stdout.Write(data)
	} else if !s.fs.write(file, data, 0o660) {
		fmt.Fprintf(&o.stderr, "ERROR: could not write %s\n", file)
		return 0
	}
	fmt.Fprintf(&o.stdout, "UI hierchary dumped to: %s\n", file)
	return 0
}

var inputSources = map[string]bool{
	"keyboard": true, "mouse": true, "joystick": true, "touchnavigation": true, "touchpad": true,
	"trackball": true, "dpad": true, "stylus": true, "gamepad": true, "touchscreen": true,
}

func (s *Server) input(ctx context.Context, args []string, o *output) int {
	errf := func(code int, format string, a ...any) int {
		fmt.Fprintf(&o.stderr, format+"\n", a...)
		return code
	}
	if len(args) > 0 && inputSources[args[0]] {
		args = args[1:]
	}
	if len(args) == 0 {
		return errf(1, "Usage: input [<source>] <command> [<arg>...]")
	}
	ints := func(a []string, n int) ([]int, bool) {
		if len(a) < n {
			return nil, false
		}
		out := make([]int, len(a))
		for i, s := range a {
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil, false
			}
			out[i] = int(f)
		}
		return out, true
	}
	var err error
	switch cmd, rest := args[0], args[1:]; cmd {
	case "text":
		// Real input reads one argument; more than one means a quoting
		// mistake upstream, which this fake must make loud.
		if len(rest) != 1 {
			return errf(1, "input text: want exactly one argument, got %d", len(rest))
		}
		err = s.phone.Type(ctx, shell.DecodeInputText(rest[0]))
	case "tap":
		v, ok := ints(rest, 2)
		if !ok || len(v) != 2 {
			return errf(1, "Error: input tap wants X Y")
		}
		err = s.phone.Tap(ctx, v[0], v[1])
	case "swipe", "draganddrop":
		v, ok := ints(rest, 4)
		if !ok || len(v) > 5 {
			return errf(1, "Error: input %s wants X1 Y1 X2 Y2 [DURATION(ms)]", cmd)
		}
		dur := 300
		if len(v) == 5 {
			dur = v[4]
		}
		if cmd == "swipe" && v[0] == v[2] && v[1] == v[3] && dur >= 500 {
			err = s.phone.LongPress(ctx, v[0], v[1])
		} else {
			err = s.phone.Swipe(ctx, v[0], v[1], v[2], v[3], time.Duration(dur)*time.Millisecond)
		}
	case "keyevent", "press":
		codes := rest
		if cmd == "press" {
			codes = []string{"23"}
		}
		if len(codes) > 0 && (codes[0] == "--longpress" || codes[0] == "--doubletap") {
			codes = codes[1:]
		}
		if len(codes) == 0 {
			return errf(1, "Error: input keyevent wants a key code")
		}
		for _, c := range codes {
			n, ok := keycodeNames[c]
			if !ok {
				var perr error
				if n, perr = strconv.Atoi(c); perr != nil {
					return errf(1, "Error: unknown key code %q", c)
				}
			}
			name, ok := keyNames[n]
			if !ok {
				return errf(1, "Error: the fake device cannot press key code %d", n)
			}
			if err = s.phone.Key(ctx, name); err != nil {
				break
			}
		}
	default:
		return errf(1, "Error: Unknown command: %s", cmd)
	}
	if err != nil {
		return errf(1, "Error: %v", err)
	}
	return 0
}

func (s *Server) monkey(ctx context.Context, args []string, o *output) int {
	pkg := ""
	for i := 0; i < len(args); i++ {
		if args[i] == "-p" && i+1 < len(args) {
			pkg = args[i+1]
			i++
		}
	}
	if pkg == "" {
		fmt.Fprintln(&o.stderr, "** Error: monkey needs -p PACKAGE in the fake device")
		return 1
	}
	if err := s.phone.OpenApp(ctx, pkg); err != nil {
		fmt.Fprintln(&o.stdout, "** No activities found to run, monkey aborted.")
		return 252
	}
	fmt.Fprintln(&o.stdout, "Events injected: 1")
	fmt.Fprintln(&o.stdout, "## Network stats: elapsed time=5ms (0ms mobile, 0ms wifi, 5ms not connected)")
	return 0
}

func (s *Server) am(ctx context.Context, args []string, o *output) int {
	if len(args) == 0 {
		fmt.Fprintln(&o.stderr, "usage: am [subcommand] [options]")
		return 1
	}
	flags := map[string]string{}
	extras := map[string]string{}
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch a {
		case "-n", "-a", "-c", "-d", "-t", "--user":
			if i+1 < len(args) {
				flags[a] = args[i+1]
				i++
			}
		case "--es":
			if i+2 < len(args) {
				extras[args[i+1]] = args[i+2]
				i += 2
			}
		}
	}
	switch args[0] {
	case "start", "start-activity":
		cmp := flags["-n"]
		pkg, act, ok := strings.Cut(cmp, "/")
		if !ok || pkg == "" {
			fmt.Fprintln(&o.stderr, "Error: the fake device only starts explicit components (-n PKG/ACTIVITY)")
			return 1
		}
		fmt.Fprintf(&o.stdout, "Starting: Intent { cmp=%s/%s }\n", pkg, act)
		if err := s.phone.OpenApp(ctx, pkg); err != nil {
			fmt.Fprintf(&o.stderr, "Error: Activity class {%s} does not exist.\n", cmp)
			return 1
		}
		return 0
	case "broadcast":
		act := flags["-a"]
		fmt.Fprintf(&o.stdout, "Broadcasting: Intent { act=%s flg=0x400000 (has extras) }\n", act)
		s.mu.Lock()
		active := s.ime == adbKeyboardIME
		s.mu.Unlock()
		if active && (act == "ADB_INPUT_B64" || act == "ADB_INPUT_TEXT") {
			text := extras["msg"]
			if act == "ADB_INPUT_B64" {
				b, err := base64.StdEncoding.DecodeString(text)
				if err != nil {
					fmt.Fprintln(&o.stdout, "Broadcast completed: result=0")
					return 0
				}
				text = string(b)
			}
			if err := s.phone.Type(ctx, text); err != nil {
				fmt.Fprintf(&o.stderr, "Error: %v\n", err)
				return 1
			}
		}
		fmt.Fprintln(&o.stdout, "Broadcast completed: result=0")
		return 0
	case "force-stop":
		return 0
	}
	fmt.Fprintf(&o.stderr, "Error: am %s is not supported by the fake device\n", args[0])
	return 1
}

func (s *Server) dumpsys(ctx context.Context, args []string, o *output) int {
	if len(args) == 0 {
		fmt.Fprintln(&o.stderr, "dumpsys: the fake device needs a service name")
		return 1
	}
	switch args[0] {
	case "window":
		pkg, err := s.phone.CurrentApp(ctx)
		fmt.Fprintln(&o.stdout, "WINDOW MANAGER WINDOWS (dumpsys window windows)")
		if err == nil && pkg != "" {
			fmt.Fprintf(&o.stdout, "  mCurrentFocus=Window{7c1e2a u0 %s/%s.MainActivity}\n", pkg, pkg)
			fmt.Fprintf(&o.stdout, "  mFocusedApp=ActivityRecord{5f3b1d u0 %s/.MainActivity t42}\n", pkg)
		} else {
			fmt.Fprintln(&o.stdout, "  mCurrentFocus=null")
		}
		fmt.Fprintf(&o.stdout, "  mRotation=%d\n", s.opts.Rotation%4)
		return 0
	case "input":
		fmt.Fprintln(&o.stdout, "INPUT MANAGER (dumpsys input)")
		fmt.Fprintf(&o.stdout, "    SurfaceOrientation: %d\n", s.opts.Rotation%4)
		return 0
	}
	return 0
}
