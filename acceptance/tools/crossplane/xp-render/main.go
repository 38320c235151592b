// xp-render renders a composite resource (XR) the way `crossplane render` does with the
// Development function runtime, through the real engine of Crossplane v2: `crossplane internal
// render`, which runs one reconcile of the real composite reconciler on an in-memory client and
// calls the composition functions over insecure gRPC.
//
// `crossplane internal render` speaks protobuf (RenderRequest on stdin, RenderResponse on stdout);
// this tool only builds that request from YAML files and prints the response as JSON, so tests
// read and assert plain JSON. It starts no function: each Function must already be running where
// its annotations say (render.crossplane.io/runtime: Development, and
// render.crossplane.io/runtime-development-target, default localhost:9443, as in the CLI).
//
// Usage:
//
//	xp-render [--crossplane BIN] [--xrd FILE] [--observed-resources FILE]...
//	          [--required-resources FILE]... XR COMPOSITION FUNCTIONS
//
// Files may hold several YAML documents. Prints protojson of CompositeOutput (compositeResource,
// composedResources, events, ...). Exit code: crossplane's (3 when a pipeline step was FATAL; the
// partial output is still printed), 2 for bad input.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"sigs.k8s.io/yaml"

	renderv1alpha1 "github.com/crossplane/crossplane/v2/proto/render/v1alpha1"
)

const (
	annotationRuntime = "render.crossplane.io/runtime"
	annotationTarget  = "render.crossplane.io/runtime-development-target"
	// The CLI's default target of the Development runtime.
	defaultTarget = "localhost:9443"
)

type files []string

func (f *files) String() string     { return strings.Join(*f, ",") }
func (f *files) Set(v string) error { *f = append(*f, v); return nil }

func main() {
	code, err := run(os.Args[1:], os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "xp-render:", err)
	}
	os.Exit(code)
}

func run(args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("xp-render", flag.ContinueOnError)
	crossplane := fs.String("crossplane", "", "the crossplane binary (default: crossplane next to this tool, else on PATH)")
	xrd := fs.String("xrd", "", "the CompositeResourceDefinition of the XR (selects its schema; optional)")
	var observed, required files
	fs.Var(&observed, "observed-resources", "YAML of composed resources as they exist (repeatable)")
	fs.Var(&required, "required-resources", "YAML of other objects the engine may read, e.g. connection Secrets (repeatable)")
	if err := fs.Parse(args); err != nil {
		return 2, err
	}
	if fs.NArg() != 3 {
		return 2, errors.New("want three arguments: XR COMPOSITION FUNCTIONS")
	}
	in, err := compositeInput(fs.Arg(0), fs.Arg(1), fs.Arg(2), *xrd, observed, required)
	if err != nil {
		return 2, err
	}
	req, err := proto.Marshal(&renderv1alpha1.RenderRequest{
		Input: &renderv1alpha1.RenderRequest_Composite{Composite: in},
	})
	if err != nil {
		return 2, fmt.Errorf("cannot encode the render request: %w", err)
	}

	bin := *crossplane
	if bin == "" {
		bin = findCrossplane()
	}
	cmd := exec.Command(bin, "internal", "render")
	cmd.Stdin = bytes.NewReader(req)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = stderr
	runErr := cmd.Run()
	code := 0
	var exitErr *exec.ExitError
	switch {
	case errors.As(runErr, &exitErr):
		code = exitErr.ExitCode()
	case runErr != nil:
		return 1, fmt.Errorf("cannot run %s internal render: %w", bin, runErr)
	}
	if out.Len() == 0 {
		return code, fmt.Errorf("%s internal render exited %d with no output", bin, code)
	}
	rsp := &renderv1alpha1.RenderResponse{}
	if err := proto.Unmarshal(out.Bytes(), rsp); err != nil {
		return 1, fmt.Errorf("cannot decode the render response: %w", err)
	}
	js, err := protojson.MarshalOptions{Multiline: true}.Marshal(rsp.GetComposite())
	if err != nil {
		return 1, fmt.Errorf("cannot print the render response: %w", err)
	}
	_, _ = stdout.Write(append(js, '\n'))
	return code, nil
}

