// How many extra cycle-walk steps pseudonymising and reconstructing detected values took: FF1
// applications beyond the first per value, inside a kind's scheme (walking down to its set of valid
// values) and in the engine (walking on when a pseudonym would read differently in its context).
// A process-wide counter, read by tests and benchmarks to check that walks stay as short as
// docs/detection.md says; nothing else depends on it.

export const walkSteps = { count: 0 };
