package toolparse_test

import (
	"fmt"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/toolparse"
)

func ExampleParse() {
	out := "Element 1 is the Wi-Fi toggle.</think>\n[tap]\n{\"tool\": \"tap\", \"parameters\": {\"index\": \"1\"}"
	r := toolparse.Parse(out, toolparse.Options{InThinking: true})
	fmt.Println(r.Reasoning)
	fmt.Println(r.Calls[0], r.Format)
	for _, s := range r.Recoveries {
		fmt.Println("-", s)
	}
	// Output:
	// Element 1 is the Wi-Fi toggle.
	// tap(index=1) bracket
	// - the call was written as [tap] followed by JSON; read the call from the JSON
	// - the JSON was cut off with 1 bracket(s) still open; closed them at the end of the output
	// - tap: index was the string "1"; used the integer 1
}

func ExampleParseTurn() {
	// A backend split the stream already (model/reasoning); the model
	// imagined the user's reply while thinking, then answered.
	r := toolparse.ParseTurn("The list ends here.<|User|>scroll!", `<tool_call>swipe<arg_key>direction</arg_key><arg_value>up</arg_value></tool_call>`, true, toolparse.Options{})
	fmt.Println(r.Reasoning)
	fmt.Println(r.Calls[0], r.Format)
	for _, s := range r.Recoveries {
		fmt.Println("-", s)
	}
	// Output:
	// The list ends here.
	// swipe(direction="up") native
	// - ignored the reasoning from a user turn the model wrote itself on, up to </think>
}

func ExampleCoerce() {
	call, rec, err := toolparse.Coerce(action.Call{Name: "PressKey", Arguments: map[string]any{"keycode": "KEYCODE_BACK"}}, nil)
	fmt.Println(call, err)
	for _, s := range rec {
		fmt.Println("-", s)
	}
	// Output:
	// press_key(key="back") <nil>
	// - tool name "PressKey" is not exact; read it as "press_key"
	// - press_key has no argument "keycode"; used it as "key"
	// - press_key: key "KEYCODE_BACK" is not one of the exact values; read it as "back"
}

func ExampleRenderNative() {
	fmt.Println(toolparse.RenderNative(action.Call{Name: "swipe", Arguments: map[string]any{"index": int64(2), "direction": "up"}}))
	// Output:
	// <tool_call>swipe<arg_key>direction</arg_key><arg_value>up</arg_value><arg_key>index</arg_key><arg_value>2</arg_value></tool_call>
}
