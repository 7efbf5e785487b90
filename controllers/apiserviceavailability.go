package controllers

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corev1listers "k8s.io/client-go/listers/core/v1"
	discoveryv1listers "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiregistrationclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset/typed/apiregistration/v1"
	apiregistrationlisters "k8s.io/kube-aggregator/pkg/client/listers/apiregistration/v1"
	localavailability "k8s.io/kube-aggregator/pkg/controllers/status/local"
	availabilitymetrics "k8s.io/kube-aggregator/pkg/controllers/status/metrics"
	"k8s.io/kube-aggregator/pkg/controllers/status/remote"

	"github.com/tabula-dev/tabula/registry"
)

// kube-aggregator's availability controllers, kube's own. A local
// APIService is Available (True, Local) whatever is written to it. One
// that names a Service: the Service, its port and a ready endpoint must
// exist and the server must answer its discovery path (with the front
// proxy's certificate, as system:kube-aggregator), or Available turns
// False with kube's reason (ServiceNotFound, ServicePortError,
// MissingEndpoints, FailedDiscoveryCheck); re-checked every 30 seconds.
// Every replica runs it, as every kube-apiserver does; they write only
// when the condition changes. Service and EndpointSlice caches are kept
// only once such an APIService exists.

func (m *Manager) apiServiceAvailabilityController(ctx context.Context) error {
	apiservices := registry.CachedInformer(m.api, apiregistrationv1.GroupName, "v1", "apiservices", apiregistrationlisters.NewAPIServiceLister)
	remoteSeen := make(chan struct{})
	var once sync.Once
	seen := func(obj any) {
		if s, ok := obj.(*apiregistrationv1.APIService); ok && s.Spec.Service != nil {
			once.Do(func() { close(remoteSeen) })
		}
	}
	if _, err := apiservices.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: seen, UpdateFunc: func(_, obj any) { seen(obj) },
	}); err != nil {
		return err
	}
	// Local APIServices (no Service) are always available: kube's local
	// controller, always running, puts their condition back.
	x := m.api.MustLookup(apiregistrationv1.GroupName, "v1", "apiservices")
	lc, err := localavailability.New(apiservices, apiServiceClient{x: x}, availabilitymetrics.New())
	if err != nil {
		return err
	}
	go lc.Run(1, ctx.Done())
	select {
	case <-ctx.Done():
		return nil
	case <-remoteSeen:
	}
	services := registry.CachedInformer(m.api, "", "v1", "services", corev1listers.NewServiceLister)
	slices := registry.CachedInformer(m.api, "discovery.k8s.io", "v1", "endpointslices", discoveryv1listers.NewEndpointSliceLister)
	var certKey func() ([]byte, []byte)
	if c := m.cfg.ProxyClientCert; c != nil {
		certKey = func() ([]byte, []byte) { return c.CertPEM, c.KeyPEM }
	}
	c, err := remote.New(apiservices, services, slices, apiServiceClient{x: x}, nil, certKey, m.api.CachedServiceResolver(), availabilitymetrics.New())
	if err != nil {
		return err
	}
	c.Run(1, ctx.Done())
	return nil
}

// apiServiceClient writes APIService status through the registry.
type apiServiceClient struct{ x *registry.Resource }

func (c apiServiceClient) APIServices() apiregistrationclient.APIServiceInterface {
	return apiServiceStatus{x: c.x}
}

type apiServiceStatus struct {
	apiregistrationclient.APIServiceInterface
	x *registry.Resource
}

// UpdateStatus writes s's status if its resourceVersion is still the
// stored one (409 otherwise), as a status PUT does.
func (c apiServiceStatus) UpdateStatus(ctx context.Context, s *apiregistrationv1.APIService, _ metav1.UpdateOptions) (*apiregistrationv1.APIService, error) {
	res, _, err := c.x.Update(ctx, "", s.Name, func(runtime.Object) (runtime.Object, error) {
		return s.DeepCopy(), nil
	}, registry.UpdateOptions{Subresource: "status", WriteOptions: registry.WriteOptions{Manager: registry.ManagerAPIServer}})
	if err != nil {
		return nil, err
	}
	out, ok := res.Obj.(*apiregistrationv1.APIService)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("apiservice is a %T", res.Obj))
	}
	return out, nil
}
