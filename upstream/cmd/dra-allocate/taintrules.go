package main

import (
	"context"
	"fmt"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/dynamic-resource-allocation/resourceslice/tracker"
)

// syncTimeout bounds how long the tracker may take to see every slice and rule (in-memory: ms).
const syncTimeout = 30 * time.Second

// withTaintRules returns the slices as the scheduler's allocator sees them: with the taint of
// every DeviceTaintRule that selects a device appended to that device's taints. It does not
// restate the matching: it runs upstream's own ResourceSlice tracker (the one kube-scheduler
// starts when DRADeviceTaintRules is on) over informers of a fake clientset that holds exactly
// these slices and rules, and reads its patched slices. With the gate off the scheduler's tracker
// is a plain slice lister: the slices are returned as they are. Order and names are kept (the
// tracker's store is keyed by name, so slices are handed to it under unique names).
func withTaintRules(ctx context.Context, slices []*resourceapi.ResourceSlice, rules []*resourceapi.DeviceTaintRule, enabled bool) ([]*resourceapi.ResourceSlice, error) {
	if !enabled || len(rules) == 0 || len(slices) == 0 {
		return slices, nil
	}
	client := fake.NewClientset()
	for i, s := range slices {
		c := s.DeepCopy()
		c.Name = fmt.Sprintf("slice-%d", i)
		if err := client.Tracker().Add(c); err != nil {
			return nil, fmt.Errorf("taint rules: slice %q: %w", s.Name, err)
		}
	}
	for i, r := range rules {
		c := r.DeepCopy()
		c.Name = fmt.Sprintf("rule-%d", i)
		if err := client.Tracker().Add(c); err != nil {
			return nil, fmt.Errorf("taint rules: rule %q: %w", r.Name, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	factory := informers.NewSharedInformerFactory(client, 0)
	t, err := tracker.StartTracker(ctx, tracker.Options{
		EnableDeviceTaintRules: true,
		SliceInformer:          factory.Resource().V1().ResourceSlices(),
		TaintInformer:          factory.Resource().V1().DeviceTaintRules(),
	})
	if err != nil {
		return nil, fmt.Errorf("taint rules: start tracker: %w", err)
	}
	factory.Start(ctx.Done())
	defer func() {
		cancel() // the informers stop with the context: cancel first, then wait for them
		t.Stop()
		factory.Shutdown()
	}()
	select { // the tracker's own signal (polling it, as WaitForCacheSync does, costs 100 ms a call)
	case <-t.HasSyncedChecker().Done():
	case <-ctx.Done():
		return nil, fmt.Errorf("taint rules: tracker did not sync in %s", syncTimeout)
	}
	patched, err := t.ListPatchedResourceSlices()
	if err != nil {
		return nil, fmt.Errorf("taint rules: %w", err)
	}
	byName := make(map[string]*resourceapi.ResourceSlice, len(patched))
	for _, p := range patched {
		byName[p.Name] = p
	}
	out := make([]*resourceapi.ResourceSlice, len(slices))
	for i, s := range slices {
		p, ok := byName[fmt.Sprintf("slice-%d", i)]
		if !ok {
			return nil, fmt.Errorf("taint rules: tracker lost slice %q", s.Name)
		}
		p = p.DeepCopy()
		p.Name = s.Name
		out[i] = p
	}
	return out, nil
}
