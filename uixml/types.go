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
}

// Center returns the centre point of r.
func (r Rect) Center() (x, y int) { return (r.X1 + r.X2) / 2, (r.Y1 + r.Y2) / 2 }

// Element is one entry of the list the model sees.
type Element struct {
	Index    int    // position in the list, 0-based, document order
	Node     int    // index into Screen.Nodes
	Label    string // what the model is shown as the element's name
	Editable bool
	// Kind is a short role word: "button", "switch", "checkbox", "field",
	// "list", "text", "image", "webview", ... chosen from the class.
	Kind string
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
}
