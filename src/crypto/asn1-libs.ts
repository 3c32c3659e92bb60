// The ASN.1 schema libraries x509.ts builds certificates with, in a module of their own so the build
// puts them in a chunk of their own (~270 KiB): loaded by `loadX509()` only where certificates are
// built or read — a proxy that may intercept TLS, `dpg ca bundle`, the webhook's certificates —
// never by a sidecar start that has nothing to intercept.

export * as x509 from '@peculiar/asn1-x509';
export * as schema from '@peculiar/asn1-schema';
