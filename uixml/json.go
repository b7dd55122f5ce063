package uixml

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
)

// ScreenJSON is the JSON form of a Screen printed by `droidgo screen --json`
// and reused by recordings. Field order is part of the format.
type ScreenJSON struct {
	Width     int           `json:"width"`
	Height    int           `json:"height"`
	Rotation  int           `json:"rotation"`
	Truncated bool          `json:"truncated"`
	Prompt    string        `json:"prompt"`
	Elements  []ElementJSON `json:"elements"`
}

// ElementJSON is one node of the dump in ScreenJSON. Text and Desc are the
// node's own attributes; Label is what the model is shown (empty for a node
// the model is not shown). Index is the element index, -1 for a node the
// model is not shown. Checkable and Checked are the element's effective
// state: a row that absorbed a switch reports the switch's state. Center is
// the tap point: the centre of the bounds clipped to the screen.
type ElementJSON struct {
	Index         int    `json:"index"`
	Label         string `json:"label"`
	Text          string `json:"text"`
	Desc          string `json:"desc"`
	ResourceID    string `json:"resource_id"`
	Class         string `json:"class"`
	Package       string `json:"package"`
	Bounds        [4]int `json:"bounds"`
	Center        [2]int `json:"center"`
	Clickable     bool   `json:"clickable"`
	LongClickable bool   `json:"long_clickable"`
	Checkable     bool   `json:"checkable"`
	Checked       bool   `json:"checked"`
	Scrollable    bool   `json:"scrollable"`
	Focusable     bool   `json:"focusable"`
	Focused       bool   `json:"focused"`
	Enabled       bool   `json:"enabled"`
	Selected      bool   `json:"selected"`
	Password      bool   `json:"password"`
	Editable      bool   `json:"editable"`
	ToggleChecked *bool  `json:"toggle_checked,omitempty"`
}

// JSON returns the screen in its JSON form. With all=false the elements are
// the ones the model sees, in index order; with all=true they are every node
// of the dump in document order, those not shown with index -1.
func (s *Screen) JSON(all bool) ScreenJSON {
	out := ScreenJSON{
		Width: s.Width, Height: s.Height, Rotation: s.Rotation,
		Truncated: s.Truncated, Prompt: s.Prompt(),
		Elements: []ElementJSON{},
	}
	if !all {
		for i := range s.Elements {
			out.Elements = append(out.Elements, s.nodeJSON(s.Elements[i].Node))
		}
		return out
	}
	for i := range s.Nodes {
		out.Elements = append(out.Elements, s.nodeJSON(i))
	}
	return out
}

func (s *Screen) nodeJSON(i int) ElementJSON {
	n := &s.Nodes[i]
	x, y := s.TapPoint(i)
	j := ElementJSON{
		Index: -1, Text: n.Text, Desc: n.Desc, ResourceID: n.ResourceID, Class: n.Class, Package: n.Package,
		Bounds: [4]int{n.Bounds.X1, n.Bounds.Y1, n.Bounds.X2, n.Bounds.Y2}, Center: [2]int{x, y},
		Clickable: n.Clickable, LongClickable: n.LongClickable, Checkable: n.Checkable, Checked: n.Checked,
		Scrollable: n.Scrollable, Focusable: n.Focusable, Focused: n.Focused, Enabled: n.Enabled,
		Selected: n.Selected, Password: n.Password, Editable: isEditable(n),
	}
	if n.Index >= 0 && n.Index < len(s.Elements) {
		e := &s.Elements[n.Index]
		j.Index, j.Label = e.Index, e.Label
		if e.Toggle >= 0 && e.Toggle < len(s.Nodes) {
			on := s.Nodes[e.Toggle].Checked
			j.ToggleChecked = &on
		}
	}
	return j
}

// WriteJSON writes JSON(all) to w as one line, the bytes json.Encoder (with
// HTML escaping off) would write, but one element at a time: the form of a
// dump of hundreds of thousands of nodes is not built in memory at once.
func (s *Screen) WriteJSON(w io.Writer, all bool) error {
	bw := bufio.NewWriter(w)
	head, err := marshal(struct {
		Width     int    `json:"width"`
		Height    int    `json:"height"`
		Rotation  int    `json:"rotation"`
		Truncated bool   `json:"truncated"`
		Prompt    string `json:"prompt"`
	}{s.Width, s.Height, s.Rotation, s.Truncated, s.Prompt()})
	if err != nil {
		return err
	}
	bw.Write(head[:len(head)-1]) // without the closing brace
	bw.WriteString(`,"elements":[`)
	n := len(s.Elements)
	if all {
		n = len(s.Nodes)
	}
	for i := range n {
		if i > 0 {
			bw.WriteByte(',')
		}
		node := i
		if !all {
			node = s.Elements[i].Node
		}
		el, err := marshal(s.nodeJSON(node))
		if err != nil {
			return err
		}
		bw.Write(el)
	}
	bw.WriteString("]}\n")
	return bw.Flush()
}

// marshal is json.Marshal without HTML escaping, as droidgo prints JSON.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
