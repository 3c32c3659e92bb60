// Certificate building moved inward to src/crypto/x509.ts (one module for the proxy, the webhook
// and the tests). Kept as a re-export for the importers under test/proxy/ until they point there.
export * from '../crypto/x509.ts';
