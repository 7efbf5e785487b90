package registry

import (
	"context"
	"sync"

	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/node"
)

// nodeGraphState is the node authorizer's graph and the caches feeding it.
type nodeGraphState struct {
	once   sync.Once
	graph  *node.Graph
	caches []*Cache
}

// NodeGraph returns kube's node authorizer graph (which pods, volumes,
// claims, secrets and config maps each node may reach), fed by watches of
// Pods, PersistentVolumes, VolumeAttachments, ResourceSlices and
// PodCertificateRequests that keep no objects; made on first use (before
// RunCaches). Like kube-apiserver's graph populator it ignores Pods not
// bound to a node.
func (g *Registry) NodeGraph() *node.Graph {
	g.nodes.once.Do(func() {
		gr := node.NewGraph()
		g.nodes.graph = gr
		add := func(group, version, resource string, h CacheHandler) {
			if _, ok := g.types.Lookup(group, version, resource); ok {
				g.nodes.caches = append(g.nodes.caches, g.Cache(group, version, resource, false, h))
			}
		}
		add("", "v1", "pods", CacheHandler{
			Set: func(obj runtime.Object) {
				if pod := obj.(*corev1.Pod); pod.Spec.NodeName != "" {
					gr.AddPod(pod)
				}
			},
			Delete: func(namespace, name string, _ runtime.Object) { gr.DeletePod(name, namespace) },
		})
		add("", "v1", "persistentvolumes", CacheHandler{
			Set:    func(obj runtime.Object) { gr.AddPV(obj.(*corev1.PersistentVolume)) },
			Delete: func(_, name string, _ runtime.Object) { gr.DeletePV(name) },
		})
		add("storage.k8s.io", "v1", "volumeattachments", CacheHandler{
			Set: func(obj runtime.Object) {
				va := obj.(*storagev1.VolumeAttachment)
				gr.AddVolumeAttachment(va.Name, va.Spec.NodeName)
			},
			Delete: func(_, name string, _ runtime.Object) { gr.DeleteVolumeAttachment(name) },
		})
		add("resource.k8s.io", "v1", "resourceslices", CacheHandler{
			Set: func(obj runtime.Object) {
				s := obj.(*resourcev1.ResourceSlice)
				nodeName := ""
				if s.Spec.NodeName != nil {
					nodeName = *s.Spec.NodeName
				}
				gr.AddResourceSlice(s.Name, nodeName)
			},
			Delete: func(_, name string, _ runtime.Object) { gr.DeleteResourceSlice(name) },
		})
		add("certificates.k8s.io", "v1beta1", "podcertificaterequests", CacheHandler{
			Set: func(obj runtime.Object) {
				gr.AddPodCertificateRequest(obj.(*certificatesv1beta1.PodCertificateRequest))
			},
			Delete: func(namespace, name string, obj runtime.Object) {
				pcr, _ := obj.(*certificatesv1beta1.PodCertificateRequest)
				if pcr == nil {
					pcr = &certificatesv1beta1.PodCertificateRequest{}
					pcr.Namespace, pcr.Name = namespace, name
				}
				gr.DeletePodCertificateRequest(pcr)
			},
		})
	})
	return g.nodes.graph
}

// WaitNodeGraph waits until the graph reflects every object it follows.
func (g *Registry) WaitNodeGraph(ctx context.Context) error {
	for _, c := range g.nodes.caches {
		if err := c.WaitSynced(ctx); err != nil {
			return err
		}
	}
	return nil
}
