package main

import (
	"errors"
	"fmt"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	resourcedefaults "k8s.io/kubernetes/pkg/apis/resource/v1"
	"k8s.io/kubernetes/pkg/features" // also registers the Kubernetes gates in the default gate
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
)

// scenario is one simulate call: the cluster state, the input objects, an optional node, the gates.
type scenario struct {
	State        []object
	Objects      []object
	Node         string
	FeatureGates map[string]bool
}

// The output shape of `dra-webhook simulate -o json` (DESIGN.md).
type deviceResult struct {
	Request          string            `json:"request"`
	Driver           string            `json:"driver"`
	Pool             string            `json:"pool"`
	Device           string            `json:"device"`
	AdminAccess      bool              `json:"adminAccess,omitempty"`
	ConsumedCapacity map[string]string `json:"consumedCapacity,omitempty"`
}

type claimAllocation struct {
	Claim   string         `json:"claim"`
	Results []deviceResult `json:"results"`
}

type stats struct {
	AllocateSeconds float64 `json:"allocateSeconds"`
}

type result struct {
	ID          string            `json:"id,omitempty"`
	Feasible    bool              `json:"feasible"`
	Node        *string           `json:"node"`
	Allocations []claimAllocation `json:"allocations"`
	Reasons     []string          `json:"reasons"`
	Stats       stats             `json:"stats"`
	Error       string            `json:"error,omitempty"`
}

// state is the cluster state as the scheduler's informers would hold it.
type state struct {
	slices    []*resourceapi.ResourceSlice
	rules     []*resourceapi.DeviceTaintRule
	classes   map[string]*resourceapi.DeviceClass
	claims    []*resourceapi.ResourceClaim // allocated ones count as in use
	templates map[string]object            // namespace/name -> ResourceClaimTemplate
	nodes     map[string]*v1.Node
}

func simulate(sc scenario, limit time.Duration) (*result, error) {
	gate := utilfeature.DefaultMutableFeatureGate.DeepCopy()
	if err := gate.SetFromMap(sc.FeatureGates); err != nil {
		return nil, fmt.Errorf("feature gates: %w", err)
	}
	// As every component at start-up: refuse a gate whose dependencies are off.
	if errs := gate.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("feature gates: %v", errs)
	}
	// The scheduler's own translation: gates -> scheduler features -> allocator features.
	fts := feature.NewSchedulerFeaturesFromGates(gate)
	allocFeatures := dynamicresources.AllocatorFeatures(fts)

	st, err := buildState(sc.State)
	if err != nil {
		return nil, err
	}
	inputs := sc.Objects
	claims, notes, err := collectClaims(inputs, st)
	if err != nil {
		return nil, err
	}
	res := &result{Allocations: []claimAllocation{}, Reasons: append([]string{}, notes...)}
	if len(claims) == 0 {
		if len(res.Reasons) == 0 {
			res.Reasons = append(res.Reasons, "no claims to allocate")
		}
		return res, nil
	}

	var pending, fixed []*resourceapi.ResourceClaim
	for _, c := range claims {
		if c.Status.Allocation != nil {
			fixed = append(fixed, c)
		} else {
			pending = append(pending, c)
		}
	}
	// The scheduler's claim tracker knows each claim once: an allocated input claim that is also
	// in the state (a PodGroup's claim found there) must not count its devices and consumed
	// capacity twice.
	inUse := append([]*resourceapi.ResourceClaim{}, st.claims...)
	inState := sets.New[string]()
	for _, c := range st.claims {
		inState.Insert(label(c))
	}
	for _, c := range fixed {
		if !inState.Has(label(c)) {
			inUse = append(inUse, c)
		}
	}
	allocated := allocatedState(inUse, fts.EnableDRAConsumableCapacity)

	ctx, cancel := withTimeout(limit)
	defer cancel()
	// As the scheduler's ResourceSlice tracker: DeviceTaintRules patched into the slices (gated).
	slices, err := withTaintRules(ctx, st.slices, st.rules, gate.Enabled(features.DRADeviceTaintRules))
	if err != nil {
		return nil, err
	}
	start := time.Now()
	defer func() { res.Stats.AllocateSeconds = time.Since(start).Seconds() }()

	// As the scheduler's plugin: one CEL cache with its features, one allocator for all nodes.
	celCache := cel.NewCache(10, cel.Features{
		EnableConsumableCapacity: fts.EnableDRAConsumableCapacity,
		EnableListTypeAttributes: fts.EnableDRAListTypeAttributes,
	})
	alloc, err := structured.NewAllocator(ctx, allocFeatures, allocated, classLister(st.classes), slices, celCache)
	if err != nil {
		res.Reasons = append(res.Reasons, err.Error())
		return res, nil
	}
	// As the scheduler's Filter: every node is tried (below 100 nodes it filters them all). The
	// first node in name order that fits is the answer; a fatal error on any node, before or
	// after it, aborts the whole attempt. Once a node fits, later nodes add no reasons.
	for _, node := range nodeOrder(st, sc.Node) {
		if why := fixedClaimsExclude(fixed, node); why != "" {
			if !res.Feasible {
				res.Reasons = append(res.Reasons, node.Name+": "+why)
			}
			continue
		}
		if len(pending) == 0 {
			if !res.Feasible {
				res.Feasible, res.Node = true, &node.Name
			}
			continue
		}
		results, err := alloc.Allocate(ctx, node, pending)
		if err != nil {
			if ctx.Err() != nil {
				if !res.Feasible {
					res.Reasons = append(res.Reasons, fmt.Sprintf("%s: %v", node.Name, errTimeout))
				}
				break
			}
			if errors.Is(err, structured.ErrFailedAllocationOnNode) {
				if !res.Feasible {
					res.Reasons = append(res.Reasons, node.Name+": "+err.Error())
				}
				continue // affects only this node
			}
			// A fatal error aborts the whole scheduling attempt, as in the scheduler.
			res.Feasible, res.Node, res.Allocations = false, nil, nil
			res.Reasons = append(res.Reasons, node.Name+": "+err.Error())
			break
		}
		if results == nil {
			if !res.Feasible {
				res.Reasons = append(res.Reasons, node.Name+": cannot allocate all claims")
			}
			continue
		}
		if !res.Feasible {
			res.Feasible, res.Node = true, &node.Name
			for i, c := range pending {
				res.Allocations = append(res.Allocations, claimAllocation{Claim: label(c), Results: deviceResults(results[i])})
			}
		}
	}
	if !res.Feasible {
		res.Allocations = []claimAllocation{}
		if len(res.Reasons) == 0 {
			res.Reasons = append(res.Reasons, "no node in the cluster state")
		}
	}
	return res, nil
}

