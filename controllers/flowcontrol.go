package controllers

import (
	"context"
	"fmt"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	flowcontrolbootstrap "k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	flowcontrolv1client "k8s.io/client-go/kubernetes/typed/flowcontrol/v1"
	flowcontrolv1listers "k8s.io/client-go/listers/flowcontrol/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/pkg/registry/flowcontrol/ensurer"
)

// The priority-and-fairness-config-producer of every kube-apiserver,
// with kube's own ensurer: the mandatory FlowSchemas and
// PriorityLevelConfigurations (exempt, catch-all) are kept as kube 1.35
// ships them, the suggested ones created and kept current while their
// apf.kubernetes.io/autoupdate-spec annotation says so, and bootstrap
// objects kube no longer ships removed. It runs on every replica, as on
// every kube-apiserver: the writes are idempotent and lose nothing when
// two replicas race (a conflict is retried on the next pass).

// flowcontrolBootstrapInterval is how often the configuration is checked
// again (kube-apiserver's minute).
const flowcontrolBootstrapInterval = time.Minute

func (m *Manager) flowcontrolBootstrapController(ctx context.Context) error {
	inf := m.api.FlowcontrolInformers().Flowcontrol().V1()
	fs, plc := inf.FlowSchemas(), inf.PriorityLevelConfigurations()
	if !cache.WaitForCacheSync(ctx.Done(), fs.Informer().HasSynced, plc.Informer().HasSynced) {
		return ctx.Err()
	}
	client := m.api.FlowcontrolClient()
	for {
		if err := ensureFlowcontrol(ctx, client, fs.Lister(), plc.Lister()); err != nil {
			return err
		}
		m.flowcontrolReady.Store(true)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(flowcontrolBootstrapInterval):
		}
	}
}

// ensureFlowcontrol is one pass of kube's ensurer, in its order:
// suggested, then mandatory, then removal of what kube no longer ships.
func ensureFlowcontrol(ctx context.Context, c flowcontrolv1client.FlowcontrolV1Interface, fsl flowcontrolv1listers.FlowSchemaLister, plcl flowcontrolv1listers.PriorityLevelConfigurationLister) error {
	plcOps := ensurer.NewPriorityLevelConfigurationOps(c.PriorityLevelConfigurations(), plcl)
	fsOps := ensurer.NewFlowSchemaOps(c.FlowSchemas(), fsl)
	if err := ensurer.EnsureConfigurations(ctx, plcOps, flowcontrolbootstrap.SuggestedPriorityLevelConfigurations, ensurer.NewSuggestedEnsureStrategy[*flowcontrolv1.PriorityLevelConfiguration]()); err != nil {
		return fmt.Errorf("suggested priority levels: %w", err)
	}
	if err := ensurer.EnsureConfigurations(ctx, fsOps, flowcontrolbootstrap.SuggestedFlowSchemas, ensurer.NewSuggestedEnsureStrategy[*flowcontrolv1.FlowSchema]()); err != nil {
		return fmt.Errorf("suggested flow schemas: %w", err)
	}
	if err := ensurer.EnsureConfigurations(ctx, plcOps, flowcontrolbootstrap.MandatoryPriorityLevelConfigurations, ensurer.NewMandatoryEnsureStrategy[*flowcontrolv1.PriorityLevelConfiguration]()); err != nil {
		return fmt.Errorf("mandatory priority levels: %w", err)
	}
	if err := ensurer.EnsureConfigurations(ctx, fsOps, flowcontrolbootstrap.MandatoryFlowSchemas, ensurer.NewMandatoryEnsureStrategy[*flowcontrolv1.FlowSchema]()); err != nil {
		return fmt.Errorf("mandatory flow schemas: %w", err)
	}
	if err := ensurer.RemoveUnwantedObjects(ctx, fsOps, append(append([]*flowcontrolv1.FlowSchema(nil), flowcontrolbootstrap.MandatoryFlowSchemas...), flowcontrolbootstrap.SuggestedFlowSchemas...)); err != nil {
		return fmt.Errorf("removed flow schemas: %w", err)
	}
	return ensurer.RemoveUnwantedObjects(ctx, plcOps, append(append([]*flowcontrolv1.PriorityLevelConfiguration(nil), flowcontrolbootstrap.MandatoryPriorityLevelConfigurations...), flowcontrolbootstrap.SuggestedPriorityLevelConfigurations...))
}
