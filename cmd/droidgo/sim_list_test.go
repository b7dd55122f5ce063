package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/droidgo/droidgo/simulator"
)

func TestSimList(t *testing.T) {
	t.Parallel()
	want, err := simulator.List()
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := execute(context.Background(), []string{"sim", "list"}, strings.NewReader(""), &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	if len(lines) != len(want)+1 || !strings.HasPrefix(lines[0], "NAME") || !strings.Contains(lines[0], "TASK") {
		t.Fatalf("table:\n%s", out.String())
	}
	for i, in := range want {
		if f := strings.Fields(lines[i+1]); len(f) < 2 || f[0] != in.Name || !strings.HasSuffix(lines[i+1], in.Task) {
			t.Errorf("row %d %q, want %s and %q", i, lines[i+1], in.Name, in.Task)
		}
	}

	out.Reset()
	if code := execute(context.Background(), []string{"sim", "list", "--json"}, strings.NewReader(""), &out, &errOut); code != 0 {
		t.Fatalf("--json: exit %d: %s", code, errOut.String())
	}
	var got []map[string]string
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("--json output is not a JSON array: %v\n%s", err, out.String())
	}
	if len(got) != len(want) {
		t.Fatalf("%d entries, want %d", len(got), len(want))
	}
	for i, in := range want {
		if got[i]["name"] != in.Name || got[i]["task"] != in.Task || got[i]["description"] != in.Description || len(got[i]) != 3 {
			t.Errorf("entry %d = %v, want %+v", i, got[i], in)
		}
	}

	if code := execute(context.Background(), []string{"sim", "list", "extra"}, strings.NewReader(""), &out, &errOut); code != 2 {
		t.Errorf("an extra argument: exit %d, want 2", code)
	}
}

// TestOpenSim checks the real simulator opener newDeps gives commands.
func TestOpenSim(t *testing.T) {
	t.Parallel()
	openSim := newDeps(context.Background(), nil, io.Discard, io.Discard).openSim
	d, err := openSim(context.Background(), "wifi")
	if err != nil {
		t.Fatal(err)
	}
	if app, err := d.CurrentApp(context.Background()); err != nil || app != "com.google.android.apps.nexuslauncher" {
		t.Errorf("wifi starts in %q, %v", app, err)
	}
	if _, err := openSim(context.Background(), "nope"); err == nil || !strings.Contains(err.Error(), "unknown scenario") {
		t.Errorf("unknown scenario: %v", err)
	}
}
