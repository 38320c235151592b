// health-check: what Flux, Argo CD and kstatus say about Tenant objects, evaluated with the
// libraries those tools use, so the shipped health checks are tested the way they run.
//
//	health-check --flux KUSTOMIZATION.yaml --argo DIR OBJECT.json...
//
// Prints one row per object: its name (the file's base name), the verdict of the Kustomization's
// healthCheckExprs for its kind (Flux's evaluation: fluxcd/pkg/runtime/cel StatusEvaluator),
// of DIR/health.lua (Argo CD's Lua VM contract) and of kstatus (status.Compute). It also runs
// DIR/health_test.yaml the way Argo's TestLuaHealthScript does and exits 1 on a mismatch.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
	lua "github.com/yuin/gopher-lua"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/yaml"
)

// fluxCheck is one entry of a Kustomization's spec.healthCheckExprs.
type fluxCheck struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	InProgress string `json:"inProgress"`
	Failed     string `json:"failed"`
	Current    string `json:"current"`
}

// celProgram compiles an expression as fluxcd/pkg/runtime/cel NewExpression does for
// healthCheckExprs: the same environment options, parsed (not type-checked), no variables
// declared; the object's top-level fields are the activation.
func celProgram(expr string) (cel.Program, error) {
	env, err := cel.NewEnv(
		cel.HomogeneousAggregateLiterals(),
		cel.EagerlyValidateDeclarations(true),
		cel.DefaultUTCTimeZone(true),
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		ext.Strings(),
		ext.Sets(),
		ext.Encoders(),
	)
	if err != nil {
		return nil, err
	}
	ast, iss := env.Parse(expr)
	if iss != nil && iss.Err() != nil {
		return nil, fmt.Errorf("parse %q: %w", expr, iss.Err())
	}
	return env.Program(ast, cel.EvalOptions(cel.OptOptimize), cel.InterruptCheckFrequency(100))
}