func label(c *resourceapi.ResourceClaim) string {
	ns := c.Namespace
	if ns == "" {
		ns = "default"
	}
	return ns + "/" + c.Name
}

func deviceResults(a resourceapi.AllocationResult) []deviceResult {
	out := []deviceResult{}
	for _, r := range a.Devices.Results {
		d := deviceResult{Request: r.Request, Driver: r.Driver, Pool: r.Pool, Device: r.Device}
		if r.AdminAccess != nil && *r.AdminAccess {
			d.AdminAccess = true
		}
		if r.ConsumedCapacity != nil {
			d.ConsumedCapacity = map[string]string{}
			for k, q := range r.ConsumedCapacity {
				d.ConsumedCapacity[string(k)] = q.String()
			}
		}
		out = append(out, d)
	}
	return out
}

// allocatedState restates what the scheduler's claim tracker hands the allocator: devices of
// allocated claims are in use (admin-access results are not); with consumable capacity on, a
// result with a shareID is a share of its device plus the capacity it consumed.
func allocatedState(claims []*resourceapi.ResourceClaim, consumable bool) structured.AllocatedState {
	s := structured.AllocatedState{
		AllocatedDevices:         sets.New[structured.DeviceID](),
		AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
		AggregatedCapacity:       structured.NewConsumedCapacityCollection(),
	}
	for _, c := range claims {
		if c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			if r.AdminAccess != nil && *r.AdminAccess {
				continue
			}
			id := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
			if consumable && r.ShareID != nil {
				s.AllocatedSharedDeviceIDs.Insert(structured.MakeSharedDeviceID(id, r.ShareID))
				if r.ConsumedCapacity != nil {
					s.AggregatedCapacity.Insert(structured.NewDeviceConsumedCapacity(id, r.ConsumedCapacity))
				}
				continue
			}
			s.AllocatedDevices.Insert(id)
		}
	}
	return s
}

