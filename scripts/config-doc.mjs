export function configurationDoc() { return 'TODO\n'; }
