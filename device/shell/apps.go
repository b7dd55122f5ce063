package shell

import (
	"sort"
	"strings"
	"unicode"

	"github.com/droidgo/droidgo/internal/editdist"
)

// appLabels maps common app labels (lower case) to the packages that carry
// them on popular phones, most common first. The first installed one wins.
var appLabels = map[string][]string{
	"settings":      {"com.android.settings"},
	"clock":         {"com.google.android.deskclock", "com.android.deskclock", "com.sec.android.app.clockpackage"},
	"alarm":         {"com.google.android.deskclock", "com.android.deskclock", "com.sec.android.app.clockpackage"},
	"chrome":        {"com.android.chrome"},
	"browser":       {"com.android.chrome", "com.sec.android.app.sbrowser", "com.android.browser"},
	"camera":        {"com.google.android.GoogleCamera", "com.android.camera2", "com.sec.android.app.camera", "com.android.camera"},
	"phone":         {"com.google.android.dialer", "com.android.dialer", "com.samsung.android.dialer"},
	"dialer":        {"com.google.android.dialer", "com.android.dialer", "com.samsung.android.dialer"},
	"contacts":      {"com.google.android.contacts", "com.android.contacts", "com.samsung.android.app.contacts"},
	"messages":      {"com.google.android.apps.messaging", "com.android.messaging", "com.samsung.android.messaging", "com.android.mms"},
	"gmail":         {"com.google.android.gm"},
	"maps":          {"com.google.android.apps.maps"},
	"google maps":   {"com.google.android.apps.maps"},
	"youtube":       {"com.google.android.youtube"},
	"photos":        {"com.google.android.apps.photos"},
	"gallery":       {"com.google.android.apps.photos", "com.sec.android.gallery3d", "com.android.gallery3d"},
	"calendar":      {"com.google.android.calendar", "com.android.calendar", "com.samsung.android.calendar"},
	"calculator":    {"com.google.android.calculator", "com.android.calculator2", "com.sec.android.app.popupcalculator"},
	"files":         {"com.google.android.apps.nbu.files", "com.google.android.documentsui", "com.android.documentsui", "com.sec.android.app.myfiles"},
	"play store":    {"com.android.vending"},
	"google play":   {"com.android.vending"},
	"google":        {"com.google.android.googlequicksearchbox"},
	"search":        {"com.google.android.googlequicksearchbox"},
	"drive":         {"com.google.android.apps.docs"},
	"keep":          {"com.google.android.keep"},
	"keep notes":    {"com.google.android.keep"},
	"translate":     {"com.google.android.apps.translate"},
	"spotify":       {"com.spotify.music"},
	"whatsapp":      {"com.whatsapp"},
	"telegram":      {"org.telegram.messenger"},
	"instagram":     {"com.instagram.android"},
	"facebook":      {"com.facebook.katana"},
	"firefox":       {"org.mozilla.firefox"},
	"netflix":       {"com.netflix.mediaclient"},
	"recorder":      {"com.google.android.apps.recorder"},
	"fm radio":      {"com.android.fmradio"},
	"music":         {"com.google.android.apps.youtube.music", "com.android.music"},
	"youtube music": {"com.google.android.apps.youtube.music"},
}

// normLabel lower-cases a label and squeezes spaces, so "Play  Store" and
// "play store" match.
func normLabel(s string) string {
	return strings.Join(strings.Fields(strings.ToLower(s)), " ")
}

// resolveLabel maps an app label to an installed package. It tries the
// built-in table, then installed packages whose last name segment equals
// the label without spaces (Chrome -> com.android.chrome). candidates are the
// closest known labels and packages, for the error message.
func resolveLabel(label string, installed []string) (pkg string, candidates []string) {
	n := normLabel(label)
	have := map[string]bool{}
	for _, p := range installed {
		have[p] = true
	}
	for _, p := range appLabels[n] {
		if have[p] {
			return p, nil
		}
	}
	flat := strings.ReplaceAll(n, " ", "")
	for _, p := range installed {
		last := strings.ToLower(p[strings.LastIndexByte(p, '.')+1:])
		if last == flat {
			return p, nil
		}
	}
	return "", closest(n, installed)
}

// closest returns up to 5 labels and installed packages nearest to name by
// edit distance, nearest first.
func closest(name string, installed []string) []string {
	type cand struct {
		s string
		d int
	}
	var cs []cand
	seen := map[string]bool{}
	add := func(s, key string) {
		if seen[s] {
			return
		}
		seen[s] = true
		d := editdist.Levenshtein(name, key)
		if strings.Contains(key, name) || strings.Contains(name, key) {
			d = min(d, 1)
		}
		if d <= max(2, len(name)/2) {
			cs = append(cs, cand{s, d})
		}
	}
	labels := make([]string, 0, len(appLabels))
	for l := range appLabels {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	for _, l := range labels {
		add(titleCase(l), l)
	}
	for _, p := range installed {
		add(p, strings.ToLower(p[strings.LastIndexByte(p, '.')+1:]))
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].d < cs[j].d })
	var out []string
	for i := 0; i < len(cs) && i < 5; i++ {
		out = append(out, cs[i].s)
	}
	return out
}

func titleCase(s string) string {
	r := []rune(s)
	up := true
	for i, c := range r {
		if up {
			r[i] = unicode.ToUpper(c)
		}
		up = c == ' '
	}
	return string(r)
}
