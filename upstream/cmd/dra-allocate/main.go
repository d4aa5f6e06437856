// Command dra-allocate runs the upstream structured allocator
// (k8s.io/dynamic-resource-allocation/structured) on the same inputs as `dra-webhook simulate`
// and prints the same JSON shape. It is the test rig's oracle for dra-webhook's allocator:
// it decides nothing itself, it only loads objects, sets the allocator features from
// --feature-gates the way the 1.37 scheduler does, and tries the nodes in simulate's order.
//
//	dra-allocate --cluster-state DIR -f FILE [-f FILE...] [--node NAME] [--feature-gates SPEC] [-o json]
//	dra-allocate --batch FILE   (one JSON scenario per line in, one JSON result per line out)
//	dra-allocate --print-gates  (the Kubernetes feature gates: default, stage, dependencies)
//
// Exit codes as simulate: 0 feasible, 1 infeasible, 2 bad input or usage. In batch mode the
// exit code is 0 unless the batch itself cannot be read; each result carries its own verdict.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/dra-webhook/upstream/cmd/internal/oracleio"
)

type object = oracleio.Object

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dra-allocate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var files oracleio.Paths
	state := fs.String("cluster-state", "", "directory with the cluster state (ResourceSlices, DeviceClasses, claims, nodes, ...)")
	node := fs.String("node", "", "allocate on this node only")
	gates := fs.String("feature-gates", "", "Kubernetes --feature-gates syntax: Name=true,Other=false")
	output := fs.String("o", "json", "output format (json is the only one)")
	batch := fs.String("batch", "", "JSON-lines scenario file ('-' for stdin); prints one result per line")
	timeout := fs.Duration("timeout", 60*time.Second, "give up on one allocation after this long")
	showGates := fs.Bool("print-gates", false, "print every known feature gate (default, stage, dependencies) as JSON and exit")
	fs.Var(&files, "f", "file with ResourceClaims, ResourceClaimTemplates or one PodGroup (repeatable)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *output != "json" {
		fmt.Fprintf(stderr, "dra-allocate: unknown output format %q (json is the only one)\n", *output)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "dra-allocate: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if *showGates {
		if err := printGates(stdout); err != nil {
			fmt.Fprintf(stderr, "dra-allocate: %v\n", err)
			return 2
		}
		return 0
	}
	if *batch != "" {
		return runBatch(*batch, stdin, stdout, stderr, *timeout)
	}
	if *state == "" || len(files) == 0 {
		fmt.Fprintln(stderr, "dra-allocate: --cluster-state DIR and at least one -f FILE are required")
		return 2
	}
	stateObjs, err := oracleio.LoadPaths([]string{*state})
	if err != nil {
		fmt.Fprintf(stderr, "dra-allocate: cluster state: %v\n", err)
		return 2
	}
	inputObjs, err := oracleio.LoadPaths(files)
	if err != nil {
		fmt.Fprintf(stderr, "dra-allocate: %v\n", err)
		return 2
	}
	gateMap, err := parseGateSpec(*gates)
	if err != nil {
		fmt.Fprintf(stderr, "dra-allocate: --feature-gates: %v\n", err)
		return 2
	}
	res, err := simulate(scenario{State: stateObjs, Objects: inputObjs, Node: *node, FeatureGates: gateMap}, *timeout)
	if err != nil {
		fmt.Fprintf(stderr, "dra-allocate: %v\n", err)
		return 2
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(res); err != nil {
		fmt.Fprintf(stderr, "dra-allocate: %v\n", err)
		return 2
	}
	if res.Feasible {
		return 0
	}
	return 1
}

// batchLine is one scenario of --batch: the cluster state and the inputs inline.
type batchLine struct {
	ID             string                   `json:"id"`
	ClusterState   []map[string]interface{} `json:"clusterState"`
	Objects        []map[string]interface{} `json:"objects"`
	Node           string                   `json:"node"`
	FeatureGates   map[string]bool          `json:"featureGates"`
	TimeoutSeconds float64                  `json:"timeoutSeconds"`
}

func runBatch(path string, stdin io.Reader, stdout, stderr io.Writer, timeout time.Duration) int {
	err := oracleio.Batch(path, stdin, stdout, func(line []byte) any {
		var b batchLine
		if err := json.Unmarshal(line, &b); err != nil {
			return &result{Error: fmt.Sprintf("bad scenario: %v", err)}
		}
		limit := timeout
		if b.TimeoutSeconds > 0 {
			limit = time.Duration(b.TimeoutSeconds * float64(time.Second))
		}
		res, err := simulate(scenario{State: b.ClusterState, Objects: b.Objects, Node: b.Node, FeatureGates: b.FeatureGates}, limit)
		if err != nil {
			res = &result{Error: err.Error()}
		}
		res.ID = b.ID
		return res
	})
	if err != nil {
		fmt.Fprintf(stderr, "dra-allocate: %v\n", err)
		return 2
	}
	return 0
}

// parseGateSpec reads "A=true,B=false" into a map (validation happens when the gates are set).
func parseGateSpec(spec string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, value, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("missing bool value for %s", part)
		}
		switch strings.ToLower(strings.TrimSpace(value)) {
		case "true":
			out[strings.TrimSpace(name)] = true
		case "false":
			out[strings.TrimSpace(name)] = false
		default:
			return nil, fmt.Errorf("invalid value of %s=%s, err: must be true or false", name, value)
		}
	}
	return out, nil
}

var errTimeout = errors.New("allocation did not finish in time")

func withTimeout(limit time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), limit)
}
