package simulator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
)

// Info describes a scenario.
type Info struct {
	Name        string `json:"name"`
	Task        string `json:"task"`
	Description string `json:"description"`
}

// The JSON files of the scenario format, decoded strictly (decodeStrict);
// fixtures/README.md describes them. The loader (load.go) checks them and
// builds the loaded scenario (scenario.go).

type scenarioJSON struct {
	Task        string                         `json:"task"`
	Description string                         `json:"description"`
	Apps        []string                       `json:"apps"`
	Home        string                         `json:"home"`
	Start       string                         `json:"start"`
	State       map[string]string              `json:"state"`
	Lists       map[string][]map[string]string `json:"lists"`
	Clock       string                         `json:"clock"`
	Width       int                            `json:"width"`
	Height      int                            `json:"height"`
	Density     int                            `json:"density"`
	Success     *successJSON                   `json:"success"`
	Eval        *Meta                          `json:"eval"`
}

// Meta is what a benchmark needs to know about a scenario beyond its
// success predicate (the "eval" object of scenario.json). The simulator
// only checks it; droidgo eval uses it.
type Meta struct {
	// App names the app the task is about, for reports ("Settings").
	App string `json:"app,omitempty"`
	// Difficulty is "easy", "medium" or "hard".
	Difficulty string `json:"difficulty,omitempty"`
	// HumanSteps is how many actions a person needs.
	HumanSteps int `json:"human_steps,omitempty"`
	// Answer lists what the summary of task_complete must contain
	// (ignoring case), for tasks whose result is information.
	Answer []string `json:"answer,omitempty"`
	// Infeasible marks a task that cannot be done on this phone: the
	// right move is to stop and say so.
	Infeasible bool `json:"infeasible,omitempty"`
	// VariantOf names the scenario this one varies (the same task on a
	// perturbed phone): the recorded runs of that one replay here.
	VariantOf string `json:"variant_of,omitempty"`
	// Replay is what a replay of VariantOf's runs must do on this phone:
	// "stop" (with its report: the phone disagrees with the recording),
	// or "" to carry out every step and end as recorded.
	Replay string `json:"replay,omitempty"`
}

// ReplayStop is Meta.Replay of a perturbed phone on which a replay must
// stop.
const ReplayStop = "stop"

type successJSON struct {
	If      []string     `json:"if"`
	Screen  string       `json:"screen"`
	App     string       `json:"app"`
	ListHas *listHasJSON `json:"list_has"`
}

type listHasJSON struct {
	List string            `json:"list"`
	Item map[string]string `json:"item"`
}

type appJSON struct {
	Label   string                         `json:"label"`
	Package string                         `json:"package"`
	Aliases []string                       `json:"aliases"`
	Hidden  bool                           `json:"hidden"`
	Launch  string                         `json:"launch"`
	State   map[string]string              `json:"state"`
	Lists   map[string][]map[string]string `json:"lists"`
	Screens map[string]*screenJSON         `json:"screens"`
}

type systemJSON struct {
	Package  string                 `json:"package"`
	State    map[string]string      `json:"state"`
	Overlays []*screenJSON          `json:"overlays"`
	Screens  map[string]*screenJSON `json:"screens"`
}

type screenJSON struct {
	File       string                  `json:"file"`
	Focus      string                  `json:"focus"`
	Fullscreen bool                    `json:"fullscreen"`
	OnTap      []*handlerJSON          `json:"on_tap"`
	OnLong     []*handlerJSON          `json:"on_long_press"`
	Keys       map[string]*handlerJSON `json:"keys"`
	Swipes     map[string]*handlerJSON `json:"swipes"`
}

type selectorJSON struct {
	ID   string `json:"id"`
	Text string `json:"text"`
	Desc string `json:"desc"`
}

type handlerJSON struct {
	Target     *selectorJSON     `json:"target"`
	If         []string          `json:"if"`
	Set        map[string]string `json:"set"`
	Toggle     []string          `json:"toggle"`
	ToggleItem string            `json:"toggle_item"`
	Append     *listHasJSON      `json:"append"`
	Focus      string            `json:"focus"`
	Key        string            `json:"key"`
	Go         string            `json:"go"`
	Replace    string            `json:"replace"`
	Back       bool              `json:"back"`
	Home       bool              `json:"home"`
	Open       string            `json:"open"`
}

// decodeStrict decodes JSON and rejects unknown fields, so a typo in a
// fixture is an error instead of a silently ignored setting.
func decodeStrict(fsys fs.FS, file string, v any) error {
	data, err := fs.ReadFile(fsys, file)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line := 1 + bytes.Count(data[:se.Offset], []byte("\n"))
			return fmt.Errorf("%s:%d: malformed JSON: %w", file, line, err)
		}
		return fmt.Errorf("%s: %w", file, err)
	}
	return nil
}

func checkMeta(m *Meta) error {
	switch m.Difficulty {
	case "", "easy", "medium", "hard":
	default:
		return fmt.Errorf("difficulty %q is not easy, medium or hard", m.Difficulty)
	}
	switch m.Replay {
	case "", ReplayStop:
	default:
		return fmt.Errorf("replay %q is not %q (or absent)", m.Replay, ReplayStop)
	}
	if m.Replay != "" && m.VariantOf == "" {
		return errors.New("replay needs variant_of: the scenario whose runs replay here")
	}
	if m.HumanSteps < 0 {
		return fmt.Errorf("human_steps must not be negative, not %d", m.HumanSteps)
	}
	for _, a := range m.Answer {
		if strings.TrimSpace(a) == "" {
			return errors.New("an answer is empty")
		}
	}
	return nil
}
