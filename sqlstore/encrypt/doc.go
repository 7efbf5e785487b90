// Package encrypt encrypts stored values at rest the way kube-apiserver
// does, from the same --encryption-provider-config file
// (apiserver.config.k8s.io/v1 EncryptionConfiguration): aesgcm, aescbc,
// secretbox and identity providers, several keys per provider, the first
// provider and key used for writes and every one tried for reads, with
// kube's value prefixes (k8s:enc:aesgcm:v1:<key>:…). aesgcm binds a value
// to Tabula's own key for the object (resource/namespace/name, where
// kube uses its etcd key), so such values do not move between the two.
package encrypt
