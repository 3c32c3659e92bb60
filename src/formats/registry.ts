// Which codec serves which data type. The engine asks here; adding a data type is one line.

import { DpgError } from '../core/errors.ts';
import type { DataSetType } from '../core/types.ts';
import type { DocumentCodec, Flattener } from './codec.ts';
import { createJsonCodec } from './json.ts';
import { flattenJson } from './flatten-json.ts';

export interface CodecLimits {
  readonly maxDepth: number;
}

export interface Codecs {
  readonly documents: Readonly<Record<DataSetType, DocumentCodec>>;
  /** Flatteners for /file/protect; LIST needs none (it is already a table). */
  readonly flatteners: Readonly<Record<Exclude<DataSetType, 'LIST'>, Flattener>>;
}

function notYet(type: DataSetType): DocumentCodec {
  return {
    type,
    protect() {
      throw new DpgError('UNSUPPORTED_DATA_SET_TYPE', `${type} data sets are not supported yet`);
    },
  };
}

export function createCodecs(limits: CodecLimits): Codecs {
  return {
    documents: { JSON: createJsonCodec(limits), XML: notYet('XML'), SQL: notYet('SQL'), LIST: notYet('LIST') },
    flatteners: {
      JSON: flattenJson,
      XML: () => {
        throw new DpgError('UNSUPPORTED_DATA_SET_TYPE', 'XML data sets are not supported yet');
      },
      SQL: () => {
        throw new DpgError('UNSUPPORTED_DATA_SET_TYPE', 'SQL data sets are not supported yet');
      },
    },
  };
}
