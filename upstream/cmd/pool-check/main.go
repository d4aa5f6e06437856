// Command pool-check runs the publish check of upstream's DRA driver helper
// (k8s.io/dynamic-resource-allocation/resourceslice) on ResourceSlices as a driver published them,
// and says whether the helper would publish each pool or refuse it, with its error. It is the test
// rig's oracle for the publish checks of dra-webhook's pool lint (webhook/allocator/poollint.py):
// it decides nothing itself.
//
//	pool-check -f FILE [-f FILE...]   one verdict per pool of the ResourceSlices in the files
//	pool-check --batch FILE           one pool per line in ({"id", "slices": [...]}, '-' for stdin),
//	                                  one verdict per line out
//
// The check is unexported, so pool-check drives the exported helper that runs it: one
// resourceslice.Controller on a fake clientset, handed each pool in turn (Controller.Update) as a
// driver hands it its desired pools. The controller validates the pool before it writes anything
// and reports a refusal through its ErrorHandler; otherwise it creates the pool's slices. Its work
// queue is ours (oneAtATime): it releases exactly one sync of the pool under test and says when that
// sync is done, so a verdict never depends on timing.
//
// A verdict is {"id", "driver", "pool", "slices", "published", "error"}; "error" is the helper's
// message ("" when it publishes). Exit codes: 0 every pool published, 1 some pool refused, 2 bad
// input or usage; in batch mode 0 unless the batch itself cannot be read (each verdict carries
// its own answer).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"

	"github.com/dra-webhook/upstream/cmd/internal/oracleio"
)

// driverName is the driver the checker's controller publishes as. The check does not look at it.
const driverName = "pool-check.dra-webhook.io"

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pool-check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var files oracleio.Paths
	fs.Var(&files, "f", "file or directory with ResourceSlices (repeatable)")
	batch := fs.String("batch", "", "JSON-lines file of pools ('-' for stdin); prints one verdict per line")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 || (*batch == "") == (len(files) == 0) {
		fmt.Fprintln(stderr, "pool-check: give either -f FILE... or --batch FILE")
		return 2
	}
	ck, err := newChecker()
	if err != nil {
		fmt.Fprintf(stderr, "pool-check: %v\n", err)
		return 2
	}
	defer ck.stop()
	if *batch != "" {
		return runBatch(ck, *batch, stdin, stdout, stderr)
	}
	out := bufio.NewWriter(stdout)
	defer out.Flush()
	enc := json.NewEncoder(out)
	objs, err := oracleio.LoadPaths(files)
	if err != nil {
		fmt.Fprintf(stderr, "pool-check: %v\n", err)
		return 2
	}
	code := 0
	for _, p := range groupPools(objs) {
		v := ck.check(p)
		if v.Fault != "" {
			fmt.Fprintf(stderr, "pool-check: %s\n", v.Fault)
			return 2
		}
		if !v.Published {
			code = 1
		}
		if err := enc.Encode(v); err != nil {
			return 2
		}
	}
	return code
}

// pool is one pool under test: its slices in the order the driver gives them.
type pool struct {
	ID     string           `json:"id"`
	Slices []map[string]any `json:"slices"`
}

type verdict struct {
	ID        string `json:"id"`
	Driver    string `json:"driver"`
	Pool      string `json:"pool"`
	Slices    int    `json:"slices"`
	Published bool   `json:"published"`
	Error     string `json:"error"`
	Fault     string `json:"fault,omitempty"` // the check itself went wrong (not a verdict)
}

func runBatch(ck *checker, path string, stdin io.Reader, stdout, stderr io.Writer) int {
	err := oracleio.Batch(path, stdin, stdout, func(line []byte) any {
		var p pool
		if err := json.Unmarshal(line, &p); err != nil {
			return verdict{Fault: fmt.Sprintf("bad pool: %v", err)}
		}
		return ck.check(p)
	})
	if err != nil {
		fmt.Fprintf(stderr, "pool-check: %v\n", err)
		return 2
	}
	return 0
}

// groupPools groups ResourceSlices by (driver, pool name), pools and slices in input order.
func groupPools(objs []oracleio.Object) []pool {
	var out []pool
	index := map[string]int{}
	for _, o := range objs {
		if o["kind"] != "ResourceSlice" {
			continue
		}
		spec, _ := o["spec"].(map[string]any)
		p, _ := spec["pool"].(map[string]any)
		key := fmt.Sprintf("%v/%v", spec["driver"], p["name"])
		i, ok := index[key]
		if !ok {
			i = len(out)
			index[key] = i
			out = append(out, pool{ID: key})
		}
		out[i].Slices = append(out[i].Slices, o)
	}
	return out
}

// checker owns one controller, started once (its informer takes about a second to sync), and
// hands it one pool at a time.
type checker struct {
	ctrl   *resourceslice.Controller
	queue  *oneAtATime
	cancel context.CancelFunc
	n      int

	mu       sync.Mutex
	refusals []error
	faults   []string
}

