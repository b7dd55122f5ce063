package shell

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

var (
	physicalSizeRE  = regexp.MustCompile(`Physical size:\s*(\d+)x(\d+)`)
	overrideSizeRE  = regexp.MustCompile(`Override size:\s*(\d+)x(\d+)`)
	surfaceOrientRE = regexp.MustCompile(`SurfaceOrientation:\s*(\d)`)
	rotationRE      = regexp.MustCompile(`mCurrentRotation=(?:ROTATION_)?(\d+)|mRotation=(\d)`)
	// focusRE finds PACKAGE/ACTIVITY inside mCurrentFocus / mFocusedApp lines.
	focusRE = regexp.MustCompile(`\b([a-zA-Z][a-zA-Z0-9_]*(?:\.[a-zA-Z0-9_]+)+)/[^\s}]+`)
)

// ParseWMSize reads `wm size` output. An override size, when set, wins: it is
// what apps and input use.
func ParseWMSize(out string) (w, h int, err error) {
	m := overrideSizeRE.FindStringSubmatch(out)
	if m == nil {
		m = physicalSizeRE.FindStringSubmatch(out)
	}
	if m == nil {
		return 0, 0, fmt.Errorf("cannot read screen size from `wm size` output %q", short(strings.TrimSpace(out)))
	}
	w, _ = strconv.Atoi(m[1])
	h, _ = strconv.Atoi(m[2])
	if w <= 0 || h <= 0 || w > 100000 || h > 100000 {
		return 0, 0, fmt.Errorf("implausible screen size %dx%d from `wm size`", w, h)
	}
	return w, h, nil
}

// ParseOrientation reads the display rotation (0-3, quarter turns) from
// `dumpsys input` (SurfaceOrientation) or `dumpsys window` (mCurrentRotation,
// mRotation). ok is false when neither is present.
func ParseOrientation(out string) (rot int, ok bool) {
	if m := surfaceOrientRE.FindStringSubmatch(out); m != nil {
		r, _ := strconv.Atoi(m[1])
		return r % 4, true
	}
	if m := rotationRE.FindStringSubmatch(out); m != nil {
		s := m[1]
		if s == "" {
			s = m[2]
		}
		r, _ := strconv.Atoi(s)
		if r >= 90 {
			r /= 90
		}
		return r % 4, true
	}
	return 0, false
}

// ParseCurrentApp reads the foreground package from `dumpsys window` output:
// mCurrentFocus first, then mFocusedApp (the focus may be a system window
// without a package, such as the status bar).
func ParseCurrentApp(out string) (string, bool) {
	for _, key := range []string{"mCurrentFocus=", "mFocusedApp="} {
		for _, line := range strings.Split(out, "\n") {
			i := strings.Index(line, key)
			if i < 0 {
				continue
			}
			if m := focusRE.FindStringSubmatch(line[i+len(key):]); m != nil {
				return m[1], true
			}
		}
	}
	return "", false
}

// ParsePackages reads `pm list packages` output.
func ParsePackages(out string) []string {
	var pkgs []string
	for _, line := range strings.Split(out, "\n") {
		p, ok := strings.CutPrefix(strings.TrimSpace(line), "package:")
		if ok && IsPackageName(p) {
			pkgs = append(pkgs, p)
		}
	}
	return pkgs
}

func short(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}
