package registry

import (
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/conversion"
	"k8s.io/apimachinery/pkg/runtime"
)

// converterFactory makes custom resource converters with
// apiextensions-apiserver's own (ConversionReview v1 and v1beta1 to the
// CRD's webhook, by URL or by Service through the registry's resolver).
type converterFactory struct {
	once    sync.Once
	factory *conversion.CRConverterFactory
	err     error
}

// CustomResourceConverter converts crd's objects between its versions,
// calling its conversion webhook when it has one.
func (g *Registry) CustomResourceConverter(crd *apiextensionsv1.CustomResourceDefinition) (runtime.ObjectConvertor, error) {
	f := &g.converters
	f.once.Do(func() {
		f.factory, f.err = conversion.NewCRConverterFactory(g.ServiceResolver(), nil)
	})
	if f.err != nil {
		return nil, f.err
	}
	safe, _, err := f.factory.NewConverter(crd)
	return safe, err
}
