package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
)

// gateInfo is one feature gate as the 1.37 components know it.
type gateInfo struct {
	Name         string   `json:"name"`
	Default      bool     `json:"default"`
	Stage        string   `json:"stage"`
	Locked       bool     `json:"locked"`
	Dependencies []string `json:"dependencies"`
}

// printGates writes every gate the Kubernetes components register (at the binary's default
// emulation and compatibility versions) with its dependencies, as one JSON list, for the
// differential test of dra-webhook's own gate table.
func printGates(out io.Writer) error {
	deps := utilfeature.DefaultMutableFeatureGate.Dependencies()
	var list []gateInfo
	for name, spec := range utilfeature.DefaultMutableFeatureGate.GetAll() {
		g := gateInfo{Name: string(name), Default: spec.Default, Stage: stage(spec),
			Locked: spec.LockToDefault, Dependencies: []string{}}
		for _, d := range deps[name] {
			g.Dependencies = append(g.Dependencies, string(d))
		}
		sort.Strings(g.Dependencies)
		list = append(list, g)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(list)
}

func stage(spec featuregate.FeatureSpec) string {
	switch spec.PreRelease {
	case featuregate.Alpha:
		return "Alpha"
	case featuregate.Beta:
		return "Beta"
	case featuregate.GA:
		return "GA"
	case featuregate.Deprecated:
		return "Deprecated"
	default:
		return fmt.Sprint(spec.PreRelease)
	}
}