// flux is StatusEvaluator.Evaluate: a status.observedGeneration present and different from
// metadata.generation is InProgress before any expression; then inProgress, failed, current, the
// first true wins; none true: InProgress. An evaluation error (a field that is not there) is an
// error for the kstatus poller, which reports the object Unknown and keeps waiting.
func flux(c fluxCheck, u *unstructured.Unstructured) (string, string) {
	obj := u.UnstructuredContent()
	if og, ok, err := unstructured.NestedInt64(obj, "status", "observedGeneration"); err == nil && ok {
		if g, ok, err := unstructured.NestedInt64(obj, "metadata", "generation"); err == nil && ok && og != g {
			return "InProgress", "observedGeneration != generation"
		}
	}
	for _, e := range []struct{ expr, verdict string }{
		{c.InProgress, "InProgress"}, {c.Failed, "Failed"}, {c.Current, "Current"},
	} {
		if e.expr == "" {
			continue
		}
		prg, err := celProgram(e.expr)
		if err != nil {
			return "Error", err.Error()
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		val, _, err := prg.ContextEval(ctx, obj)
		cancel()
		if err != nil {
			return "Unknown", "evaluation error: " + err.Error()
		}
		b, ok := val.(types.Bool)
		if !ok {
			return "Error", "not a boolean: " + e.expr
		}
		if b {
			return e.verdict, e.verdict + " expression true"
		}
	}
	return "InProgress", "no expression true"
}

// decodeValue turns a JSON value into Lua as Argo CD's util/lua does.
func decodeValue(L *lua.LState, value any) lua.LValue {
	switch v := value.(type) {
	case nil:
		return lua.LNil
	case bool:
		return lua.LBool(v)
	case string:
		return lua.LString(v)
	case int64:
		return lua.LNumber(v)
	case float64:
		return lua.LNumber(v)
	case map[string]any:
		t := L.NewTable()
		for k, item := range v {
			t.RawSetString(k, decodeValue(L, item))
		}
		return t
	case []any:
		t := L.NewTable()
		for i, item := range v {
			t.RawSetInt(i+1, decodeValue(L, item))
		}
		return t
	default:
		return lua.LString(fmt.Sprint(v))
	}
}

var argoStatuses = map[string]bool{
	"Healthy": true, "Progressing": true, "Degraded": true, "Suspended": true, "Missing": true, "Unknown": true,
}

// argo runs a health.lua as Argo CD does for a script from argocd-cm without useOpenLibs: a VM
// with only the package, base and table libraries (Argo also opens a reduced os library, which
// this script does not use: left out here), the object as the global obj, a 1 s timeout; the
// script returns a table with status and message, and an unknown status becomes Unknown.
func argo(script string, u *unstructured.Unstructured) (string, string) {
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer L.Close()
	for _, lib := range []struct {
		name string
		fn   lua.LGFunction
	}{{lua.LoadLibName, lua.OpenPackage}, {lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}} {
		L.Push(L.NewFunction(lib.fn))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	L.SetContext(ctx)
	L.SetGlobal("obj", decodeValue(L, u.UnstructuredContent()))
	if err := L.DoString(script); err != nil {
		return "Error", err.Error()
	}
	ret, ok := L.Get(-1).(*lua.LTable)
	if !ok {
		return "Error", "expect table output from Lua script, not " + L.Get(-1).Type().String()
	}
	st := ret.RawGetString("status").String()
	msg := ""
	if m := ret.RawGetString("message"); m != lua.LNil {
		msg = m.String()
	}
	if !argoStatuses[st] {
		return "Unknown", "Lua returned an invalid health status"
	}
	return st, msg
}

func load(path string) (*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if data, err = yaml.YAMLToJSON(data); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return u, nil
}

func fluxChecks(path string) ([]fluxCheck, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var k struct {
		Spec struct {
			HealthCheckExprs []fluxCheck `json:"healthCheckExprs"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return k.Spec.HealthCheckExprs, nil
}

// argoTests runs DIR/health_test.yaml: every test's input must give its healthStatus.
func argoTests(dir, script string) []string {
	data, err := os.ReadFile(filepath.Join(dir, "health_test.yaml"))
	if err != nil {
		return []string{err.Error()}
	}
	var suite struct {
		Tests []struct {
			HealthStatus struct{ Status, Message string } `json:"healthStatus"`
			InputPath    string                           `json:"inputPath"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(data, &suite); err != nil {
		return []string{err.Error()}
	}
	var fails []string
	for _, t := range suite.Tests {
		u, err := load(filepath.Join(dir, t.InputPath))
		if err != nil {
			fails = append(fails, err.Error())
			continue
		}
		st, msg := argo(script, u)
		want := t.HealthStatus
		if st != want.Status || msg != want.Message {
			fails = append(fails, fmt.Sprintf("%s: got %s %q, want %s %q", t.InputPath, st, msg, want.Status, want.Message))
		}
	}
	if len(suite.Tests) == 0 {
		fails = append(fails, "health_test.yaml has no tests")
	}
	return fails
}

func main() {
	fluxPath := flag.String("flux", "", "a Flux Kustomization with spec.healthCheckExprs")
	argoDir := flag.String("argo", "", "an Argo CD resource_customizations/<group>/<Kind> directory")
	asJSON := flag.Bool("json", false, "print the rows as JSON lines")
	flag.Parse()
	if *fluxPath == "" || *argoDir == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: health-check --flux KUSTOMIZATION.yaml --argo DIR OBJECT.json...")
		os.Exit(2)
	}
	checks, err := fluxChecks(*fluxPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	script, err := os.ReadFile(filepath.Join(*argoDir, "health.lua"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if !*asJSON {
		fmt.Printf("%-14s %-11s %-12s %-12s\n", "object", "flux", "argo", "kstatus")
	}
	for _, path := range flag.Args() {
		u, err := load(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		gk := u.GroupVersionKind().GroupKind()
		var check *fluxCheck
		for i, c := range checks {
			if (strings.SplitN(c.APIVersion, "/", 2)[0] == gk.Group) && c.Kind == gk.Kind {
				check = &checks[i]
			}
		}
		fv, fm := "none", "no healthCheckExprs entry for "+gk.String()
		if check != nil {
			fv, fm = flux(*check, u)
		}
		av, am := argo(string(script), u)
		kv, km := "Error", ""
		if res, err := status.Compute(u); err != nil {
			km = err.Error()
		} else {
			kv, km = res.Status.String(), res.Message
		}
		name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
		if *asJSON {
			row := map[string]string{"object": name, "flux": fv, "fluxMessage": fm, "argo": av,
				"argoMessage": am, "kstatus": kv, "kstatusMessage": km}
			line, _ := json.Marshal(row)
			fmt.Println(string(line))
		} else {
			fmt.Printf("%-14s %-11s %-12s %-12s\n", name, fv, av, kv)
		}
	}
	if fails := argoTests(*argoDir, string(script)); len(fails) > 0 {
		for _, f := range fails {
			fmt.Fprintln(os.Stderr, "argo health_test.yaml:", f)
		}
		os.Exit(1)
	}
}
