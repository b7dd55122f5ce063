package shell

import (
	"slices"
	"testing"
)

func TestParseWMSize(t *testing.T) {
	tests := []struct {
		in   string
		w, h int
		ok   bool
	}{
		{"Physical size: 1080x2400\n", 1080, 2400, true},
		{"Physical size: 1440x3120\nOverride size: 1080x2340\n", 1080, 2340, true},
		{"", 0, 0, false},
		{"Physical size: 0x0", 0, 0, false},
		{"error", 0, 0, false},
	}
	for _, tt := range tests {
		w, h, err := ParseWMSize(tt.in)
		if (err == nil) != tt.ok || w != tt.w || h != tt.h {
			t.Errorf("ParseWMSize(%q) = %d,%d,%v", tt.in, w, h, err)
		}
	}
}

func TestParseOrientation(t *testing.T) {
	tests := []struct {
		in  string
		rot int
		ok  bool
	}{
		{"  Viewport INTERNAL...\n      SurfaceOrientation: 1\n", 1, true},
		{"mCurrentRotation=ROTATION_270 ...", 3, true},
		{"mCurrentRotation=ROTATION_0", 0, true},
		{"  mRotation=2 mAltOrientation=false", 2, true},
		{"nothing here", 0, false},
	}
	for _, tt := range tests {
		r, ok := ParseOrientation(tt.in)
		if r != tt.rot || ok != tt.ok {
			t.Errorf("ParseOrientation(%q) = %d,%v", tt.in, r, ok)
		}
	}
}

func TestParseCurrentApp(t *testing.T) {
	tests := []struct{ in, want string }{
		{"  mCurrentFocus=Window{a1b2 u0 com.android.settings/com.android.settings.Settings}\n", "com.android.settings"},
		{"  mCurrentFocus=Window{a1b2 u0 StatusBar}\n  mFocusedApp=ActivityRecord{5f u0 com.google.android.deskclock/com.android.deskclock.DeskClock t12}\n", "com.google.android.deskclock"},
		{"  mCurrentFocus=null\n  mFocusedApp=null\n", ""},
		{"mFocusedApp=AppWindowToken{1 token=Token{2 ActivityRecord{3 u0 com.android.chrome/org.chromium.chrome.browser.ChromeTabbedActivity t5}}}", "com.android.chrome"},
	}
	for _, tt := range tests {
		got, _ := ParseCurrentApp(tt.in)
		if got != tt.want {
			t.Errorf("ParseCurrentApp(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestResolveLabel(t *testing.T) {
	installed := []string{"com.android.settings", "com.sec.android.app.clockpackage", "com.android.chrome", "org.telegram.messenger", "com.example.weather"}
	tests := []struct {
		label, want string
		candHas     string
	}{
		{"Settings", "com.android.settings", ""},
		{"clock", "com.sec.android.app.clockpackage", ""},
		{"CHROME", "com.android.chrome", ""},
		{"Weather", "com.example.weather", ""},
		{"Telegram", "org.telegram.messenger", ""},
		{"Setings", "", "Settings"},
		{"Camra", "", "Camera"},
		{"zzzzzzzzzzzzzzzz", "", ""},
	}
	for _, tt := range tests {
		got, cands := resolveLabel(tt.label, installed)
		if got != tt.want {
			t.Errorf("resolveLabel(%q) = %q, want %q", tt.label, got, tt.want)
		}
		if tt.candHas != "" && !slices.Contains(cands, tt.candHas) {
			t.Errorf("resolveLabel(%q) candidates %q lack %q", tt.label, cands, tt.candHas)
		}
		if tt.want == "" && tt.candHas == "" && len(cands) != 0 {
			t.Errorf("resolveLabel(%q) candidates %q, want none", tt.label, cands)
		}
	}
}

func TestParsePackages(t *testing.T) {
	got := ParsePackages("package:com.a.b\npackage:bad name\r\npackage:org.x.y\r\njunk\n")
	if !slices.Equal(got, []string{"com.a.b", "org.x.y"}) {
		t.Errorf("ParsePackages = %q", got)
	}
}
