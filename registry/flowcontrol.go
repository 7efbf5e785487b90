package registry

import (
	"context"
	"encoding/json"
	"fmt"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	flowcontrolv1apply "k8s.io/client-go/applyconfigurations/flowcontrol/v1"
	"k8s.io/client-go/informers"
	flowcontrolinformers "k8s.io/client-go/informers/flowcontrol"
	flowcontrolv1informers "k8s.io/client-go/informers/flowcontrol/v1"
	flowcontrolv1client "k8s.io/client-go/kubernetes/typed/flowcontrol/v1"
	flowcontrolv1listers "k8s.io/client-go/listers/flowcontrol/v1"
)

// kube's API Priority and Fairness (its configuration controller and its
// bootstrap ensurer) reads FlowSchemas and PriorityLevelConfigurations
// from informers and writes them through a typed client: here the
// informers are this replica's watch-fed caches, so a change made on any
// replica reaches every replica's flow control, and the client writes
// through the registry (admission and field tracking included).

const flowcontrolGroup = "flowcontrol.apiserver.k8s.io"

// FlowcontrolInformers gives the FlowSchema and PriorityLevelConfiguration
// caches as an informer factory; nothing else may be asked of it.
func (g *Registry) FlowcontrolInformers() informers.SharedInformerFactory {
	return flowcontrolInformers{g: g}
}

type flowcontrolInformers struct {
	informers.SharedInformerFactory // only Flowcontrol is given
	g                               *Registry
}

func (f flowcontrolInformers) Flowcontrol() flowcontrolinformers.Interface {
	return flowcontrolGroupInformers{g: f.g}
}

type flowcontrolGroupInformers struct {
	flowcontrolinformers.Interface
	g *Registry
}

func (f flowcontrolGroupInformers) V1() flowcontrolv1informers.Interface {
	return flowcontrolV1Informers{g: f.g}
}

type flowcontrolV1Informers struct {
	flowcontrolv1informers.Interface
	g *Registry
}

func (f flowcontrolV1Informers) FlowSchemas() flowcontrolv1informers.FlowSchemaInformer {
	return cached(f.g, flowcontrolGroup, "flowschemas", flowcontrolv1listers.NewFlowSchemaLister)
}

func (f flowcontrolV1Informers) PriorityLevelConfigurations() flowcontrolv1informers.PriorityLevelConfigurationInformer {
	return cached(f.g, flowcontrolGroup, "prioritylevelconfigurations", flowcontrolv1listers.NewPriorityLevelConfigurationLister)
}

// FlowcontrolClient is a flowcontrol.apiserver.k8s.io/v1 client over the
// registry: create, update, delete and get of both kinds, and apply of a
// FlowSchema's status (what kube's flow control writes).
func (g *Registry) FlowcontrolClient() flowcontrolv1client.FlowcontrolV1Interface {
	return flowcontrolClient{g: g}
}

type flowcontrolClient struct {
	flowcontrolv1client.FlowcontrolV1Interface
	g *Registry
}

func (c flowcontrolClient) FlowSchemas() flowcontrolv1client.FlowSchemaInterface {
	x := c.g.MustLookup(flowcontrolGroup, "v1", "flowschemas")
	return flowSchemas{w: typedWrites[*flowcontrolv1.FlowSchema]{x}}
}

func (c flowcontrolClient) PriorityLevelConfigurations() flowcontrolv1client.PriorityLevelConfigurationInterface {
	x := c.g.MustLookup(flowcontrolGroup, "v1", "prioritylevelconfigurations")
	return priorityLevels{w: typedWrites[*flowcontrolv1.PriorityLevelConfiguration]{x}}
}

// flowSchemas and priorityLevels give create, update, delete and get
// (and a FlowSchema's status apply); the typed interfaces' other methods
// are not given (nil).
type flowSchemas struct {
	flowcontrolv1client.FlowSchemaInterface
	w typedWrites[*flowcontrolv1.FlowSchema]
}

