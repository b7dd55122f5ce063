// Package uixml turns uiautomator XML dumps into the indexed element list the
// model reads, and a fingerprint of the screen for progress checks.
package uixml

// Rect is a bounds rectangle [X1,Y1][X2,Y2] in screen pixels.
type Rect struct{ X1, Y1, X2, Y2 int }

// Node is one node of the dump, with its own attributes.
type Node struct {
	Text          string
	Desc          string // content-desc
	ResourceID    string
	Class         string
	Package       string
	Hint          string
	Bounds        Rect
	Checkable     bool
	Checked       bool
	Clickable     bool
	LongClickable bool
	Scrollable    bool
	Focusable     bool
	Focused       bool
	Enabled       bool
	Selected      bool
	Password      bool
	Depth         int
	Parent        int // index into Screen.Nodes, -1 for a root
	Index         int // element index the model sees, -1 if not shown
	// Hidden is set when the dump says the node is not visible to the user
	// (uiautomator2's visible-to-user="false", Appium's displayed="false").
	Hidden bool
	// BadBounds reports a bounds attribute that could not be read; Bounds
	// is then the zero Rect.
	BadBounds bool
}

// Center returns the centre point of r.
func (r Rect) Center() (x, y int) { return (r.X1 + r.X2) / 2, (r.Y1 + r.Y2) / 2 }

// SwipeLine is the stroke of a swipe in direction (up, down, left or
// right: the way the finger moves) across r: 60% of r through its centre,
// so it scrolls without starting on an edge. The agent's swipes and
// `droidgo do swipe` are both drawn here.
func (r Rect) SwipeLine(direction string) (x1, y1, x2, y2 int) {
	cx, cy := r.Center()
	dx, dy := (r.X2-r.X1)*3/10, (r.Y2-r.Y1)*3/10
	switch direction {
	case "up":
		return cx, cy + dy, cx, cy - dy
	case "down":
		return cx, cy - dy, cx, cy + dy
	case "left":
		return cx + dx, cy, cx - dx, cy
	default:
		return cx - dx, cy, cx + dx, cy
	}
}

// LabelSource is where an element's label came from.
type LabelSource string

// Label sources.
const (
	LabelNone     LabelSource = ""
	LabelText     LabelSource = "text"     // the node's text
	LabelDesc     LabelSource = "desc"     // its content description
	LabelHint     LabelSource = "hint"     // a field's hint
	LabelChildren LabelSource = "children" // the texts of the node's descendants
	// LabelRow is the label of the row a switch belongs to, or the texts
	// beside a control that has none.
	LabelRow   LabelSource = "row"
	LabelID    LabelSource = "id"    // the resource-id after ":id/"
	LabelClass LabelSource = "class" // the class's short name
)

// StandIn reports a label that is no name but the resource-id or the
// class standing in for one.
func (l LabelSource) StandIn() bool { return l == LabelID || l == LabelClass }

// Element is one entry of the list the model sees.
type Element struct {
	Index    int    // position in the list, 0-based, document order
	Node     int    // index into Screen.Nodes
	Label    string // what the model is shown as the element's name
	Editable bool   // a text field the model can type into
	// Kind is a short role word: "button", "switch", "checkbox", "field",
	// "list", "text", "image", "webview", ... chosen from the class.
	Kind string
	// LabelFrom says where Label came from.
	LabelFrom LabelSource
	// X, Y is where to tap: the centre of the node's bounds clipped to the
	// screen.
	X, Y int
	// Toggle is the node index of a switch or checkbox that is not clickable
	// on its own and was merged into this row element (tapping the row
	// toggles it), or -1.
	Toggle int
	// Row is the element index of the row a separately tappable switch or
	// checkbox belongs to (tapping the row opens it, tapping the switch
	// toggles it), or -1 (none, or the row was cut).
	Row int
	// Checkable and Checked are the element's effective state: its own, or
	// that of the merged Toggle.
	Checkable, Checked bool
}

// Screen is a parsed dump.
type Screen struct {
	Width, Height int
	Rotation      int
	Nodes         []Node    // every node in document order
	Elements      []Element // what the model sees
	// Truncated reports the document ended early; Nodes holds what parsed.
	Truncated bool
	// Cut is how many elements were left out of the prompt for length.
	Cut int
	// Keyboard reports an on-screen keyboard window beside the app's: its
	// keys are not elements (text is typed, not tapped key by key) and the
	// prompt says the keyboard is open.
	Keyboard bool

	opts Options
}