// findCrossplane prefers the crossplane built alongside this tool (build-tools.sh puts both in one
// directory), so a different crossplane on PATH is never used by accident.
func findCrossplane() string {
	if self, err := os.Executable(); err == nil {
		if resolved, err := filepath.EvalSymlinks(self); err == nil {
			if c := filepath.Join(filepath.Dir(resolved), "crossplane"); isFile(c) {
				return c
			}
		}
	}
	return "crossplane"
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

func compositeInput(xrFile, compFile, fnFile, xrdFile string, observed, required []string) (*renderv1alpha1.CompositeInput, error) {
	xr, err := one(xrFile)
	if err != nil {
		return nil, err
	}
	comp, err := one(compFile)
	if err != nil {
		return nil, err
	}
	fnDocs, err := readDocs(fnFile)
	if err != nil {
		return nil, err
	}
	in := &renderv1alpha1.CompositeInput{CompositeResource: xr, Composition: comp}
	for _, fn := range fnDocs {
		f, err := function(fnFile, fn)
		if err != nil {
			return nil, err
		}
		in.Functions = append(in.Functions, f)
	}
	if xrdFile != "" {
		if in.CompositeResourceDefinition, err = one(xrdFile); err != nil {
			return nil, err
		}
	}
	for _, f := range observed {
		docs, err := readDocs(f)
		if err != nil {
			return nil, err
		}
		in.ObservedResources = append(in.ObservedResources, docs...)
	}
	for _, f := range required {
		docs, err := readDocs(f)
		if err != nil {
			return nil, err
		}
		in.RequiredResources = append(in.RequiredResources, docs...)
	}
	return in, nil
}

// function maps a Function object to the name and gRPC address render dials.
func function(file string, fn *structpb.Struct) (*renderv1alpha1.FunctionInput, error) {
	meta := fn.GetFields()["metadata"].GetStructValue()
	name := meta.GetFields()["name"].GetStringValue()
	if name == "" {
		return nil, fmt.Errorf("%s: a Function without metadata.name", file)
	}
	ann := meta.GetFields()["annotations"].GetStructValue().GetFields()
	if rt := ann[annotationRuntime].GetStringValue(); rt != "Development" {
		return nil, fmt.Errorf("%s: Function %s: annotation %s is %q; only Development (a function "+
			"already running with --insecure) is supported: set it to Development", file, name, annotationRuntime, rt)
	}
	target := ann[annotationTarget].GetStringValue()
	if target == "" {
		target = defaultTarget
	}
	return &renderv1alpha1.FunctionInput{Name: name, Address: target}, nil
}

func one(file string) (*structpb.Struct, error) {
	docs, err := readDocs(file)
	if err != nil {
		return nil, err
	}
	if len(docs) != 1 {
		return nil, fmt.Errorf("%s: want exactly one object, found %d", file, len(docs))
	}
	return docs[0], nil
}

// readDocs reads every non-empty YAML document of file (JSON is YAML too).
func readDocs(file string) ([]*structpb.Struct, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var out []*structpb.Struct
	for i, doc := range splitDocs(string(raw)) {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, i+1, err)
		}
		if len(m) == 0 {
			continue
		}
		s, err := structpb.NewStruct(m)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, i+1, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// splitDocs splits a YAML stream on its `---` separator lines.
func splitDocs(s string) []string {
	var docs []string
	var cur strings.Builder
	for _, line := range strings.SplitAfter(s, "\n") {
		if strings.TrimRight(line, " \t\r\n") == "---" {
			docs = append(docs, cur.String())
			cur.Reset()
			continue
		}
		cur.WriteString(line)
	}
	return append(docs, cur.String())
}
