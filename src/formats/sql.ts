// The SQL data type's public face: the codec, its flattener and the dialect list.

export { sqlCodec, protectSql } from './sql-codec.ts';
export { flattenSql } from './sql-flatten.ts';
export { SQL_DIALECTS, sqlDialect, type SqlDialectName } from './sql-dialects.ts';
export { DEFAULT_SQL_LIMITS, type SqlLimits } from './sql-script.ts';