// fixedClaimsExclude says why a node cannot host claims that are already allocated elsewhere.
func fixedClaimsExclude(fixed []*resourceapi.ResourceClaim, node *v1.Node) string {
	for _, c := range fixed {
		sel := c.Status.Allocation.NodeSelector
		if sel == nil {
			continue
		}
		ns, err := nodeaffinity.NewNodeSelector(sel)
		if err != nil {
			return fmt.Sprintf("claim %s: allocation node selector: %v", label(c), err)
		}
		if !ns.Match(node) {
			return fmt.Sprintf("claim %s is allocated for other nodes", label(c))
		}
	}
	return ""
}

// nodeOrder is simulate's order: every Node object and every node a slice or device names, by name.
func nodeOrder(st *state, only string) []*v1.Node {
	known := map[string]*v1.Node{}
	for name, n := range st.nodes {
		known[name] = n
	}
	add := func(name *string) {
		if name != nil && *name != "" && known[*name] == nil {
			known[*name] = &v1.Node{}
			known[*name].Name = *name
		}
	}
	for _, s := range st.slices {
		add(s.Spec.NodeName)
		for i := range s.Spec.Devices {
			add(s.Spec.Devices[i].NodeName)
		}
	}
	if only != "" {
		add(&only)
		return []*v1.Node{known[only]}
	}
	names := make([]string, 0, len(known))
	for name := range known {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make([]*v1.Node, 0, len(names))
	for _, name := range names {
		out = append(out, known[name])
	}
	return out
}

func buildState(objs []object) (*state, error) {
	st := &state{classes: map[string]*resourceapi.DeviceClass{}, templates: map[string]object{}, nodes: map[string]*v1.Node{}}
	for _, o := range objs {
		kind, _ := o["kind"].(string)
		switch kind {
		case "ResourceSlice":
			s := &resourceapi.ResourceSlice{}
			if err := convert(o, s); err != nil {
				return nil, err
			}
			resourcedefaults.SetObjectDefaults_ResourceSlice(s)
			st.slices = append(st.slices, s)
		case "DeviceTaintRule":
			r := &resourceapi.DeviceTaintRule{}
			if err := convert(o, r); err != nil {
				return nil, err
			}
			st.rules = append(st.rules, r)
		case "DeviceClass":
			c := &resourceapi.DeviceClass{}
			if err := convert(o, c); err != nil {
				return nil, err
			}
			st.classes[c.Name] = c
		case "ResourceClaim":
			c, err := toClaim(o)
			if err != nil {
				return nil, err
			}
			st.claims = append(st.claims, c)
		case "ResourceClaimTemplate":
			st.templates[key(o)] = o
		case "Node":
			n := &v1.Node{}
			if err := convert(o, n); err != nil {
				return nil, err
			}
			st.nodes[n.Name] = n
		}
	}
	return st, nil
}

func convert(o object, into interface{}) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o, into); err != nil {
		return fmt.Errorf("%v %q: %w", o["kind"], name(o), err)
	}
	return nil
}

func toClaim(o object) (*resourceapi.ResourceClaim, error) {
	c := &resourceapi.ResourceClaim{}
	if err := convert(o, c); err != nil {
		return nil, err
	}
	// The apiserver's defaults (allocationMode, count, toleration operator) as stored objects have them.
	resourcedefaults.SetObjectDefaults_ResourceClaim(c)
	if c.Namespace == "" {
		c.Namespace = "default"
	}
	if c.UID == "" {
		c.UID = types.UID("uid-" + c.Namespace + "-" + c.Name)
	}
	return c, nil
}

// claimFromTemplate is what the resourceclaim controller would create: the template's spec.
func claimFromTemplate(tpl object, claimName string) (*resourceapi.ResourceClaim, error) {
	t := &resourceapi.ResourceClaimTemplate{}
	if err := convert(tpl, t); err != nil {
		return nil, err
	}
	ns := t.Namespace
	if ns == "" {
		ns = "default"
	}
	if claimName == "" {
		claimName = t.Name + "-claim"
	}
	c := &resourceapi.ResourceClaim{Spec: *t.Spec.Spec.DeepCopy()}
	c.Name, c.Namespace = claimName, ns
	resourcedefaults.SetObjectDefaults_ResourceClaim(c)
	c.UID = types.UID("uid-" + ns + "-" + claimName)
	return c, nil
}

