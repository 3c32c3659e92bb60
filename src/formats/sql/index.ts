// The SQL data type's public face: the codec, its flattener and the dialect list.

export { sqlCodec, protectSql } from './codec.ts';
export { flattenSql } from './flatten.ts';
export { SQL_DIALECTS, sqlDialect, type SqlDialectName } from './dialects.ts';
export { DEFAULT_SQL_LIMITS, type SqlLimits } from './script.ts';
