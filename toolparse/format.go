package toolparse

import (
	"encoding/json"
	"strings"

	"github.com/droidgo/droidgo/action"
)

// RenderNative renders a call the way Spark writes it and its chat
// template serialises it:
// <tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value></tool_call>,
// string values verbatim, other values as JSON, keys in the order the
// action space declares them.
func RenderNative(call action.Call) string {
	var b strings.Builder
	b.WriteString(tagCall)
	b.WriteString(call.Name)
	for _, k := range call.OrderedKeys(action.Tools) {
		b.WriteString(tagKey)
		b.WriteString(k)
		b.WriteString(tagKeyEnd)
		b.WriteString(tagValue)
		switch v := call.Arguments[k].(type) {
		case string:
			b.WriteString(v)
		default:
			j, err := json.Marshal(v)
			if err != nil {
				j = []byte("null")
			}
			b.Write(j)
		}
		b.WriteString(tagValueEnd)
	}
	b.WriteString(tagCallEnd)
	return b.String()
}
