package main

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

type object = map[string]interface{}

// loadPaths reads every object of every path, as `dra-webhook simulate` does: a file, or a
// directory searched recursively for *.yaml, *.yml and *.json (in name order); YAML files may
// hold several documents, and a `kind: List` contributes its items.
func loadPaths(paths []string) ([]object, error) {
	var out []object
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		var files []string
		if info.IsDir() {
			err := filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				ext := strings.ToLower(filepath.Ext(path))
				if !d.IsDir() && (ext == ".yaml" || ext == ".yml" || ext == ".json") {
					files = append(files, path)
				}
				return nil
			})
			if err != nil {
				return nil, err
			}
			sort.Strings(files)
		} else {
			files = []string{p}
		}
		for _, f := range files {
			objs, err := loadFile(f)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			out = append(out, objs...)
		}
	}
	return out, nil
}

func loadFile(path string) ([]object, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []object
	for {
		var doc object
		if err := dec.Decode(&doc); err != nil {
			if err == io.EOF {
				return out, nil
			}
			return nil, err
		}
		if doc == nil {
			continue
		}
		out = append(out, expandList(doc)...)
	}
}

// expandList turns a `kind: List` (or `*List`) into its items; anything else is itself.
func expandList(doc object) []object {
	kind, _ := doc["kind"].(string)
	items, isList := doc["items"].([]interface{})
	if !isList || !(kind == "List" || strings.HasSuffix(kind, "List")) {
		return []object{doc}
	}
	var out []object
	for _, it := range items {
		if m, ok := it.(map[string]interface{}); ok {
			out = append(out, m)
		}
	}
	return out
}
