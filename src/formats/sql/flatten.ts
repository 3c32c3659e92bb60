// Lays a (protected) SQL script out as one table for CSV: a row per inserted row and per UPDATE,
// columns named by the statements' columns, `_table` first when more than one table appears.

import { DpgError } from '../../core/errors.ts';
import type { CodecOptions, FlatTable, Flattener } from '../codec.ts';
import { literalValue } from './codec.ts';
import { sqlDialect } from './dialects.ts';
import { readSqlScript, type SqlScript, type ValueItem } from './script.ts';

interface FlatRow {
  readonly table: string;
  readonly cells: Map<string, string>;
}

export const flattenSql: Flattener = (protectedDocument: string | unknown, options: CodecOptions): FlatTable => {
  if (typeof protectedDocument !== 'string') throw new DpgError('MALFORMED_DATA_SET', 'SQL data set must be text');
  const script = readSqlScript(protectedDocument, sqlDialect(options.sqlDialect));
  const rows: FlatRow[] = [];
  const columns: string[] = [];
  const seen = new Set<string>();
  const tables = new Set<string>();
  const addColumn = (name: string): void => {
    if (!seen.has(name)) {
      seen.add(name);
      columns.push(name);
    }
  };

  for (const st of script.statements) {
    if (st.insert !== undefined && st.insert.columns.length > 0) {
      const insert = st.insert;
      for (const row of insert.rows) {
        const cells = new Map<string, string>();
        insert.columns.forEach((column, c) => {
          addColumn(column.name);
          if (row[c] !== undefined) cells.set(column.name, cellText(script, row[c]));
        });
        tables.add(insert.table);
        rows.push({ table: insert.table, cells });
      }
    }
    if (st.type === 'update') {
      for (const list of st.assignmentLists) {
        const cells = new Map<string, string>();
        for (const assignment of list.items) {
          addColumn(assignment.column.name);
          cells.set(assignment.column.name, cellText(script, assignment.item));
        }
        const table = list.table ?? st.defaultTable ?? '';
        tables.add(table);
        rows.push({ table, cells });
      }
    }
  }

  const withTable = tables.size > 1;
  const header = withTable ? ['_table', ...columns] : columns;
  return {
    columns: header,
    rows: rows.map((row) => {
      const cells = columns.map((name) => row.cells.get(name) ?? '');
      return withTable ? [row.table, ...cells] : cells;
    }),
  };
};

/** A cell: a string literal's value (NULL as empty); numbers and expressions as written. */
function cellText(script: SqlScript, item: ValueItem): string {
  if (item.literal === undefined || item.literal.kind === 'number') return script.sql.slice(item.start, item.end);
  const value = literalValue(script, item.literal);
  return value === null ? '' : String(value);
}
