package reasoning_test

import (
	"fmt"

	"github.com/droidgo/droidgo/model/reasoning"
)

func ExampleSplitter() {
	s := reasoning.NewSplitter(true)
	for _, chunk := range []string{"The switch is 4.</th", "ink>\n<tool_call>tap"} {
		r, content, closed := s.Feed(chunk)
		fmt.Printf("%q %q %v\n", r, content, closed)
	}
	// Output:
	// "The switch is 4." "" false
	// "" "\n<tool_call>tap" true
}