func newChecker() (*checker, error) {
	// The helper logs every refusal through klog as well as through ErrorHandler: keep stderr for
	// our own errors.
	klog.SetOutput(io.Discard)
	klog.LogToStderr(false)
	client := fake.NewClientset()
	created := 0
	client.PrependReactor("create", "resourceslices", func(action k8stesting.Action) (bool, runtime.Object, error) {
		// The fake object tracker does not implement generateName; the helper relies on it.
		s := action.(k8stesting.CreateAction).GetObject().(*resourceapi.ResourceSlice)
		if s.Name == "" {
			created++
			s.Name = fmt.Sprintf("%s%d", s.GenerateName, created)
		}
		return false, nil, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	ck := &checker{queue: newOneAtATime(), cancel: cancel}
	ctrl, err := resourceslice.StartController(ctx, resourceslice.Options{
		DriverName: driverName,
		KubeClient: client,
		Queue:      ck.queue,
		ErrorHandler: func(_ context.Context, err error, msg string) {
			ck.mu.Lock()
			defer ck.mu.Unlock()
			if msg == "pool validation failed" {
				ck.refusals = append(ck.refusals, err)
			} else {
				ck.faults = append(ck.faults, fmt.Sprintf("%s: %v", msg, err))
			}
		},
	})
	if err != nil {
		cancel()
		return nil, err
	}
	ck.ctrl = ctrl
	return ck, nil
}

func (ck *checker) stop() {
	ck.ctrl.Stop()
	ck.cancel()
}

// check asks the helper to publish one pool and reports what it said.
func (ck *checker) check(p pool) verdict {
	v := verdict{ID: p.ID, Slices: len(p.Slices), Published: true}
	var slices []resourceslice.Slice
	for i, o := range p.Slices {
		var rs resourceapi.ResourceSlice
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o, &rs); err != nil {
			v.Fault = fmt.Sprintf("slice %d: %v", i, err)
			return v
		}
		if i == 0 {
			v.Driver, v.Pool = rs.Spec.Driver, rs.Spec.Pool.Name
		}
		slices = append(slices, resourceslice.Slice{
			Devices:                rs.Spec.Devices,
			SharedCounters:         rs.Spec.SharedCounters,
			PerDeviceNodeSelection: rs.Spec.PerDeviceNodeSelection,
			PartitionTypeAttribute: rs.Spec.PartitionTypeAttribute,
			SkipNodeOperations:     rs.Spec.SkipNodeOperations,
		})
	}
	// Every pool gets a name of its own, so that the slices of earlier pools are never its own.
	ck.n++
	name := fmt.Sprintf("pool-check-%d", ck.n)
	ck.mu.Lock()
	ck.refusals, ck.faults = nil, nil
	ck.mu.Unlock()
	if !ck.queue.sync(name, func() {
		ck.ctrl.Update(&resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{name: {Slices: slices}}})
	}, 30*time.Second) {
		v.Fault = "the helper did not sync the pool within 30 s"
		return v
	}
	ck.mu.Lock()
	defer ck.mu.Unlock()
	if len(ck.faults) > 0 {
		v.Fault = strings.Join(ck.faults, "; ")
	}
	if len(ck.refusals) > 0 {
		v.Published = false
		// The helper names the pool in some messages: the real name, not the checker's.
		v.Error = strings.ReplaceAll(ck.refusals[0].Error(), fmt.Sprintf("%q", name), fmt.Sprintf("%q", v.Pool))
	}
	return v
}

// oneAtATime is the controller's work queue: it hands out only the pool under test, once per
// sync(), and ignores every other add (old pools, delayed re-syncs after writes, retries), so that
// exactly one syncPool runs per check and sync() returns when it is done.
type oneAtATime struct {
	mu    sync.Mutex
	want  string
	ready chan string
	done  chan struct{}
	shut  chan struct{}
	once  sync.Once
}

func newOneAtATime() *oneAtATime {
	return &oneAtATime{ready: make(chan string, 1), done: make(chan struct{}, 1), shut: make(chan struct{})}
}

// sync releases one sync of pool name (queued by start) and waits until the controller is done
// with it; false when it is not done within limit.
func (q *oneAtATime) sync(name string, start func(), limit time.Duration) bool {
	q.mu.Lock()
	q.want = name
	q.mu.Unlock()
	start()
	select {
	case <-q.done:
		return true
	case <-time.After(limit):
		return false
	}
}

func (q *oneAtATime) Add(item string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if item != q.want {
		return
	}
	q.want = "" // once
	q.ready <- item
}

func (q *oneAtATime) Get() (string, bool) {
	select {
	case item := <-q.ready:
		return item, false
	case <-q.shut:
		return "", true
	}
}

func (q *oneAtATime) Done(string) {
	select {
	case q.done <- struct{}{}:
	default:
	}
}

func (q *oneAtATime) Len() int                       { return len(q.ready) }
func (q *oneAtATime) ShutDown()                      { q.once.Do(func() { close(q.shut) }) }
func (q *oneAtATime) ShutDownWithDrain()             { q.ShutDown() }
func (q *oneAtATime) ShuttingDown() bool             { return q.isShut() }
func (q *oneAtATime) AddAfter(string, time.Duration) {}
func (q *oneAtATime) AddRateLimited(string)          {}
func (q *oneAtATime) Forget(string)                  {}
func (q *oneAtATime) NumRequeues(string) int         { return 0 }

func (q *oneAtATime) isShut() bool {
	select {
	case <-q.shut:
		return true
	default:
		return false
	}
}
