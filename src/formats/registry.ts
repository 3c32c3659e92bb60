// Which codec serves which data type. The engine asks here; adding a data type is one line per table.

import type { DataSetType } from '../core/types.ts';
import type { DocumentCodec, Flattener } from './codec.ts';
import { createJsonCodec } from './json/codec.ts';
import { createXmlCodec } from './xml/codec.ts';
import { sqlCodec } from './sql/codec.ts';
import { listCodec } from './list/codec.ts';
import { createJsonFlattener } from './json/flatten.ts';
import { createXmlFlattener } from './xml/flatten.ts';
import { flattenSql } from './sql/flatten.ts';

export interface CodecLimits {
  readonly maxDepth: number;
}

export interface Codecs {
  readonly documents: Readonly<Record<DataSetType, DocumentCodec>>;
  /** Flatteners for /file/protect; LIST needs none (it is already a table). */
  readonly flatteners: Readonly<Record<Exclude<DataSetType, 'LIST'>, Flattener>>;
}

export function createCodecs(limits: CodecLimits): Codecs {
  return {
    documents: {
      JSON: createJsonCodec(limits),
      XML: createXmlCodec({ maxDepth: limits.maxDepth }),
      SQL: sqlCodec,
      LIST: listCodec,
    },
    flatteners: {
      JSON: createJsonFlattener({ maxDepth: limits.maxDepth }),
      XML: createXmlFlattener({ maxDepth: limits.maxDepth }),
      SQL: flattenSql,
    },
  };
}
