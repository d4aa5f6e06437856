// Package oracleio is the input side of the oracle commands in upstream/cmd (dra-allocate,
// pool-check): Kubernetes objects from files the way dra-webhook reads them, and the lines of a
// --batch file.
package oracleio

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Paths is the value of a repeatable -f flag: files or directories, in the order given.
type Paths []string

func (p *Paths) String() string     { return strings.Join(*p, ",") }
func (p *Paths) Set(v string) error { *p = append(*p, v); return nil }

// Object is one decoded document.
type Object = map[string]interface{}

// LoadPaths reads every object of every path, as `dra-webhook simulate` does: a file, or a
// directory searched recursively for *.yaml, *.yml and *.json (in name order); YAML files may
// hold several documents, and a `kind: List` contributes its items.
func LoadPaths(paths []string) ([]Object, error) {
	var out []Object
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
			objs, err := LoadFile(f)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			out = append(out, objs...)
		}
	}
	return out, nil
}

// LoadFile reads every object of one YAML or JSON file.
func LoadFile(path string) ([]Object, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []Object
	for {
		var doc Object
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
func expandList(doc Object) []Object {
	kind, _ := doc["kind"].(string)
	items, isList := doc["items"].([]interface{})
	if !isList || !(kind == "List" || strings.HasSuffix(kind, "List")) {
		return []Object{doc}
	}
	var out []Object
	for _, it := range items {
		if m, ok := it.(map[string]interface{}); ok {
			out = append(out, m)
		}
	}
	return out
}

// Batch answers a --batch file at path ('-' for stdin): answer is called with every non-blank
// line, trimmed, in order, and what it returns is written to stdout as one JSON line, flushed at
// once so that a harness can stream. The error is about the file or stdout, never about a line.
func Batch(path string, stdin io.Reader, stdout io.Writer, answer func(line []byte) any) error {
	in := stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	out := bufio.NewWriter(stdout)
	enc := json.NewEncoder(out)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if err := enc.Encode(answer(line)); err != nil {
			return err
		}
		if err := out.Flush(); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	return nil
}
