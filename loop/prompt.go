package loop

import (
	"fmt"
	"strings"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/model"
	"github.com/droidgo/droidgo/uixml"
)

// systemPrompt is kept short: a 1.7B model follows a few plain rules better
// than many, and every token is prefill time on a phone-class CPU. The tool
// schemas travel in ChatRequest.Tools, which the chat template renders.
const systemPrompt = `You operate an Android phone to complete the user's task, one action per turn.
Each turn you get the task, what your past actions did, and the current screen as a numbered element list.
Rules:
- Answer with exactly one tool call. Use element indices from the current screen only.
- To reach something not on the screen, swipe up to scroll, or open the app that has it.
- Check the screen after each action. Do not undo what you did (never switch off a setting you switched on).
- When the screen shows the task is done, call task_complete with a short summary.`

// messages builds the conversation for one step.
func (r *runner) messages() []model.Message {
	var b strings.Builder
	fmt.Fprintf(&b, "Task: %s\n", r.cfg.Task)
	if len(r.history) > 0 {
		b.WriteString("\nPrevious actions:\n")
		h := r.history
		if len(h) > r.cfg.History {
			fmt.Fprintf(&b, "- (%d earlier steps not shown)\n", len(h)-r.cfg.History)
			h = h[len(h)-r.cfg.History:]
		}
		for _, line := range h {
			b.WriteString("- ")
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	if len(r.notes) > 0 {
		b.WriteByte('\n')
		for _, n := range r.notes {
			b.WriteString(n)
			b.WriteByte('\n')
		}
	}
	b.WriteByte('\n')
	if r.screen == nil {
		fmt.Fprintf(&b, "%s: unreadable (%v).\n", model.ScreenHeader, r.dumpErr)
	} else {
		fmt.Fprintf(&b, "%s:\n", model.ScreenHeader)
		b.WriteString(strings.TrimRight(r.screen.Prompt(), "\n"))
		b.WriteByte('\n')
	}
	return []model.Message{
		{Role: model.RoleSystem, Content: systemPrompt},
		{Role: model.RoleUser, Content: b.String()},
	}
}

// corrective is the message sent after an answer without a usable call.
func (r *runner) corrective(problems []string) string {
	var b strings.Builder
	b.WriteString("Your answer had no valid tool call")
	if len(problems) > 0 {
		// The problems quote the answer (an unknown tool's name); they
		// are bounded like the answer sent back.
		fmt.Fprintf(&b, " (%s)", echoAnswer(strings.Join(problems, "; ")))
	}
	b.WriteString(".\nAnswer again with exactly one call of one of these tools: ")
	b.WriteString(strings.Join(action.Names(r.cfg.Tools), ", "))
	b.WriteString(".\n")
	if idx := validIndices(r.screen); idx != "" {
		fmt.Fprintf(&b, "Valid element indices: %s.\n", idx)
	}
	b.WriteString("Format: <tool_call>tap<arg_key>index</arg_key><arg_value>3</arg_value></tool_call>")
	return b.String()
}

// validIndices names the element indices of s, e.g. "0-14", or "" when
// there are none.
func validIndices(s *uixml.Screen) string {
	if s == nil || len(s.Elements) == 0 {
		return ""
	}
	return s.IndexRange()
}
