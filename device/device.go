// Package device defines the phone operations droidgo needs. The ADB-backed
// implementation lives in device/adb; the simulator provides another.
package device

import (
	"context"
	"errors"
	"time"
)

// Device is a phone the agent can observe and act on. Coordinates are screen
// pixels in the current orientation.
type Device interface {
	// Dump returns the raw uiautomator XML of the current screen.
	Dump(ctx context.Context) ([]byte, error)
	Tap(ctx context.Context, x, y int) error
	LongPress(ctx context.Context, x, y int) error
	Swipe(ctx context.Context, x1, y1, x2, y2 int, d time.Duration) error
	// Type types literal text into the focused field.
	Type(ctx context.Context, text string) error
	// Key presses a key by its action-space name (see action.Keys).
	Key(ctx context.Context, key string) error
	// OpenApp launches an app by label or package name.
	OpenApp(ctx context.Context, nameOrPackage string) error
	// Size returns the screen size in the current orientation.
	Size(ctx context.Context) (w, h int, err error)
	// CurrentApp returns the package of the app in the foreground.
	CurrentApp(ctx context.Context) (string, error)
}

// Errors callers branch on.
var (
	// ErrDumpNotIdle reports that uiautomator could not get an idle state.
	ErrDumpNotIdle = errors.New("uiautomator could not get idle state")
	// ErrNoDevice reports that no device is attached or reachable.
	ErrNoDevice = errors.New("no device")
	// ErrUnknownApp reports an app name that matches no installed app.
	ErrUnknownApp = errors.New("unknown app")
	// ErrUnknownKey reports a key name that is not in action.Keys.
	ErrUnknownKey = errors.New("unknown key")
)
