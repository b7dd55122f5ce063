package simulator

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// handlerRefs are the screens and app a handler names, as written.
type handlerRefs struct {
	h                   *handler
	from                *appDef // the app of the handler's screen, for a bare "screen"
	where               string
	goTo, replace, open string
}

// resolve is the loader's second pass: once every app and the system
// screens are loaded, it points each handler at the screens and the app it
// names (which may have been loaded after it).
func (l *loader) resolve() error {
	for _, r := range l.refs {
		var err error
		if r.goTo != "" {
			if r.h.goTo, err = l.screenRef(r.goTo, r.from); err != nil {
				return fmt.Errorf("%s: go: %w", r.where, err)
			}
		}
		if r.replace != "" {
			if r.h.replace, err = l.screenRef(r.replace, r.from); err != nil {
				return fmt.Errorf("%s: replace: %w", r.where, err)
			}
		}
		if r.open != "" && r.h.openT == nil {
			if r.h.open = l.apps[r.open]; r.h.open == nil {
				return fmt.Errorf("%s: open: unknown app %q (not among the scenario's apps)", r.where, r.open)
			}
		}
	}
	return nil
}

// checkOpens checks that every entry of the list behind a templated open
// names an app of the scenario, once the scenario's lists are final, and
// that no handler changes those entries later.
func (l *loader) checkOpens() error {
	for _, h := range l.handlers {
		if h.openT == nil {
			continue
		}
		var fields []string
		for _, r := range h.openT.refs() {
			fields = append(fields, strings.TrimPrefix(r, "item."))
		}
		for _, o := range l.handlers {
			if o.appendTo == h.itemList {
				return fmt.Errorf("%s: open: %s appends to the list %q, whose entries name the app to open, so they could not be checked at load", h.where, o.where, h.itemList)
			}
			if o.toggleItem != "" && o.itemList == h.itemList && slices.Contains(fields, o.toggleItem) {
				return fmt.Errorf("%s: open: %s toggles the field %q of the list %q, which names the app to open", h.where, o.where, o.toggleItem, h.itemList)
			}
		}
		none := envFunc(func(string) (string, bool) { return "", false })
		for i, it := range l.sc.lists[h.itemList] {
			name := h.openT.expand(itemEnv{base: none, item: it})
			if l.apps[name] == nil {
				return fmt.Errorf("%s: open: entry %d of the list %q names the app %q, which is not among the scenario's apps %v", h.where, i, h.itemList, name, slices.Sorted(maps.Keys(l.apps)))
			}
		}
	}
	return nil
}

// launcherEntries are the entries of the built-in list appsList: every
// app of the scenario that open_app knows, except the home app (a launcher
// does not list itself), sorted by label as a launcher's app drawer is.
func launcherEntries(sc *scenario) []map[string]string {
	var apps []*appDef
	for _, a := range sc.apps {
		if !a.hidden && a != sc.home {
			apps = append(apps, a)
		}
	}
	slices.SortFunc(apps, func(a, b *appDef) int {
		return cmp.Or(strings.Compare(strings.ToLower(a.label), strings.ToLower(b.label)), strings.Compare(a.label, b.label), strings.Compare(a.name, b.name))
	})
	out := make([]map[string]string, len(apps))
	for i, a := range apps {
		out[i] = map[string]string{"name": a.name, "label": a.label, "package": a.pkg}
	}
	return out
}

// openTarget is the app a handler opens when it runs in e, or nil.
func (sc *scenario) openTarget(h *handler, e env) *appDef {
	if h.openT != nil {
		return sc.byName[h.openT.expand(e)]
	}
	return h.open
}

// screenRef resolves "screen" (in app from) or "app:screen".
func (l *loader) screenRef(ref string, from *appDef) (*screenDef, error) {
	appName, id, ok := strings.Cut(ref, ":")
	a := from
	if ok {
		a = l.apps[appName]
		if appName == "system" {
			a = l.sys
		}
		if a == nil {
			return nil, fmt.Errorf("unknown target %q: no app %q in the scenario", ref, appName)
		}
	} else {
		id = appName
		if a == nil {
			return nil, fmt.Errorf("unknown target %q: write it as app:screen", ref)
		}
	}
	s := a.screens[id]
	if s == nil {
		return nil, fmt.Errorf("unknown target %q: app %q has no screen %q", ref, a.name, id)
	}
	return s, nil
}
