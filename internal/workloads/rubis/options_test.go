package rubis

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/container"
)

// RUBiS's options are checked by its Validate, each refusal naming the
// flag, the value and what is allowed (these were config's checks).
func TestOptionsValidateNamesFlagAndAllowedValues(t *testing.T) {
	for _, tc := range []struct {
		name        string
		style       string
		persistence container.Persistence
		change      func(*Options)
		want        string
	}{
		{"style", "ejb3", container.Direct, nil, `--style "ejb3": allowed: servlets, session, facade, facade-remote, local, entity`},
		{"style entity on direct SQL", "entity", container.Direct, nil, "--style entity runs on --persistence cmp or bmp, not direct"},
		{"style on the wrong persistence", "session", container.CMP, nil, "--style session runs on --persistence direct, not cmp"},
		{"style facade on direct SQL", "facade", container.Direct, nil, "--style facade runs on --persistence cmp or bmp, not direct"},
		{"protocol", "", container.Direct, func(o *Options) { o.Protocol = "rmi" }, `--protocol "rmi"`},
		{"items per category", "", container.Direct, func(o *Options) { o.ItemsPerCategory = "skewed" }, `--items-per-category "skewed": want original`},
		{"page tries", "", container.Direct, func(o *Options) { o.PageTries = 101 }, "--page-tries 101"},
	} {
		c := config.New("rubis", New().Info().Defaults)
		c.Persistence = tc.persistence
		o := DefaultOptions
		o.Style = tc.style
		if tc.change != nil {
			tc.change(&o)
		}
		errs := o.Validate(c)
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want) {
			t.Errorf("%s: %v, want one problem saying %q", tc.name, errs, tc.want)
		}
	}
}

// A style on the entity container, given by flag or file without a
// persistence, runs on CMP; a persistence the user gave is kept, and
// refused when the style cannot run on it.
func TestStyleChoosesThePersistence(t *testing.T) {
	dir := t.TempDir()
	for i, tc := range []struct {
		file  string
		want  container.Persistence
		valid bool
	}{
		{"style: facade\n", container.CMP, true},
		{"style: local\n", container.CMP, true},
		{"style: session\n", container.Direct, true},
		{"style: facade\npersistence: bmp\n", container.BMP, true},
		{"style: entity\n", container.CMP, true},
		{"style: entity\npersistence: bmp\n", container.BMP, true},
		{"style: facade\npersistence: direct\n", container.Direct, false},
	} {
		c := config.New("rubis", New().Info().Defaults) // persistence direct
		c.Options = DefaultOptions
		path := filepath.Join(dir, string(rune('a'+i))+".yaml")
		os.WriteFile(path, []byte(tc.file), 0o644)
		if err := c.LoadFile(path); err != nil {
			t.Fatal(err)
		}
		o := c.Options.(Options)
		o.Resolve(&c)
		errs := o.Validate(c)
		if c.Persistence != tc.want || (len(errs) == 0) != tc.valid {
			t.Errorf("%q: persistence %s, problems %v; want %s, valid %v", tc.file, c.Persistence, errs, tc.want, tc.valid)
		}
	}
}
