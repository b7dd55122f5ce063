package simulator

// A loaded scenario, as the loader (load.go) builds it from the files of
// the scenario format (schema.go) and resolve links it: apps and their
// screens, handlers pointing at the screens and apps they lead to, and the
// success predicate. A phone only reads it.

type appDef struct {
	name    string
	label   string
	pkg     string
	aliases []string
	hidden  bool // no launcher entry: open_app does not know it
	launch  *screenDef
	screens map[string]*screenDef
}

type screenDef struct {
	app        *appDef
	id         string // "app:screen"
	file       string
	windows    []*tnode
	focus      string
	fullscreen bool
	keys       map[string]*handler
	swipes     map[string]*handler
}

type kv struct {
	k string
	v tmpl
}

type handler struct {
	where      string // file and position, for messages
	ifc        []cond
	set        []kv
	toggle     []string
	toggleItem string
	appendTo   string
	appendItem []kv
	focus      string
	key        string
	goTo       *screenDef
	replace    *screenDef
	back, home bool
	open       *appDef
	openT      *tmpl  // open templated from the tapped list entry's fields
	itemList   string // the sim-each list of the node it is attached to
}

type scenario struct {
	info      Info
	meta      Meta
	apps      []*appDef
	home      *appDef
	start     *screenDef
	overlays  []*screenDef
	vars      map[string]string
	lists     map[string][]map[string]string
	clock     int // minutes after midnight
	w, h      int
	density   int // dpi; the screens are drawn for designDensity
	success   successSpec
	byPackage map[string]*appDef
	byName    map[string]*appDef
}

// appsList is the built-in state list of the apps a launcher shows: one
// entry per launchable app of the scenario (see launcherEntries).
const appsList = "apps"

// appsFields are the fields of an entry of appsList.
var appsFields = []string{"name", "label", "package"}

type successSpec struct {
	ifc      []cond
	screen   *screenDef
	app      string
	listName string
	listItem map[string]string
}

// The screens are drawn for a 1080x2400 phone of 420 dpi (a Pixel's). A
// scenario of another density scales every bound by density/designDensity
// on the way out (dumps) and back on the way in (taps, swipes), as a
// layout in dp comes out on such a phone.
const (
	designDensity = 420
	designWidth   = 1080
	designHeight  = 2400
	minDensity    = 120
	maxDensity    = 960
)

// scale turns a length of the drawn screens into the phone's pixels.
func (sc *scenario) scale(v int) int { return v * sc.density / designDensity }

// unscale turns the phone's pixels into the drawn screens' (the nearest).
func (sc *scenario) unscale(v int) int {
	return (v*designDensity + sc.density/2) / sc.density
}
