package result

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/tierbench/tierbench/internal/workloads/ecperf"
	"github.com/tierbench/tierbench/internal/workloads/rubis"
	"github.com/tierbench/tierbench/internal/workloads/stockonline"
	"github.com/tierbench/tierbench/internal/workloads/tpcapp"
)

const schemaFile = "../../docs/result.schema.json"

// docs/result.schema.json is what the Go types reflect to: a field added
// to Result (or a tag renamed) without make docs fails here.
func TestSchemaFileIsGeneratedFromTheTypes(t *testing.T) {
	got, err := JSONSchema("../..", ecperf.DefaultOptions, rubis.DefaultOptions, stockonline.DefaultOptions, tpcapp.DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatalf("%v: run make docs", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("docs/result.schema.json differs from the Go types of internal/result: run make docs")
	}
}

// Every result file kept in the repository (the golden one Build writes,
// the recorded runs) validates against the committed schema, which
// refuses keys it does not declare and requires every field written
// without omitempty.
func TestResultFilesValidateAgainstTheSchema(t *testing.T) {
	schema := compileSchema(t)
	var files []string
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".json") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var head struct {
			Schema string `json:"schema"`
		}
		if json.Unmarshal(b, &head) == nil && head.Schema == Schema {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 2 {
		t.Fatalf("found %d result files (%v); want at least testdata's result.golden.json and stockonline-postgres-60s.json", len(files), files)
	}
	for _, path := range files {
		if err := validateFile(schema, path); err != nil {
			t.Errorf("%s does not validate against docs/result.schema.json:\n%v", path, err)
		}
	}
}

// The schema is strict enough to catch what a reader would trip on: a
// file missing a required field, or with a key the types do not have.
func TestSchemaRefusesWhatTheTypesDoNot(t *testing.T) {
	schema := compileSchema(t)
	b, err := os.ReadFile("testdata/result.golden.json")
	if err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(map[string]any){
		"summary without throughput_per_s":  func(r map[string]any) { delete(r["summary"].(map[string]any), "throughput_per_s") },
		"an unknown key in the environment": func(r map[string]any) { r["environment"].(map[string]any)["kernel"] = "6.1" },
		"another schema":                    func(r map[string]any) { r["schema"] = "tierbench/result/v2" },
		"a count that is text":              func(r map[string]any) { r["seed"] = "1" },
	} {
		var r map[string]any
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		edit(r)
		if err := schema.Validate(r); err == nil {
			t.Errorf("%s: validates", name)
		}
	}
}

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	s, err := c.Compile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func validateFile(s *jsonschema.Schema, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	v, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		return err
	}
	return s.Validate(v)
}
