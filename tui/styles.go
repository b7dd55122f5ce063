package tui

import (
	"charm.land/bubbles/v2/help"
	"charm.land/lipgloss/v2"
)

// styles holds every style of the UI, so the look is changed in one place.
// Colours are basic ANSI ones (they follow the terminal's palette, light or
// dark); the renderer downsamples or strips them for the detected colour
// profile, which honours NO_COLOR. Nothing relies on colour alone: the
// focused pane has a heavy border, the target element a ▶ marker, and states
// are spelled out in words.
type styles struct {
	title      lipgloss.Style
	task       lipgloss.Style
	status     lipgloss.Style
	badge      lipgloss.Style
	badgeAlert lipgloss.Style

	border        lipgloss.Style
	borderFocused lipgloss.Style
	paneTitle     lipgloss.Style

	thinking  lipgloss.Style
	answer    lipgloss.Style
	separator lipgloss.Style
	faint     lipgloss.Style

	target   lipgloss.Style
	index    lipgloss.Style
	kind     lipgloss.Style
	stepNum  lipgloss.Style
	call     lipgloss.Style
	good     lipgloss.Style
	bad      lipgloss.Style
	warn     lipgloss.Style
	recovery lipgloss.Style

	prompt lipgloss.Style
	reason lipgloss.Style
	errMsg lipgloss.Style

	help help.Styles
}

func defaultStyles() styles {
	var (
		cyan    = lipgloss.Cyan
		green   = lipgloss.Green
		red     = lipgloss.Red
		yellow  = lipgloss.Yellow
		magenta = lipgloss.Magenta
		grey    = lipgloss.BrightBlack
	)
	h := help.DefaultDarkStyles()
	h.ShortKey = lipgloss.NewStyle().Bold(true)
	h.ShortDesc = lipgloss.NewStyle().Foreground(grey)
	h.ShortSeparator = lipgloss.NewStyle().Foreground(grey)
	h.FullKey = h.ShortKey
	h.FullDesc = h.ShortDesc
	h.FullSeparator = h.ShortSeparator
	h.Ellipsis = h.ShortSeparator
	return styles{
		title:      lipgloss.NewStyle().Bold(true).Foreground(cyan),
		task:       lipgloss.NewStyle().Bold(true),
		status:     lipgloss.NewStyle().Foreground(grey),
		badge:      lipgloss.NewStyle().Bold(true).Foreground(cyan),
		badgeAlert: lipgloss.NewStyle().Bold(true).Foreground(yellow),

		border:        lipgloss.NewStyle().Foreground(grey),
		borderFocused: lipgloss.NewStyle().Foreground(cyan),
		paneTitle:     lipgloss.NewStyle().Bold(true),

		thinking:  lipgloss.NewStyle().Italic(true).Foreground(grey),
		answer:    lipgloss.NewStyle(),
		separator: lipgloss.NewStyle().Foreground(magenta),
		faint:     lipgloss.NewStyle().Faint(true),

		target:   lipgloss.NewStyle().Reverse(true).Bold(true),
		index:    lipgloss.NewStyle().Foreground(cyan),
		kind:     lipgloss.NewStyle().Foreground(grey),
		stepNum:  lipgloss.NewStyle().Bold(true),
		call:     lipgloss.NewStyle().Foreground(cyan),
		good:     lipgloss.NewStyle().Foreground(green).Bold(true),
		bad:      lipgloss.NewStyle().Foreground(red).Bold(true),
		warn:     lipgloss.NewStyle().Foreground(yellow),
		recovery: lipgloss.NewStyle().Foreground(magenta),

		prompt: lipgloss.NewStyle().Bold(true).Foreground(yellow),
		reason: lipgloss.NewStyle().Foreground(yellow),
		errMsg: lipgloss.NewStyle().Foreground(red),

		help: h,
	}
}
