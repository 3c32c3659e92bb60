// The Kubernetes door's public surface: manual injection, the admission webhook and its
// certificates. Imported by the `dpg inject` and `dpg webhook` commands only (lazily: `dpg serve`
// never loads it), and it imports no other door.

export { inject, uninject, type InjectorOptions, type InjectionResult, type JsonObject } from './inject.ts';
export { injectStream, injectObject, checkStream, type ManualResult, type ObjectReport } from './manual.ts';
export { injectorOptions, packageVersion, type InjectorFlags } from './options.ts';
export { ANNOTATIONS, BUILT_IN_DEFAULTS } from './settings.ts';
