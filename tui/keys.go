package tui

import "charm.land/bubbles/v2/key"

// keyMap is every key the UI answers to. The help line shows the ones that
// apply in the current state (see ui.helpKeys).
type keyMap struct {
	Pause    key.Binding
	StepMode key.Binding
	NextPane key.Binding
	PrevPane key.Binding
	Up       key.Binding
	Down     key.Binding
	PageUp   key.Binding
	PageDown key.Binding
	Top      key.Binding
	Bottom   key.Binding
	Help     key.Binding
	Quit     key.Binding

	Approve key.Binding
	Skip    key.Binding
	Edit    key.Binding
	Abort   key.Binding

	Apply  key.Binding
	Cancel key.Binding

	NextPhone key.Binding
	PrevPhone key.Binding
}

func defaultKeys() keyMap {
	return keyMap{
		Pause:    key.NewBinding(key.WithKeys("p", "space"), key.WithHelp("p", "pause")),
		StepMode: key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "step mode")),
		NextPane: key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "pane")),
		PrevPane: key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "prev pane")),
		Up:       key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:     key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		PageUp:   key.NewBinding(key.WithKeys("pgup", "b"), key.WithHelp("pgup", "page up")),
		PageDown: key.NewBinding(key.WithKeys("pgdown", "f"), key.WithHelp("pgdn", "page down")),
		Top:      key.NewBinding(key.WithKeys("home", "g"), key.WithHelp("g", "top")),
		Bottom:   key.NewBinding(key.WithKeys("end", "G"), key.WithHelp("G", "follow")),
		Help:     key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "keys")),
		Quit:     key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),

		Approve: key.NewBinding(key.WithKeys("y", "enter"), key.WithHelp("y", "approve")),
		Skip:    key.NewBinding(key.WithKeys("n"), key.WithHelp("n", "skip")),
		Edit:    key.NewBinding(key.WithKeys("e"), key.WithHelp("e", "edit")),
		Abort:   key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "abort")),

		Apply:  key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "run edited call")),
		Cancel: key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back")),

		NextPhone: key.NewBinding(key.WithKeys("]"), key.WithHelp("]/[/1-9", "phone")),
		PrevPhone: key.NewBinding(key.WithKeys("["), key.WithHelp("[", "previous phone")),
	}
}

// helpKeys adapts a list of bindings to help.KeyMap.
type helpKeys struct {
	short []key.Binding
	full  [][]key.Binding
}

func (h helpKeys) ShortHelp() []key.Binding  { return h.short }
func (h helpKeys) FullHelp() [][]key.Binding { return h.full }