// collectClaims returns the claims the inputs ask for, in input order, as simulate does: claims
// as they are, a template's claim, or a PodGroup's claims (looked up in the inputs, then the state).
func collectClaims(inputs []object, st *state) ([]*resourceapi.ResourceClaim, []string, error) {
	var podGroups []object
	for _, o := range inputs {
		switch kind, _ := o["kind"].(string); kind {
		case "ResourceClaim", "ResourceClaimTemplate":
		case "PodGroup":
			podGroups = append(podGroups, o)
		default:
			return nil, nil, fmt.Errorf("unsupported kind %q: simulate takes ResourceClaim, ResourceClaimTemplate, PodGroup", kind)
		}
	}
	if len(podGroups) > 1 {
		return nil, nil, errors.New("simulate takes at most one PodGroup")
	}
	if len(podGroups) == 1 {
		return podGroupClaims(podGroups[0], inputs, st)
	}
	var claims []*resourceapi.ResourceClaim
	for _, o := range inputs {
		var c *resourceapi.ResourceClaim
		var err error
		if o["kind"] == "ResourceClaim" {
			c, err = toClaim(o)
		} else {
			c, err = claimFromTemplate(o, "")
		}
		if err != nil {
			return nil, nil, err
		}
		claims = append(claims, c)
	}
	return claims, nil, nil
}

func podGroupClaims(pg object, inputs []object, st *state) ([]*resourceapi.ResourceClaim, []string, error) {
	meta, _ := pg["metadata"].(map[string]interface{})
	ns, _ := meta["namespace"].(string)
	if ns == "" {
		ns = "default"
	}
	pgName, _ := meta["name"].(string)
	if pgName == "" {
		pgName = "podgroup"
	}
	find := func(kind, n string) object {
		for _, o := range inputs {
			if o["kind"] == kind && name(o) == n && namespace(o) == ns {
				return o
			}
		}
		if kind == "ResourceClaimTemplate" {
			return st.templates[ns+"/"+n]
		}
		for _, c := range st.claims {
			if c.Name == n && c.Namespace == ns {
				u, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
				return u
			}
		}
		return nil
	}
	spec, _ := pg["spec"].(map[string]interface{})
	entries, _ := spec["resourceClaims"].([]interface{})
	var claims []*resourceapi.ResourceClaim
	var notes []string
	for i, e := range entries {
		entry, _ := e.(map[string]interface{})
		claimName, _ := entry["resourceClaimName"].(string)
		tplName, _ := entry["resourceClaimTemplateName"].(string)
		switch {
		case claimName != "":
			o := find("ResourceClaim", claimName)
			if o == nil {
				notes = append(notes, fmt.Sprintf("claim %s/%s not found", ns, claimName))
				continue
			}
			c, err := toClaim(o)
			if err != nil {
				return nil, nil, err
			}
			claims = append(claims, c)
		case tplName != "":
			o := find("ResourceClaimTemplate", tplName)
			if o == nil {
				notes = append(notes, fmt.Sprintf("template %s/%s not found", ns, tplName))
				continue
			}
			entryName, _ := entry["name"].(string)
			if entryName == "" {
				entryName = fmt.Sprint(i)
			}
			c, err := claimFromTemplate(o, pgName+"-"+entryName)
			if err != nil {
				return nil, nil, err
			}
			claims = append(claims, c)
		}
	}
	return claims, notes, nil
}

func name(o object) string {
	meta, _ := o["metadata"].(map[string]interface{})
	n, _ := meta["name"].(string)
	return n
}

func namespace(o object) string {
	meta, _ := o["metadata"].(map[string]interface{})
	ns, _ := meta["namespace"].(string)
	if ns == "" {
		return "default"
	}
	return ns
}

func key(o object) string { return namespace(o) + "/" + name(o) }

// classLister serves DeviceClasses the way the scheduler's lister does (NotFound when missing).
type classLister map[string]*resourceapi.DeviceClass

func (l classLister) List() ([]*resourceapi.DeviceClass, error) {
	out := make([]*resourceapi.DeviceClass, 0, len(l))
	for _, c := range l {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (l classLister) Get(name string) (*resourceapi.DeviceClass, error) {
	if c, ok := l[name]; ok {
		return c, nil
	}
	return nil, apierrors.NewNotFound(resourceapi.Resource("deviceclasses"), name)
}

var _ structured.DeviceClassLister = classLister(nil)