func (c flowSchemas) Create(ctx context.Context, o *flowcontrolv1.FlowSchema, opts metav1.CreateOptions) (*flowcontrolv1.FlowSchema, error) {
	return c.w.create(ctx, o, opts)
}
func (c flowSchemas) Update(ctx context.Context, o *flowcontrolv1.FlowSchema, opts metav1.UpdateOptions) (*flowcontrolv1.FlowSchema, error) {
	return c.w.update(ctx, o, opts)
}
func (c flowSchemas) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return c.w.delete(ctx, name, opts)
}
func (c flowSchemas) Get(ctx context.Context, name string, _ metav1.GetOptions) (*flowcontrolv1.FlowSchema, error) {
	return getAs[*flowcontrolv1.FlowSchema](ctx, c.w.x, "", name)
}

func (c flowSchemas) ApplyStatus(ctx context.Context, cfg *flowcontrolv1apply.FlowSchemaApplyConfiguration, opts metav1.ApplyOptions) (*flowcontrolv1.FlowSchema, error) {
	if cfg == nil || cfg.Name == nil {
		return nil, fmt.Errorf("apply: a FlowSchema without a name")
	}
	patch, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	res, _, err := c.w.x.Apply(ctx, "", *cfg.Name, patch, ApplyOptions{Subresource: "status", Force: opts.Force,
		WriteOptions: WriteOptions{Manager: opts.FieldManager}})
	if err != nil {
		return nil, err
	}
	return as[*flowcontrolv1.FlowSchema](res.Obj)
}

type priorityLevels struct {
	flowcontrolv1client.PriorityLevelConfigurationInterface
	w typedWrites[*flowcontrolv1.PriorityLevelConfiguration]
}

func (c priorityLevels) Create(ctx context.Context, o *flowcontrolv1.PriorityLevelConfiguration, opts metav1.CreateOptions) (*flowcontrolv1.PriorityLevelConfiguration, error) {
	return c.w.create(ctx, o, opts)
}
func (c priorityLevels) Update(ctx context.Context, o *flowcontrolv1.PriorityLevelConfiguration, opts metav1.UpdateOptions) (*flowcontrolv1.PriorityLevelConfiguration, error) {
	return c.w.update(ctx, o, opts)
}
func (c priorityLevels) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return c.w.delete(ctx, name, opts)
}
func (c priorityLevels) Get(ctx context.Context, name string, _ metav1.GetOptions) (*flowcontrolv1.PriorityLevelConfiguration, error) {
	return getAs[*flowcontrolv1.PriorityLevelConfiguration](ctx, c.w.x, "", name)
}

// FlowSchemaInterface and PriorityLevelConfigurationInterface, narrowed to
// what kube's flow control and ensurer call.
var (
	_ flowcontrolv1client.FlowSchemaInterface                 = flowSchemas{}
	_ flowcontrolv1client.PriorityLevelConfigurationInterface = priorityLevels{}
)

// typedWrites are a cluster-scoped kind's writes through the registry, as
// a typed client makes them; T is its Go type.
type typedWrites[T runtime.Object] struct {
	x *Resource
}

func (c typedWrites[T]) create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error) {
	res, err := c.x.Create(ctx, "", obj, WriteOptions{DryRun: len(opts.DryRun) > 0, Manager: opts.FieldManager})
	if err != nil {
		var zero T
		return zero, err
	}
	return as[T](res.Obj)
}

func (c typedWrites[T]) update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	acc, err := meta.Accessor(obj)
	if err != nil {
		var zero T
		return zero, err
	}
	res, _, err := c.x.Update(ctx, "", acc.GetName(), func(runtime.Object) (runtime.Object, error) { return obj, nil },
		UpdateOptions{WriteOptions: WriteOptions{DryRun: len(opts.DryRun) > 0, Manager: opts.FieldManager}})
	if err != nil {
		var zero T
		return zero, err
	}
	return as[T](res.Obj)
}

func (c typedWrites[T]) delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	_, err := c.x.Delete(ctx, "", name, &opts)
	return err
}

// as is obj as its Go type T.
func as[T runtime.Object](obj runtime.Object) (T, error) {
	t, ok := obj.(T)
	if !ok {
		var zero T
		return zero, fmt.Errorf("registry: a %T, not a %T", obj, zero)
	}
	return t, nil
}
